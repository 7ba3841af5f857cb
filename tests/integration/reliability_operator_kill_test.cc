// Reliability on the local control plane (issue 8): the operator SIGKILLed at random moments of a
// campaign with parallelTrials 2 and restarted, as `make deploy` restarts it. A user must find
// the campaign finished with exactly the budgeted trials, none lost (every trial the agents
// decided on has a TrialRun) and none duplicated (unique names and iterations, one Job each).
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/reliability_harness.h"

namespace paratune::kube::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ReliabilityTest, OperatorKilledAtRandomPointsLosesAndDuplicatesNothing) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("rel-kill");
  constexpr int kTrials = 6;
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, SimCampaign("kill", kTrials, 2)).ok());
  OperatorProcess op(cluster, {"--namespace", ns}, cluster->dir() + "/" + ns + "-operator.log");
  ASSERT_TRUE(op.Start());

  // Random moments (seed printed so a failure can be replayed), plus the moments that matter
  // most: right after a TrialRun appears (its Job is being created) and right after a Job
  // appears (the TrialRun status is being written).
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> delay_ms(300, 3000);
  SCOPED_TRACE("kill seed " + std::to_string(seed));
  int kills = 0;
  auto kill_and_restart = [&](const std::string& when) {
    if (Finished(admin, ns, "kill")) return;
    op.Stop(SIGKILL);
    ++kills;
    std::printf("kill %d (%s): %zu TrialRuns, %zu Jobs\n", kills, when.c_str(),
                TrialRunsOf(admin, ns, "kill").size(), JobsOf(admin, ns, "kill").size());
    ASSERT_TRUE(op.Start());
  };
  const auto start = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(milliseconds(delay_ms(rng)));
  kill_and_restart("random, early");
  // "Appeared" means a name not seen before: an early-stopped trial's Job is deleted, so the
  // number of Jobs can stay flat while new ones are created.
  std::set<std::string> seen_trials;
  std::set<std::string> seen_jobs;
  auto new_name_in = [](const std::vector<Json>& objects, std::set<std::string>* seen) {
    bool found = false;
    for (const Json& o : objects) found |= seen->insert(NameOf(o)).second;
    return found;
  };
  for (int round = 0; round < 2; ++round) {
    new_name_in(TrialRunsOf(admin, ns, "kill"), &seen_trials);
    WaitFor([&] { return new_name_in(TrialRunsOf(admin, ns, "kill"), &seen_trials); }, seconds(60),
            milliseconds(50));
    kill_and_restart("a TrialRun appeared");
    new_name_in(JobsOf(admin, ns, "kill"), &seen_jobs);
    WaitFor([&] { return new_name_in(JobsOf(admin, ns, "kill"), &seen_jobs); }, seconds(60),
            milliseconds(50));
    kill_and_restart("a Job appeared");
    std::this_thread::sleep_for(milliseconds(delay_ms(rng)));
    kill_and_restart("random");
  }
  ASSERT_TRUE(WaitFor([&] { return Finished(admin, ns, "kill"); }, seconds(240), seconds(1)))
      << Describe(admin, ns, "kill") << "\noperator log: " << op.log_path();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("campaign finished %.1f s after the first kill; %d kills\n", secs, kills);
  EXPECT_GE(kills, 4);
  EXPECT_EQ(PhaseOf(admin, ns, "kill"), "Succeeded") << Describe(admin, ns, "kill");
  EXPECT_EQ(AuditCampaign(admin, ns, "kill", kTrials), "");
  EXPECT_TRUE(op.Alive());
  (void)admin->Delete(resources::kNamespaces, "", ns);
}

}  // namespace
}  // namespace paratune::kube::testing
