// The CRDs and RBAC of crds/ and manifests/ against a real kube-apiserver: schema defaults and
// enums, the status subresource, and the operator ServiceAccount's least-privilege grants (what
// the controllers call is allowed, what they do not call is not).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "base/time_source.h"
#include "controllers/node_health/node_health.h"
#include "operator/rest_client.h"
#include "tests/integration/cluster_fixture.h"

namespace paratune::kube {
namespace {

int Kubectl(testing::LocalCluster* cluster, const std::string& args) {
  std::string cmd = "KUBECONFIG=" + cluster->dir() + "/kubeconfig kubectl " + args + " >/dev/null";
  return std::system(cmd.c_str());
}

void InstallCrdsAndRbac(testing::LocalCluster* cluster) {
  const std::string src = PARATUNE_SOURCE_DIR;
  ASSERT_EQ(Kubectl(cluster, "apply -f " + src + "/crds/"), 0);
  ASSERT_EQ(Kubectl(cluster, "wait --for condition=established --timeout=60s -f " + src + "/crds/"),
            0);
  ASSERT_EQ(Kubectl(cluster, "apply -f " + src + "/manifests/00-namespace.yaml -f " + src +
                                 "/manifests/rbac.yaml"),
            0);
}

Json Campaign(const std::string& name) {
  return {{"apiVersion", "tuning.paratune.dev/v1alpha1"},
          {"kind", "TuningCampaign"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"model", {{"preset", "llama3-8b"}}},
            {"training", {{"globalBatchSize", 512}}},
            {"hardware", {{"accelerator", "nvidia-h100-80gb"}}},
            {"searchSpace", {{"parameters", {{{"name", "tp"}, {"values", {1, 2}}}}}}}}}};
}

TEST(ControllersCrdTest, SchemaFillsDefaultsAndRefusesBadEnums) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  InstallCrdsAndRbac(cluster);
  KubeClient* c = cluster->Admin();
  std::string ns = cluster->NewNamespace("crd");
  auto created = c->Create(resources::kTuningCampaigns, ns, Campaign("defaults"));
  ASSERT_TRUE(created.ok()) << StatusText(created.status());
  const Json& spec = (*created)["spec"];
  EXPECT_EQ(spec["budget"]["maxTrials"], 20);
  EXPECT_EQ(spec["budget"]["parallelTrials"], 1);
  EXPECT_EQ(spec["budget"]["trialTimeout"], "30m");
  EXPECT_EQ(spec["objective"]["metric"], "mfu");
  EXPECT_EQ(spec["agents"]["engine"], "builtin");
  EXPECT_EQ(spec["training"]["precision"], "bf16");
  EXPECT_FALSE(spec["training"].contains("framework"));  // TPU campaigns default to maxtext

  Json bad = Campaign("bad-precision");
  bad["spec"]["training"]["precision"] = "fp64";
  auto refused = c->Create(resources::kTuningCampaigns, ns, bad);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("precision"), std::string::npos);
  Json negative = Campaign("negative-budget");
  negative["spec"]["budget"] = {{"maxTrials", -3}};
  EXPECT_EQ(c->Create(resources::kTuningCampaigns, ns, negative).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(ControllersCrdTest, StatusIsASubresource) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  InstallCrdsAndRbac(cluster);
  KubeClient* c = cluster->Admin();
  std::string ns = cluster->NewNamespace("crdstatus");
  Json obj = *c->Create(resources::kTuningCampaigns, ns, Campaign("s"));
  obj["status"] = {{"phase", "Running"}, {"iteration", 2}};
  auto updated = c->Update(resources::kTuningCampaigns, obj);
  ASSERT_TRUE(updated.ok());
  EXPECT_FALSE((*updated).contains("status") && (*updated)["status"].contains("phase"));
  Json again = *c->Get(resources::kTuningCampaigns, ns, "s");
  again["status"] = {{"phase", "Running"}, {"iteration", 2}};
  auto st = c->UpdateStatus(resources::kTuningCampaigns, again);
  ASSERT_TRUE(st.ok()) << StatusText(st.status());
  EXPECT_EQ((*st)["status"]["phase"], "Running");
}

// Every state the node-health code writes passes the schema's enums (Inconclusive was missing
// from the CRD for a day: a campaign whose check judged nothing could write no status at all).
TEST(ControllersCrdTest, StatusTakesEveryDiagnosticAndRemediationState) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  InstallCrdsAndRbac(cluster);
  KubeClient* c = cluster->Admin();
  std::string ns = cluster->NewNamespace("crdstates");
  ASSERT_TRUE(c->Create(resources::kTuningCampaigns, ns, Campaign("s")).ok());
  auto write = [&](const std::string& diagnostic, const std::string& remediation) {
    Json current = *c->Get(resources::kTuningCampaigns, ns, "s");
    current["status"] = {
        {"phase", "Running"},
        {"nodeHealth",
         {{"diagnostics",
           {{{"node", "gpu-1"}, {"check", "gemm"}, {"state", diagnostic}, {"summary", "s"}}}}}},
        {"remediations",
         {{{"id", "cordon-gpu-1"},
           {"action", "CordonNode"},
           {"node", "gpu-1"},
           {"state", remediation}}}}};
    return c->UpdateStatus(resources::kTuningCampaigns, current).status();
  };
  for (const char* state : controllers::kDiagnosticStates) {
    Status s = write(state, "Proposed");
    EXPECT_TRUE(s.ok()) << "diagnostic state " << state << ": " << StatusText(s);
  }
  for (const char* state : controllers::kRemediationStates) {
    Status s = write("Running", state);
    EXPECT_TRUE(s.ok()) << "remediation state " << state << ": " << StatusText(s);
  }
  EXPECT_EQ(write("Maybe", "Proposed").code(), StatusCode::kInvalidArgument)
      << "the enum is enforced";
}

TEST(ControllersCrdTest, OperatorServiceAccountHasExactlyWhatTheControllersUse) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  InstallCrdsAndRbac(cluster);
  std::string ns = cluster->NewNamespace("rbac");
  ASSERT_TRUE(cluster->Admin()->Create(resources::kTuningCampaigns, ns, Campaign("r")).ok());
  auto op = RestKubeClient::Create(cluster->OperatorConfig(), RealTimeSource::Get(), nullptr);
  ASSERT_TRUE(op.ok());
  KubeClient* c = op->get();
  EXPECT_TRUE(c->List(resources::kTuningCampaigns, "", {}).ok());
  EXPECT_TRUE(c->List(resources::kJobs, "", {}).ok());
  EXPECT_TRUE(c->List(resources::kPods, "", {}).ok());
  Json tc = *c->Get(resources::kTuningCampaigns, ns, "r");
  tc["status"] = {{"phase", "Pending"}};
  EXPECT_TRUE(c->UpdateStatus(resources::kTuningCampaigns, tc).ok());
  Json tr = {
      {"apiVersion", "tuning.paratune.dev/v1alpha1"},
      {"kind", "TrialRun"},
      {"metadata", {{"name", "r-t001"}, {"ownerReferences", {MakeControllerRef(tc)}}}},
      {"spec", {{"campaignRef", {{"name", "r"}}}, {"iteration", 1}, {"config", {{"tp", 1}}}}}};
  auto created = c->Create(resources::kTrialRuns, ns, tr);
  EXPECT_TRUE(created.ok()) << StatusText(created.status());
  Json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "r-pool"}}},
             {"data", {{"pool.json", "{}"}}}};
  EXPECT_TRUE(c->Create(resources::kConfigMaps, ns, cm).ok());
  // Not granted: the controllers never delete pods, edit campaign specs or write secrets.
  // The default RBAC holds no right on Secrets at all (issue 38): a campaign's key is read with
  // one `get` only where its namespace's administrator granted it (docs/security.md).
  EXPECT_EQ(c->Delete(resources::kPods, ns, "anything").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c->Update(resources::kTuningCampaigns, tc).status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(c->Get(resources::kSecrets, ns, "anything").status().code(),
            StatusCode::kPermissionDenied);
  EXPECT_EQ(c->List(resources::kSecrets, ns, {}).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c->List(resources::kSecrets, "", {}).status().code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c->Delete(resources::kSecrets, ns, "anything").code(), StatusCode::kPermissionDenied);
  // Nodes are listed (a trial the scheduler leaves Pending is judged against them: node_fit.h),
  // never deleted or replaced, and patched only with node remediation enabled (its own
  // ClusterRole, not in manifests/rbac.yaml).
  EXPECT_TRUE(c->List(resources::kNodes, "", {}).ok());
  EXPECT_EQ(c->Delete(resources::kNodes, "", "anything").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(c->Patch(resources::kNodes, "", "anything", PatchType::kMerge,
                     {{"spec", {{"unschedulable", true}}}})
                .status()
                .code(),
            StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace paratune::kube
