// Reliability on the local control plane (issue 8): kube-apiserver restarted while a campaign
// runs (etcd keeps the data). The operator's watches must resume on their own (counted in
// paratune_watch_restarts_total) and the campaign must complete with nothing lost or duplicated.
#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "tests/integration/reliability_harness.h"

namespace paratune::kube::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ReliabilityTest, CampaignCompletesAcrossAnApiserverRestart) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("rel-api");
  constexpr int kTrials = 4;
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, SimCampaign("api", kTrials, 2)).ok());
  OperatorProcess op(cluster, {"--namespace", ns}, cluster->dir() + "/" + ns + "-operator.log");
  ASSERT_TRUE(op.Start());
  ASSERT_TRUE(WaitFor([&] { return !JobsOf(admin, ns, "api").empty(); }, seconds(90)))
      << Describe(admin, ns, "api");
  const double restarts_before = op.Metric("paratune_watch_restarts_total");
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(cluster->RestartApiserver().ok());
  const double down_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const bool finished =
      WaitFor([&] { return Finished(admin, ns, "api"); }, seconds(180), seconds(1));
  ASSERT_TRUE(finished) << Describe(admin, ns, "api") << "\noperator log: " << op.log_path();
  const double total_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("apiserver restart took %.1f s; campaign finished %.1f s after it began\n", down_s,
              total_s);
  EXPECT_TRUE(op.Alive()) << "the operator exited across the restart; log: " << op.log_path();
  EXPECT_EQ(PhaseOf(admin, ns, "api"), "Succeeded") << Describe(admin, ns, "api");
  EXPECT_EQ(AuditCampaign(admin, ns, "api", kTrials), "");
  // The watches noticed the restart and resumed (not a silent, stale cache).
  EXPECT_GT(op.Metric("paratune_watch_restarts_total"), restarts_before);
  EXPECT_EQ(op.Http("/readyz").substr(0, 2), "ok");
  (void)admin->Delete(resources::kNamespaces, "", ns);
}

}  // namespace
}  // namespace paratune::kube::testing
