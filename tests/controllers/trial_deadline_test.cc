// The trial timeout counts from admission (issue 13): a queued trial may wait in its Kueue
// queue for longer than spec.budget.trialTimeout, and once admitted it still gets the whole
// timeout; past it (plus the reconciler's grace) the operator ends it itself, as Timeout, and
// deletes its Job, whatever the cluster does with the Job's activeDeadlineSeconds.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "tests/controllers/reconciler_fixture.h"

namespace paratune::controllers {
namespace {

using testing::FakeCluster;
using testing::Json;
namespace res = kube::resources;
using std::chrono::seconds;

constexpr const char* kTrial = "queued-t001";

void CreateQueuedTrial(FakeCluster& c) {
  Json campaign = testing::TestCampaign("queued", 3);
  campaign["spec"]["queueName"] = "team-q";
  campaign["spec"]["budget"]["trialTimeout"] = "60s";
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", campaign).ok());
  ASSERT_TRUE(
      c.client.Create(res::kTrialRuns, "ns", testing::HandMadeTrialRun(kTrial, "queued")).ok());
}

kube::ReconcileResult Reconcile(FakeCluster& c) {
  c.Sync();
  auto r = c.trial_reconciler->Reconcile({"ns", kTrial});
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : kube::ReconcileResult{};
}

Json Status(FakeCluster& c) { return c.Get(res::kTrialRuns, kTrial).value("status", Json()); }

// Plays Kueue: admits the Job now (spec.suspend false; the Job controller sets startTime).
void Admit(FakeCluster& c, TimeSource& clock) {
  Json job = c.Get(res::kJobs, kTrial);
  job["spec"]["suspend"] = false;
  ASSERT_TRUE(c.client.Update(res::kJobs, job).ok());
  job = c.Get(res::kJobs, kTrial);
  job["status"] = {{"startTime", FormatRfc3339(clock.SystemNow())}, {"active", 1}};
  ASSERT_TRUE(c.client.UpdateStatus(res::kJobs, job).ok());
}

TEST(TrialDeadlineTest, QueueTimeDoesNotCountAndTheTimeoutEndsTheTrialAfterAdmission) {
  FakeTimeSource clock;
  FakeCluster c(/*detect_anomalies=*/false, &clock);
  CreateQueuedTrial(c);
  Reconcile(c);  // launches the Job, suspended for Kueue
  ASSERT_EQ(c.Get(res::kJobs, kTrial)["spec"].value("suspend", false), true);

  clock.Advance(Millis(600000));  // ten minutes in the queue: ten timeouts
  Reconcile(c);
  EXPECT_EQ(Status(c).value("phase", ""), "Pending") << Status(c);

  Admit(c, clock);
  const kube::ReconcileResult admitted = Reconcile(c);
  EXPECT_NE(Status(c).value("phase", ""), "Failed") << Status(c);
  EXPECT_FALSE(Status(c).value("admissionTime", "").empty());
  // It looks again when the timeout (60 s) and the grace have passed, not later.
  EXPECT_GT(admitted.requeue_after.count(), 0);
  EXPECT_LE(admitted.requeue_after, Millis(71000));

  clock.Advance(Millis(30000));  // half the timeout: runs on
  Reconcile(c);
  EXPECT_NE(Status(c).value("phase", ""), "Failed") << Status(c);

  clock.Advance(Millis(41000));  // 71 s after admission: past 60 s + 10 s grace
  Reconcile(c);
  const Json st = Status(c);
  ASSERT_EQ(st.value("phase", ""), "Failed") << st;
  EXPECT_EQ(st["failure"].value("category", ""), "Timeout") << st;
  EXPECT_NE(st["failure"].value("summary", "").find("trialTimeout"), std::string::npos) << st;
  EXPECT_FALSE(c.client.Get(res::kJobs, "ns", kTrial).ok()) << "the Job must be deleted";
}

// Kueue evicted it (preemption): suspended again, its pods stopped. Once admitted again it has
// the whole timeout again, as Kubernetes gives the Job's activeDeadlineSeconds (the resume resets
// status.startTime, KEP-2232): the time before the eviction and in the queue does not count.
TEST(TrialDeadlineTest, AnEvictedTrialHasTheWholeTimeoutAgainOnceAdmittedAgain) {
  FakeTimeSource clock;
  FakeCluster c(/*detect_anomalies=*/false, &clock);
  CreateQueuedTrial(c);
  Reconcile(c);
  Admit(c, clock);
  Reconcile(c);
  ASSERT_FALSE(Status(c).value("admissionTime", "").empty()) << Status(c);

  clock.Advance(Millis(50000));  // 50 of its 60 s, then preempted
  Json job = c.Get(res::kJobs, kTrial);
  job["spec"]["suspend"] = true;
  ASSERT_TRUE(c.client.Update(res::kJobs, job).ok());
  Reconcile(c);
  Json st = Status(c);
  EXPECT_EQ(st.value("phase", ""), "Pending") << st;
  EXPECT_EQ(st.value("evictions", 0), 1) << st;
  EXPECT_FALSE(st.contains("admissionTime")) << st;

  clock.Advance(Millis(600000));  // ten minutes queued again
  Reconcile(c);
  EXPECT_EQ(Status(c).value("phase", ""), "Pending") << Status(c);

  Admit(c, clock);
  Reconcile(c);
  clock.Advance(Millis(50000));  // 50 s into the second run: 710 s after the first admission
  Reconcile(c);
  st = Status(c);
  EXPECT_NE(st.value("phase", ""), "Failed") << st;
  EXPECT_EQ(st.value("queueSeconds", 0), 600) << st;

  clock.Advance(Millis(21000));  // 71 s after the second admission
  Reconcile(c);
  EXPECT_EQ(Status(c).value("phase", ""), "Failed") << Status(c);
}

}  // namespace
}  // namespace paratune::controllers
