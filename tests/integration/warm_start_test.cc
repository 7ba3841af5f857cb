// Issue 15 item 5 on the local control plane (real kube-apiserver, controller-manager, scheduler,
// paratune-kubelet-sim, paratune-operator as a subprocess under its ServiceAccount): a second
// campaign on the same workload, with the first one's published result in its namespace,
// reaches the first one's best in its first trial.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <string>

#include "tests/integration/reliability_harness.h"

namespace paratune::kube::testing {
namespace {

using std::chrono::seconds;

Json StatusOf(KubeClient* c, const std::string& ns, const std::string& name) {
  auto tc = c->Get(resources::kTuningCampaigns, ns, name);
  return tc.ok() && tc->contains("status") ? (*tc)["status"] : Json::object();
}

TEST(WarmStartTest, SecondCampaignReachesTheFirstOnesBestInItsFirstTrial) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("warmstart");
  Json first = SimCampaign("first", 5, 1);
  first["spec"]["output"] = {{"configMapName", "first-best"}};
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, first).ok());
  OperatorProcess op(cluster, {"--namespace", ns}, cluster->dir() + "/" + ns + "-operator.log");
  ASSERT_TRUE(op.Start());
  ASSERT_TRUE(WaitFor([&] { return Finished(admin, ns, "first"); }, seconds(240), seconds(1)))
      << Describe(admin, ns, "first") << "\noperator log: " << op.log_path();
  ASSERT_TRUE(WaitFor(
      [&] {
        auto cm = admin->Get(resources::kConfigMaps, ns, "first-best");
        return cm.ok() && (*cm)["data"].contains("past-optimization.json");
      },
      seconds(30)));
  const Json best = StatusOf(admin, ns, "first")["best"];
  ASSERT_TRUE(best["config"].is_object()) << best.dump(2);
  // The first campaign had to search: its best is not its first trial.
  auto t1_first = admin->Get(resources::kTrialRuns, ns, "first-t001");
  ASSERT_TRUE(t1_first.ok());
  ASSERT_NE((*t1_first)["spec"]["config"], best["config"]);

  Json second = SimCampaign("second", 1, 1);
  second["spec"].erase("baseline");
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, second).ok());
  ASSERT_TRUE(WaitFor([&] { return Finished(admin, ns, "second"); }, seconds(180), seconds(1)))
      << Describe(admin, ns, "second") << "\noperator log: " << op.log_path();
  auto t1 = admin->Get(resources::kTrialRuns, ns, "second-t001");
  ASSERT_TRUE(t1.ok()) << Describe(admin, ns, "second");
  EXPECT_EQ((*t1)["spec"]["config"], best["config"]);
  EXPECT_EQ(
      (*t1)["spec"]["proposal"].value("rationale", "").rfind("Warm start from past:first/", 0), 0u)
      << (*t1)["spec"]["proposal"].dump(2);
  const Json second_best = StatusOf(admin, ns, "second")["best"];
  ASSERT_TRUE(second_best.contains("objective")) << second_best.dump(2);
  // The same configuration measured again: within the simulated run-to-run noise.
  EXPECT_GE(second_best["objective"].get<double>(), 0.95 * best["objective"].get<double>());
  op.Stop(SIGTERM);
}

}  // namespace
}  // namespace paratune::kube::testing
