// Several watched namespaces with rights granted per namespace only (the chart's
// watchNamespaces: a Role and RoleBinding in each, no ClusterRole), on the local control plane:
// the operator must not list or watch anything cluster-wide, and campaigns in every watched
// namespace run. The operator runs as an identity with no cluster-wide rights at all
// (system:serviceaccount:paratune-scoped:paratune-operator, hack/local-cluster.sh).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <string>

#include "operator/rest_client.h"
#include "operator/rest_config.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/reliability_harness.h"

namespace paratune::kube::testing {
namespace {

using std::chrono::seconds;

// The operator's ClusterRole rules, granted as a Role in `ns` to the scoped identity.
bool GrantRole(LocalCluster* cluster, const std::string& ns, const Json& rules) {
  const std::string user = "system:serviceaccount:paratune-scoped:paratune-operator";
  const Json role = {{"apiVersion", "rbac.authorization.k8s.io/v1"},
                     {"kind", "Role"},
                     {"metadata", {{"name", "paratune-operator"}, {"namespace", ns}}},
                     {"rules", rules}};
  const Json binding = {
      {"apiVersion", "rbac.authorization.k8s.io/v1"},
      {"kind", "RoleBinding"},
      {"metadata", {{"name", "paratune-operator"}, {"namespace", ns}}},
      {"roleRef",
       {{"apiGroup", "rbac.authorization.k8s.io"},
        {"kind", "Role"},
        {"name", "paratune-operator"}}},
      {"subjects",
       {{{"apiGroup", "rbac.authorization.k8s.io"}, {"kind", "User"}, {"name", user}}}}};
  const std::string file = cluster->dir() + "/" + ns + "-rbac.json";
  std::ofstream(file) << Json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", {role, binding}}};
  return cluster->Kubectl("apply -f " + file) == 0;
}

TEST(WatchNamespacesTest, SeveralNamespacesRunOnPerNamespaceRolesAlone) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  std::string out;
  ASSERT_EQ(cluster->Kubectl("get clusterrole paratune-operator -o json", &out), 0);
  const Json rules = Json::parse(out, nullptr, false).value("rules", Json::array());
  ASSERT_FALSE(rules.empty());
  const std::string a = cluster->NewNamespace("team-a");
  const std::string b = cluster->NewNamespace("team-b");
  for (const std::string& ns : {a, b}) ASSERT_TRUE(GrantRole(cluster, ns, rules)) << ns;

  // The precondition: this identity may read the watched namespaces, and nothing cluster-wide.
  const std::string kubeconfig = cluster->dir() + "/scoped-operator.kubeconfig";
  auto cfg = LoadKubeconfig(kubeconfig);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  auto scoped = RestKubeClient::Create(*cfg, RealTimeSource::Get(), nullptr);
  ASSERT_TRUE(scoped.ok());
  EXPECT_TRUE((*scoped)->List(resources::kTrialRuns, a, {}).ok());
  auto everywhere = (*scoped)->List(resources::kTrialRuns, "", {});
  ASSERT_FALSE(everywhere.ok());
  EXPECT_EQ(everywhere.status().code(), StatusCode::kPermissionDenied);

  KubeClient* admin = cluster->Admin();
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, a, SimCampaign("ca", 1, 1)).ok());
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, b, SimCampaign("cb", 1, 1)).ok());
  OperatorProcess op(cluster,
                     {"--kubeconfig", kubeconfig, "--namespace", a + "," + b, "--node-health",
                      "false", "--diagnostics", "off"},
                     cluster->dir() + "/" + a + "-scoped-operator.log");
  ASSERT_TRUE(op.Start());
  EXPECT_TRUE(WaitFor([&] { return !JobsOf(admin, a, "ca").empty(); }, seconds(90)))
      << Describe(admin, a, "ca") << "\noperator log: " << op.log_path();
  EXPECT_TRUE(WaitFor([&] { return !JobsOf(admin, b, "cb").empty(); }, seconds(30)))
      << Describe(admin, b, "cb") << "\noperator log: " << op.log_path();
  EXPECT_EQ(op.Log().find("forbidden"), std::string::npos) << "operator log: " << op.log_path();
  op.Stop(SIGTERM);
}

}  // namespace
}  // namespace paratune::kube::testing
