// Multi-tenant safety on the local control plane (issue 16, docs/security.md): the operator runs
// under its ServiceAccount, and a namespace editor ("alice", a Role granting edit on
// TuningCampaigns in one namespace, acting through `kubectl --as=alice`) tries each escape:
//  - an LLM endpoint outside the administrator's allowlist: SpecValid=False naming the field
//    and no request reaches it;
//  - an unlabelled Secret as the LLM key: SpecValid=False naming the field, the value is never
//    sent anywhere;
//  - privileged and host-namespace trial pods: SpecValid=False naming the field, no Job;
// while a campaign against the allowlisted scripted OpenAI-compatible server runs and its
// proposals become trials (TrialRun spec.proposal.proposedBy = llm).
// Least privilege (issue 38): the operator's ServiceAccount can list, watch or get no Secret and
// patch no Node until someone grants it; a namespace administrator's Role for one named Secret
// (manifests/examples/llm-api-key-reader.yaml) lets a campaign use that key, still only with
// the opt-in label; and alice sees nothing beyond her own Role.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>

#include "tests/integration/reliability_harness.h"
#include "tests/llm/scripted_server.h"

namespace paratune::kube::testing {
namespace {

using llm::testing::ReceivedRequest;
using llm::testing::ScriptedReply;
using llm::testing::ScriptedServer;
using std::chrono::seconds;

constexpr char kVictimKey[] = "sk-victim-db-password-0123456789";
constexpr char kGrantedKey[] = "sk-granted-team-key-42";
constexpr char kOperatorSa[] = "system:serviceaccount:paratune-system:paratune-operator";

// Answers as the Analyst and the Strategist would, walking through configurations of the
// SimCampaign space that differ from its baseline.
ScriptedReply Answer(const ReceivedRequest& r, std::atomic<int>* strategist_calls) {
  if (r.body.find("You are the Strategist") == std::string::npos) {
    return ScriptedReply::Chat("1. Change AC from full to selective: recompute costs a third.");
  }
  static const char* kConfigs[] = {
      "TP: 2\nPP: 1\nMBS: 2\nAC: selective\nSEQUENCE_PARALLEL: true\n"
      "USE_DISTRIBUTED_OPTIMIZER: true\n",
      "TP: 2\nPP: 1\nMBS: 1\nAC: selective\nSEQUENCE_PARALLEL: true\n"
      "USE_DISTRIBUTED_OPTIMIZER: true\n",
      "TP: 4\nPP: 1\nMBS: 1\nAC: selective\nSEQUENCE_PARALLEL: true\n"
      "USE_DISTRIBUTED_OPTIMIZER: true\n"};
  const int i = strategist_calls->fetch_add(1) % 3;
  return ScriptedReply::Chat(kConfigs[i]);
}

Json SpecValid(KubeClient* c, const std::string& ns, const std::string& name) {
  auto tc = c->Get(resources::kTuningCampaigns, ns, name);
  if (!tc.ok()) return Json();
  for (const Json& cond : tc->value("status", Json::object()).value("conditions", Json::array())) {
    if (cond.value("type", "") == "SpecValid") return cond;
  }
  return Json();
}

class SecurityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster_ = LocalCluster::Get(&why_);
    if (cluster_ == nullptr) GTEST_FAIL() << "no local control plane: " << why_;
    ASSERT_TRUE(cluster_->InstallCrdsAndRbac().ok());
    admin_ = cluster_->Admin();
    ns_ = cluster_->NewNamespace("security");
    allowed_ = ScriptedServer::Start();
    other_ = ScriptedServer::Start();
    ASSERT_TRUE(allowed_ && other_);
    allowed_->SetHandler([this](const ReceivedRequest& r) { return Answer(r, &calls_); });
    other_->SetHandler([this](const ReceivedRequest& r) { return Answer(r, &calls_); });
    // alice may edit campaigns in ns_ and nothing else.
    ASSERT_EQ(
        cluster_->Kubectl("-n " + ns_ +
                          " create role campaign-editor --verb=get,list,watch,create,"
                          "update,patch,delete --resource=tuningcampaigns.tuning.paratune.dev"),
        0);
    ASSERT_EQ(
        cluster_->Kubectl("-n " + ns_ +
                          " create rolebinding alice-edits --role=campaign-editor --user=alice"),
        0);
    // A Secret alice may not read, which the operator could.
    Json secret = {{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"metadata", {{"name", "db-password"}}},
                   {"stringData", {{"apiKey", kVictimKey}}}};
    ASSERT_TRUE(admin_->Create(resources::kSecrets, ns_, secret).ok());
    op_ = std::make_unique<OperatorProcess>(
        cluster_,
        std::vector<std::string>{"--namespace", ns_, "--llm-allowed-endpoints",
                                 "http://127.0.0.1:" + std::to_string(allowed_->port()) + "/"},
        cluster_->dir() + "/" + ns_ + "-operator.log");
    ASSERT_TRUE(op_->Start());
  }
  void TearDown() override {
    if (admin_ != nullptr) (void)admin_->Delete(resources::kNamespaces, "", ns_);
  }

  // `kubectl --as=alice apply` of the campaign; its exit status.
  int ApplyAsAlice(const Json& campaign) {
    const std::string path = cluster_->dir() + "/" + ns_ + "-" + kube::NameOf(campaign) + ".json";
    std::ofstream(path) << campaign.dump();
    return cluster_->Kubectl("--as=alice -n " + ns_ + " apply -f " + path);
  }
  // Waits for SpecValid and returns its message when False ("" otherwise).
  std::string Refusal(const std::string& name) {
    Json cond;
    EXPECT_TRUE(
        WaitFor([&] { return !(cond = SpecValid(admin_, ns_, name)).is_null(); }, seconds(60)))
        << name << ": " << Describe(admin_, ns_, name) << "\noperator log: " << op_->log_path();
    if (cond.value("status", "") != "False") return "";
    return cond.value("message", "");
  }
  Json LlmCampaign(const std::string& name, const std::string& endpoint) {
    Json c = SimCampaign(name, 3, 1);
    c["spec"]["agents"] = {{"engine", "llm"}, {"llm", {{"endpoint", endpoint}, {"model", "m"}}}};
    return c;
  }

  std::string why_;
  LocalCluster* cluster_ = nullptr;
  KubeClient* admin_ = nullptr;
  std::string ns_;
  std::unique_ptr<ScriptedServer> allowed_, other_;
  std::atomic<int> calls_{0};
  std::unique_ptr<OperatorProcess> op_;
};

TEST_F(SecurityTest, NamespaceEditorCannotReachBeyondTheNamespaceThroughTheOperator) {
  // Not allowlisted: refused before any request.
  ASSERT_EQ(ApplyAsAlice(LlmCampaign("exfil", other_->endpoint())), 0);
  std::string why = Refusal("exfil");
  EXPECT_NE(why.find("spec.agents.llm.endpoint"), std::string::npos) << why;
  // Somebody else's Secret as the key, sent to an allowed endpoint: refused, never read.
  Json steal = LlmCampaign("steal", allowed_->endpoint());
  steal["spec"]["agents"]["llm"]["apiKeySecretRef"] = {{"name", "db-password"}, {"key", "apiKey"}};
  ASSERT_EQ(ApplyAsAlice(steal), 0);
  why = Refusal("steal");
  EXPECT_NE(why.find("spec.agents.llm.apiKeySecretRef"), std::string::npos) << why;
  // Privileged and host-network trial pods.
  Json priv = SimCampaign("priv", 1, 1);
  priv["spec"]["trialTemplate"]["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {
      {"privileged", true}};
  ASSERT_EQ(ApplyAsAlice(priv), 0);
  why = Refusal("priv");
  EXPECT_NE(why.find("spec.trialTemplate.spec.template.spec.containers[0].securityContext."
                     "privileged"),
            std::string::npos)
      << why;
  Json host = SimCampaign("hostnet", 1, 1);
  host["spec"]["trialTemplate"]["spec"]["template"]["spec"]["hostNetwork"] = true;
  ASSERT_EQ(ApplyAsAlice(host), 0);
  why = Refusal("hostnet");
  EXPECT_NE(why.find("spec.trialTemplate.spec.template.spec.hostNetwork"), std::string::npos)
      << why;
  // alice cannot write where approvals live, nor read the Secret herself.
  EXPECT_NE(cluster_->Kubectl("--as=alice -n paratune-system create configmap "
                              "paratune-approve-cordon-x --from-literal=remediation=cordon-x"),
            0);
  EXPECT_NE(cluster_->Kubectl("--as=alice -n " + ns_ + " get secret db-password"), 0);

  // The allowlisted endpoint serves a real LLM campaign: its proposals become trials.
  ASSERT_EQ(ApplyAsAlice(LlmCampaign("llm", allowed_->endpoint())), 0);
  auto proposed_by_llm = [&] {
    for (const Json& tr : TrialRunsOf(admin_, ns_, "llm")) {
      if (tr["spec"].value("proposal", Json::object()).value("proposedBy", "") == "llm") {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(WaitFor(proposed_by_llm, seconds(240)))
      << Describe(admin_, ns_, "llm") << "\nrequests: " << allowed_->requests().size()
      << "\noperator log: " << op_->log_path();

  EXPECT_TRUE(other_->requests().empty()) << "a request reached a non-allowlisted endpoint";
  for (const auto& r : allowed_->requests()) {
    EXPECT_EQ(r.headers.count("authorization"), 0u) << "no key was configured for it";
    EXPECT_EQ(r.body.find(kVictimKey), std::string::npos);
  }
  for (const char* name : {"exfil", "steal", "priv", "hostnet"}) {
    EXPECT_TRUE(JobsOf(admin_, ns_, name).empty()) << name;
    EXPECT_TRUE(TrialRunsOf(admin_, ns_, name).empty()) << name;
  }
  EXPECT_EQ(op_->Log().find(kVictimKey), std::string::npos);
  EXPECT_TRUE(op_->Alive());
}

// `kubectl auth can-i VERB RESOURCE` as `who` (namespace "" : every namespace).
bool CanI(LocalCluster* cluster, const std::string& who, const std::string& verb,
          const std::string& resource, const std::string& ns) {
  const std::string where = ns.empty() ? " --all-namespaces" : " -n " + ns;
  return cluster->Kubectl("auth can-i " + verb + " " + resource + where + " --as=" + who) == 0;
}

TEST_F(SecurityTest, TheOperatorReadsOnlySecretsANamespaceGrantsAndAliceOnlyHerRole) {
  // The default RBAC (manifests/rbac.yaml, the chart's default rendering): no Secret anywhere,
  // no Node patch.
  for (const char* verb : {"list", "watch", "get"}) {
    EXPECT_FALSE(CanI(cluster_, kOperatorSa, verb, "secrets", "")) << verb;
    EXPECT_FALSE(CanI(cluster_, kOperatorSa, verb, "secrets", ns_)) << verb;
  }
  EXPECT_FALSE(CanI(cluster_, kOperatorSa, "patch", "nodes", ""));
  EXPECT_TRUE(CanI(cluster_, kOperatorSa, "list", "nodes", "")) << "node_fit reads them";

  // The namespace's administrator grants `get` on two named Secrets with the shipped example
  // Role; one carries the opt-in label, the other not.
  std::ifstream example(std::string(PARATUNE_SOURCE_DIR) +
                        "/manifests/examples/llm-api-key-reader.yaml");
  std::stringstream text;
  text << example.rdbuf();
  std::string role =
      std::regex_replace(text.str(), std::regex("namespace: team-a"), "namespace: " + ns_);
  role = std::regex_replace(role, std::regex("resourceNames: \\[llm-key\\]"),
                            "resourceNames: [llm-key, unlabelled-key]");
  const std::string role_path = cluster_->dir() + "/" + ns_ + "-llm-key-reader.yaml";
  std::ofstream(role_path) << role;
  ASSERT_EQ(cluster_->Kubectl("apply -f " + role_path), 0);
  for (auto [name, labelled, key] : {std::tuple{"llm-key", true, kGrantedKey},
                                     std::tuple{"unlabelled-key", false, kVictimKey}}) {
    Json secret = {{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"metadata", {{"name", name}}},
                   {"stringData", {{"apiKey", key}}}};
    if (labelled) secret["metadata"]["labels"]["tuning.paratune.dev/llm-api-key"] = "true";
    ASSERT_TRUE(admin_->Create(resources::kSecrets, ns_, secret).ok()) << name;
  }
  EXPECT_TRUE(CanI(cluster_, kOperatorSa, "get", "secret/llm-key", ns_));
  EXPECT_FALSE(CanI(cluster_, kOperatorSa, "get", "secret/db-password", ns_));
  EXPECT_FALSE(CanI(cluster_, kOperatorSa, "list", "secrets", ns_));

  // Granted but unlabelled: refused, naming the field and the label; never sent.
  Json unlabelled = LlmCampaign("unlabelled", allowed_->endpoint());
  unlabelled["spec"]["agents"]["llm"]["apiKeySecretRef"] = {{"name", "unlabelled-key"},
                                                            {"key", "apiKey"}};
  ASSERT_EQ(ApplyAsAlice(unlabelled), 0);
  std::string why = Refusal("unlabelled");
  EXPECT_NE(why.find("spec.agents.llm.apiKeySecretRef"), std::string::npos) << why;
  EXPECT_NE(why.find("tuning.paratune.dev/llm-api-key"), std::string::npos) << why;
  // Granted and labelled: the campaign runs and its requests carry that key.
  Json keyed = LlmCampaign("keyed", allowed_->endpoint());
  keyed["spec"]["agents"]["llm"]["apiKeySecretRef"] = {{"name", "llm-key"}, {"key", "apiKey"}};
  ASSERT_EQ(ApplyAsAlice(keyed), 0);
  auto proposed_by_llm = [&] {
    for (const Json& tr : TrialRunsOf(admin_, ns_, "keyed")) {
      if (tr["spec"].value("proposal", Json::object()).value("proposedBy", "") == "llm") {
        return true;
      }
    }
    return false;
  };
  EXPECT_TRUE(WaitFor(proposed_by_llm, seconds(240)))
      << Describe(admin_, ns_, "keyed") << "\noperator log: " << op_->log_path();
  ASSERT_FALSE(allowed_->requests().empty());
  for (const auto& r : allowed_->requests()) {
    auto auth = r.headers.find("authorization");
    ASSERT_NE(auth, r.headers.end());
    EXPECT_EQ(auth->second, std::string("Bearer ") + kGrantedKey);
    EXPECT_EQ(r.body.find(kVictimKey), std::string::npos);
  }
  EXPECT_TRUE(TrialRunsOf(admin_, ns_, "unlabelled").empty());
  EXPECT_EQ(op_->Log().find(kGrantedKey), std::string::npos) << "never logged";
  EXPECT_EQ(op_->Log().find(kVictimKey), std::string::npos);

  // alice, a namespace user: what `kubectl auth can-i --list` shows her in her namespace is her
  // Role (tuningcampaigns) and the self-review rules every authenticated user has; nothing on
  // Secrets, pods, Jobs, ConfigMaps, TrialRuns or Nodes, and nothing in another namespace.
  std::string rules;
  ASSERT_EQ(cluster_->Kubectl("auth can-i --list -n " + ns_ + " --as=alice", &rules), 0);
  EXPECT_NE(rules.find("tuningcampaigns.tuning.paratune.dev"), std::string::npos) << rules;
  std::istringstream lines(rules);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("Resources", 0) == 0 || line.empty()) continue;
    const std::string resource = line.substr(0, line.find(' '));
    const bool own_role = resource == "tuningcampaigns.tuning.paratune.dev";
    const bool self_review = resource.find("selfsubject") == 0;
    const bool discovery = resource.empty() || resource[0] == '[';  // non-resource URLs
    EXPECT_TRUE(own_role || self_review || discovery) << "alice may: " << line;
  }
  for (const char* what : {"secrets", "pods", "jobs", "configmaps", "trialruns"}) {
    EXPECT_FALSE(CanI(cluster_, "alice", "get", what, ns_)) << what;
  }
  EXPECT_FALSE(CanI(cluster_, "alice", "list", "tuningcampaigns", "default"));
  EXPECT_FALSE(CanI(cluster_, "alice", "patch", "nodes", ""));
  EXPECT_TRUE(op_->Alive());
}

}  // namespace
}  // namespace paratune::kube::testing
