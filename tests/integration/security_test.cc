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
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include "tests/integration/reliability_harness.h"
#include "tests/llm/scripted_server.h"

namespace paratune::kube::testing {
namespace {

using llm::testing::ReceivedRequest;
using llm::testing::ScriptedReply;
using llm::testing::ScriptedServer;
using std::chrono::seconds;

constexpr char kVictimKey[] = "sk-victim-db-password-0123456789";

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

}  // namespace
}  // namespace paratune::kube::testing
