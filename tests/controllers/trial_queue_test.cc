// A queued trial and Kueue's reason (controllers/kueue_workload.h): while the trial's Job waits
// suspended, the Workload Kueue made for it says why in its QuotaReserved condition. Quota held
// by others: the trial waits, and its Admitted condition says so. A request no quota can ever
// cover: the trial fails as Unschedulable, not retryable, and its Job goes, instead of waiting
// for ever. Without Kueue's API (or a Workload yet) nothing changes.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

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

// Plays Kueue: the Workload of the trial's Job, with `status` and spec.active `active`.
void KueueWorkload(FakeCluster& c, const Json& status, bool active = true) {
  const Json job = c.Get(res::kJobs, kTrial);
  Json wl = {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
             {"kind", "Workload"},
             {"metadata",
              {{"name", std::string("job-") + kTrial + "-3f2a1"},
               {"namespace", "ns"},
               {"labels", {{kKueueJobUidLabel, kube::UidOf(job)}}}}},
             {"spec", {{"queueName", "team-q"}, {"active", active}}}};
  auto created = c.client.Create(kKueueWorkloads, "ns", wl);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  Json with = *created;
  with["status"] = status;
  ASSERT_TRUE(c.client.UpdateStatus(kKueueWorkloads, with).ok());
}

// The Workload not admitted for `message`; `evicted` (a reason and message) adds its
// Evicted=True condition, `active` its spec.active.
void KueuePending(FakeCluster& c, const std::string& message,
                  const std::pair<std::string, std::string>& evicted = {}, bool active = true) {
  Json status = {{"conditions",
                  {{{"type", "QuotaReserved"},
                    {"status", "False"},
                    {"reason", "Pending"},
                    {"message", message}}}}};
  if (!evicted.first.empty()) {
    status["conditions"].push_back({{"type", "Evicted"},
                                    {"status", "True"},
                                    {"reason", evicted.first},
                                    {"message", evicted.second}});
  }
  KueueWorkload(c, status, active);
}

// Plays Kueue and the Job controller: admits the trial's Job (or, `suspend`, evicts it).
void SetSuspend(FakeCluster& c, bool suspend) {
  Json job = c.Get(res::kJobs, kTrial);
  job["spec"]["suspend"] = suspend;
  ASSERT_TRUE(c.client.Update(res::kJobs, job).ok());
  if (suspend) return;
  job = c.Get(res::kJobs, kTrial);
  job["status"] = {{"startTime", FormatRfc3339(std::chrono::system_clock::now())}, {"active", 1}};
  ASSERT_TRUE(c.client.UpdateStatus(res::kJobs, job).ok());
}

std::vector<Json> EventsOf(FakeCluster& c, const std::string& reason) {
  std::vector<Json> out;
  for (const auto& e : c.List(res::kEvents)) {
    if (e.value("reason", "") == reason) out.push_back(e);
  }
  return out;
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

// Preempted by a workload of higher priority: Kueue suspends the admitted Job again (its pods go)
// and queues its Workload, which it admits again later. The trial waits again, counts the
// eviction, and its Event says what Kueue said; the Job stays.
TEST(TrialQueueTest, APreemptedTrialWaitsAgainAndSaysWhy) {
  FakeCluster c(/*detect_anomalies=*/false, RealTimeSource::Get(), KnowledgeAnalyzer());
  LaunchQueuedTrial(c);
  SetSuspend(c, false);
  // Its pod runs (the Job controller's and the kubelet's part).
  Json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata",
               {{"name", std::string(kTrial) + "-abcde"},
                {"namespace", "ns"},
                {"labels", {{"tuning.paratune.dev/trial", kTrial}}}}},
              {"spec", {{"nodeName", "gpu-0"}, {"containers", {{{"name", "trainer"}}}}}}};
  auto created = c.client.Create(res::kPods, "ns", pod);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  pod = *created;
  pod["status"] = {{"phase", "Running"}, {"startTime", "2026-11-21T05:00:00Z"}};
  ASSERT_TRUE(c.client.UpdateStatus(res::kPods, pod).ok());
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  ASSERT_FALSE(Status(c).value("admissionTime", "").empty()) << Status(c).dump(2);
  ASSERT_EQ(Status(c).value("startTime", ""), "2026-11-21T05:00:00Z") << Status(c).dump(2);

  const std::string preempted =
      "Preempted to accommodate a workload (UID: 5c1e, JobUID: 9a7b) due to prioritization in "
      "the ClusterQueue; preemptor path: /team-cq; preemptee path: /team-cq";
  SetSuspend(c, true);
  KueuePending(c, preempted, {"Preempted", preempted});
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  const Json st = Status(c);
  EXPECT_EQ(st.value("phase", ""), "Pending") << st.dump(2);
  EXPECT_EQ(st.value("evictions", 0), 1) << st.dump(2);
  EXPECT_FALSE(st.contains("admissionTime")) << st.dump(2);
  // Its pod is still listed (terminating): the stopped run's start is not the trial's any more.
  EXPECT_FALSE(st.contains("startTime")) << st.dump(2);
  const Json* admitted = FindCondition(st["conditions"], kAdmitted);
  ASSERT_NE(admitted, nullptr) << st.dump(2);
  EXPECT_EQ(admitted->value("reason", ""), kEvicted);
  const auto events = EventsOf(c, kEvicted);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].value("message", "").find("(Preempted: Preempted to accommodate"),
            std::string::npos)
      << events[0].dump(2);
  EXPECT_EQ(events[0].value("type", ""), "Warning");
  EXPECT_EQ(c.Get(res::kJobs, kTrial)["spec"].value("suspend", false), true) << "the Job stays";

  // Looked at again while it waits: no second eviction.
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  EXPECT_EQ(Status(c).value("evictions", 0), 1);
  EXPECT_EQ(EventsOf(c, kEvicted).size(), 1u);
  EXPECT_FALSE(Status(c).contains("startTime")) << Status(c).dump(2);

  SetSuspend(c, false);
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  EXPECT_FALSE(Status(c).value("admissionTime", "").empty()) << Status(c).dump(2);
  EXPECT_TRUE(IsConditionTrue(Status(c)["conditions"], kAdmitted)) << Status(c).dump(2);
}

// waitForPodsReady evicted it until its requeuing limit, and Kueue deactivated the Workload: it
// is never admitted again on its own, so the trial fails, not retryable, and its Job goes.
TEST(TrialQueueTest, AWorkloadKueueDeactivatedFailsTheTrial) {
  FakeCluster c(/*detect_anomalies=*/false, RealTimeSource::Get(), KnowledgeAnalyzer());
  LaunchQueuedTrial(c);
  KueuePending(c, "The workload is deactivated",
               {"Deactivated",
                "The workload is deactivated due to exceeding the maximum number of re-queuing "
                "retries"},
               /*active=*/false);
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  const Json st = Status(c);
  ASSERT_EQ(st.value("phase", ""), "Failed") << st.dump(2);
  EXPECT_EQ(st["failure"].value("category", ""), "Unschedulable") << st["failure"].dump(2);
  EXPECT_FALSE(st["failure"].value("retryable", true));
  EXPECT_EQ(st["failure"].value("signature", ""), "kueue-deactivated");
  EXPECT_NE(st["failure"].value("summary", "").find("re-queuing retries"), std::string::npos)
      << st["failure"].dump(2);
  EXPECT_EQ(st["observed"].value("podReason", ""), kKueueDeactivated);
  EXPECT_FALSE(c.client.Get(res::kJobs, "ns", kTrial).ok()) << "the Job must be deleted";
}

// Evicted and admitted again while the operator was not looking (a restart): the Job's startTime,
// which Kubernetes resets on every resume, moved well past the admission recorded. Counted as an
// eviction, with one Evicted Warning, and the timeout counts from the new start.
TEST(TrialQueueTest, AnEvictionMissedBetweenTwoLooksIsCountedFromTheJobsStartTime) {
  FakeCluster c(/*detect_anomalies=*/false, RealTimeSource::Get(), KnowledgeAnalyzer());
  LaunchQueuedTrial(c);
  SetSuspend(c, false);
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  const std::string first = Status(c).value("admissionTime", "");
  ASSERT_FALSE(first.empty()) << Status(c).dump(2);
  Json job = c.Get(res::kJobs, kTrial);
  const std::string later =
      FormatRfc3339(std::chrono::system_clock::now() + std::chrono::minutes(5));
  job["status"]["startTime"] = later;
  ASSERT_TRUE(c.client.UpdateStatus(res::kJobs, job).ok());
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  const Json st = Status(c);
  EXPECT_EQ(st.value("evictions", 0), 1) << st.dump(2);
  EXPECT_EQ(st.value("admissionTime", ""), later) << st.dump(2);
  const auto events = EventsOf(c, kEvicted);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].value("type", ""), "Warning");
  // Looked at again: nothing more.
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  EXPECT_EQ(Status(c).value("evictions", 0), 1);
}

// GKE's Dynamic Workload Scheduler through Kueue's ProvisioningRequest admission check: quota is
// reserved, and the Workload waits for the check until the nodes are provisioned. The trial says
// so with the check's own message (Kueue copies the ProvisioningRequest's Provisioned condition
// message into it, pkg/controller/admissionchecks/provisioning/controller.go; the wording here is
// illustrative), instead of a bare "waiting".
TEST(TrialQueueTest, AWorkloadWaitingForItsAdmissionCheckSaysWhich) {
  FakeCluster c(/*detect_anomalies=*/false, RealTimeSource::Get(), KnowledgeAnalyzer());
  LaunchQueuedTrial(c);
  KueueWorkload(
      c,
      {{"conditions",
        {{{"type", "QuotaReserved"}, {"status", "True"}, {"reason", "QuotaReserved"}}}},
       {"admissionChecks",
        {{{"name", "dws-prov"},
          {"state", "Pending"},
          {"message", "Provisioning Request was successfully queued. ETA: 2026-11-30T09:00:00Z"}},
         {{"name", "other-check"}, {"state", "Ready"}, {"message", ""}}}}});
  ASSERT_TRUE(c.trial_reconciler->Reconcile({"ns", kTrial}).ok());
  const Json st = Status(c);
  EXPECT_EQ(st.value("phase", ""), "Pending") << st.dump(2);
  const Json* admitted = FindCondition(st["conditions"], kAdmitted);
  ASSERT_NE(admitted, nullptr) << st.dump(2);
  const std::string said = admitted->value("message", "");
  EXPECT_NE(said.find("dws-prov (Pending): Provisioning Request was successfully queued. ETA"),
            std::string::npos)
      << said;
  EXPECT_EQ(said.find("other-check"), std::string::npos) << "a Ready check is not waited for";
  EXPECT_TRUE(c.client.Get(res::kJobs, "ns", kTrial).ok()) << "the Job stays";
}

}  // namespace
}  // namespace paratune::controllers
