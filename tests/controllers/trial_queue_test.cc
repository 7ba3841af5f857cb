// A queued trial and Kueue's reason (controllers/kueue_workload.h): while the trial's Job waits
// suspended, the Workload Kueue made for it says why in its QuotaReserved condition. Quota held
// by others: the trial waits, and its Admitted condition says so. A request no quota can ever
// cover: the trial fails as Unschedulable, not retryable, and its Job goes, instead of waiting
// for ever. Without Kueue's API (or a Workload yet) nothing changes.
#include <gtest/gtest.h>

#include <string>

#include "controllers/conditions.h"
#include "controllers/kueue_workload.h"
#include "controllers/trial_admission.h"
#include "tests/controllers/reconciler_fixture.h"

namespace paratune::controllers {
namespace {

using testing::FakeCluster;
using testing::Json;
using testing::KnowledgeAnalyzer;
namespace res = kube::resources;

constexpr const char* kTrial = "queued-t001";

// A campaign with a Kueue queue and one hand-made trial, reconciled once: its Job exists,
// suspended.
void LaunchQueuedTrial(FakeCluster& c) {
  Json campaign = testing::TestCampaign("queued", 3);
  campaign["spec"]["queueName"] = "team-q";
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", campaign).ok());
  ASSERT_TRUE(
      c.client.Create(res::kTrialRuns, "ns", testing::HandMadeTrialRun(kTrial, "queued")).ok());
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  ASSERT_EQ(c.Get(res::kJobs, kTrial)["spec"].value("suspend", false), true);
}

// Plays Kueue: the Workload of the trial's Job, not admitted for `message`.
void KueuePending(FakeCluster& c, const std::string& message) {
  const Json job = c.Get(res::kJobs, kTrial);
  Json wl = {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
             {"kind", "Workload"},
             {"metadata",
              {{"name", std::string("job-") + kTrial + "-3f2a1"},
               {"namespace", "ns"},
               {"labels", {{kKueueJobUidLabel, kube::UidOf(job)}}}}},
             {"spec", {{"queueName", "team-q"}}}};
  auto created = c.client.Create(kKueueWorkloads, "ns", wl);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Json with = *created;
  with["status"] = {{"conditions",
                     {{{"type", "QuotaReserved"},
                       {"status", "False"},
                       {"reason", "Pending"},
                       {"message", message}}}}};
  ASSERT_TRUE(c.client.UpdateStatus(kKueueWorkloads, with).ok());
}

Json Status(FakeCluster& c) { return c.Get(res::kTrialRuns, kTrial).value("status", Json()); }

TEST(TrialQueueTest, AWorkloadKueueCanNeverAdmitFailsAsUnschedulable) {
  FakeCluster c(/*detect_anomalies=*/false, RealTimeSource::Get(), KnowledgeAnalyzer());
  LaunchQueuedTrial(c);
  KueuePending(c,
               "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu "
               "in flavor h100, request > maximum capacity (16 > 8)");
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  const Json st = Status(c);
  ASSERT_EQ(st.value("phase", ""), "Failed") << st.dump(2);
  EXPECT_EQ(st["failure"].value("category", ""), "Unschedulable") << st["failure"].dump(2);
  EXPECT_FALSE(st["failure"].value("retryable", true));
  EXPECT_EQ(st["failure"].value("signature", ""), "kueue-never-admissible");
  EXPECT_EQ(st["observed"].value("podReason", ""), "Inadmissible");
  EXPECT_FALSE(c.client.Get(res::kJobs, "ns", kTrial).ok()) << "the Job must be deleted";
}

TEST(TrialQueueTest, QuotaHeldByOthersWaitsAndSaysWhy) {
  FakeCluster c(/*detect_anomalies=*/false, RealTimeSource::Get(), KnowledgeAnalyzer());
  LaunchQueuedTrial(c);
  KueuePending(c,
               "couldn't assign flavors to pod set main: insufficient unused quota for "
               "nvidia.com/gpu in flavor h100, 8 more needed");
  auto r = c.trial_reconciler->Reconcile({"ns", kTrial});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->requeue_after, Millis(60000));  // Kueue's Workload is not watched: look again
  const Json st = Status(c);
  EXPECT_EQ(st.value("phase", ""), "Pending") << st.dump(2);
  const Json* admitted = FindCondition(st["conditions"], kAdmitted);
  ASSERT_NE(admitted, nullptr) << st.dump(2);
  EXPECT_EQ(admitted->value("status", ""), "False");
  EXPECT_NE(admitted->value("message", "").find("insufficient unused quota"), std::string::npos)
      << admitted->dump();
  EXPECT_EQ(c.Get(res::kJobs, kTrial)["spec"].value("suspend", false), true);
}

// A Kueue that serves only v1beta2 Workloads (v1beta1 answers 404): read all the same.
TEST(TrialQueueTest, AKueueServingOnlyV1beta2IsReadToo) {
  FakeCluster c(/*detect_anomalies=*/false, RealTimeSource::Get(), KnowledgeAnalyzer());
  LaunchQueuedTrial(c);
  KueuePending(c,
               "couldn't assign flavors to pod set main: resource nvidia.com/gpu unavailable in "
               "ClusterQueue");
  c.client.InjectError("list", "workloads", Status::NotFound("the server could not find it"), 1);
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  // Read on the second LIST (v1beta2): without it the 404 would leave the trial queued.
  EXPECT_EQ(Status(c).value("phase", ""), "Failed") << Status(c).dump(2);
}

TEST(TrialQueueTest, WithoutAWorkloadTheTrialWaitsAsBefore) {
  FakeCluster c(/*detect_anomalies=*/false, RealTimeSource::Get(), KnowledgeAnalyzer());
  LaunchQueuedTrial(c);
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  const Json st = Status(c);
  EXPECT_EQ(st.value("phase", ""), "Pending") << st.dump(2);
  const Json* admitted = FindCondition(st["conditions"], kAdmitted);
  ASSERT_NE(admitted, nullptr);
  EXPECT_NE(admitted->value("message", "").find("waiting for Kueue"), std::string::npos);
}

}  // namespace
}  // namespace paratune::controllers
