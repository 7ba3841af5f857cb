// Reliability on the local control plane (issue 8): a running trial's Job deleted by hand
// (`kubectl delete job`, which cascades to its pods). Defined recovery: the TrialRun
// reconciler finds its Job gone and creates it again under the same name (the trial re-runs
// from the start; the TrialRun keeps its name, iteration and config), so the trial still ends in
// a final phase and the campaign goes on with every TrialRun owning exactly one Job.
#include <gtest/gtest.h>

#include <chrono>

#include "tests/integration/reliability_harness.h"

namespace paratune::kube::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ReliabilityTest, JobDeletedByHandIsRecreatedAndTheCampaignGoesOn) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("rel-jobdel");
  constexpr int kTrials = 3;
  ASSERT_TRUE(
      admin->Create(resources::kTuningCampaigns, ns, SimCampaign("jobdel", kTrials, 1)).ok());
  OperatorProcess op(cluster, {"--namespace", ns}, cluster->dir() + "/" + ns + "-operator.log");
  ASSERT_TRUE(op.Start());
  // The first trial while it runs: its TrialRun says Running and its Job exists.
  std::string trial, old_uid;
  ASSERT_TRUE(WaitFor(
      [&] {
        for (const Json& tr : TrialRunsOf(admin, ns, "jobdel")) {
          if (tr.value("status", Json::object()).value("phase", "") != "Running") continue;
          auto job = admin->Get(resources::kJobs, ns, NameOf(tr));
          if (!job.ok()) continue;
          trial = NameOf(tr);
          old_uid = UidOf(*job);
          return true;
        }
        return false;
      },
      seconds(90), milliseconds(100)))
      << Describe(admin, ns, "jobdel");
  ASSERT_EQ(cluster->Kubectl("-n " + ns + " delete job " + trial + " --wait=false"), 0);
  const auto deleted = std::chrono::steady_clock::now();
  std::string new_uid;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto job = admin->Get(resources::kJobs, ns, trial);
        if (job.ok() && UidOf(*job) != old_uid) new_uid = UidOf(*job);
        return !new_uid.empty();
      },
      seconds(60), milliseconds(100)))
      << "the Job of " << trial << " was not recreated: " << Describe(admin, ns, "jobdel");
  std::printf("Job %s recreated %.1f s after it was deleted\n", trial.c_str(),
              std::chrono::duration<double>(std::chrono::steady_clock::now() - deleted).count());
  ASSERT_TRUE(WaitFor([&] { return Finished(admin, ns, "jobdel"); }, seconds(180), seconds(1)))
      << Describe(admin, ns, "jobdel") << "\noperator log: " << op.log_path();
  EXPECT_EQ(PhaseOf(admin, ns, "jobdel"), "Succeeded") << Describe(admin, ns, "jobdel");
  EXPECT_EQ(AuditCampaign(admin, ns, "jobdel", kTrials), "");
  auto tr = admin->Get(resources::kTrialRuns, ns, trial);
  ASSERT_TRUE(tr.ok());
  EXPECT_EQ((*tr)["status"].value("phase", ""), "Succeeded") << tr->dump();
  // The recreated Job is the one that ran to the end (the deleted one is gone for good).
  auto job = admin->Get(resources::kJobs, ns, trial);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(UidOf(*job), new_uid);
  // Every reconcile of the campaign planned from one model and search space, built once.
  EXPECT_EQ(op.Metric("paratune_planning_cache_builds_total"), 1);
  EXPECT_GT(op.Metric("paratune_planning_cache_hits_total"), 1);
  EXPECT_GT(op.Metric("paratune_planning_cache_bytes"), 0);
  EXPECT_TRUE(op.Alive());
  (void)admin->Delete(resources::kNamespaces, "", ns);
}

}  // namespace
}  // namespace paratune::kube::testing
