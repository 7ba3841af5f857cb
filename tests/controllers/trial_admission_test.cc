#include "controllers/trial_admission.h"

#include <gtest/gtest.h>

#include "controllers/conditions.h"
#include "controllers/trial_run_status.h"

namespace paratune::controllers {
namespace {

using nlohmann::json;

json Job(const json& spec, const json& status = json::object()) {
  return {{"metadata", {{"name", "t-t001"}, {"creationTimestamp", "2026-11-23T10:00:00Z"}}},
          {"spec", spec},
          {"status", status}};
}

TEST(TrialAdmissionTest, NoQueueLeavesTheStatusAlone) {
  TrialRunStatus status;
  const AdmissionUpdate u = ObserveAdmission(Job({{"suspend", true}}), "", "now", &status);
  EXPECT_FALSE(u.queued);
  EXPECT_EQ(ToJson(status), json::object());
}

TEST(TrialAdmissionTest, QueueTimeRunsFromCreationToTheJobsResumeTime) {
  TrialRunStatus status;
  AdmissionUpdate u =
      ObserveAdmission(Job({{"suspend", true}}), "q", "2026-11-23T10:01:00Z", &status);
  EXPECT_TRUE(u.queued);
  EXPECT_FALSE(IsConditionTrue(status.conditions, kAdmitted));
  EXPECT_FALSE(status.queue_seconds.has_value());
  // Resumed at 10:04:10 (Job status.startTime); observed a little later.
  u = ObserveAdmission(Job({{"suspend", false}}, {{"startTime", "2026-11-23T10:04:10Z"}}), "q",
                       "2026-11-23T10:04:12Z", &status);
  EXPECT_FALSE(u.queued);
  EXPECT_TRUE(u.admitted_now);
  EXPECT_EQ(status.admission_time, "2026-11-23T10:04:10Z");
  EXPECT_EQ(status.queue_seconds, 250);
  EXPECT_TRUE(IsConditionTrue(status.conditions, kAdmitted));
  // Recorded once: a later observation changes nothing.
  u = ObserveAdmission(Job({{"suspend", false}}, {{"startTime", "2026-11-23T10:04:10Z"}}), "q",
                       "2026-11-23T10:09:00Z", &status);
  EXPECT_FALSE(u.admitted_now);
  EXPECT_EQ(status.queue_seconds, 250);
}

TEST(TrialAdmissionTest, WithoutAStartTimeTheObservationTimeCounts) {
  TrialRunStatus status;
  ObserveAdmission(Job({{"suspend", false}}), "q", "2026-11-23T10:00:30Z", &status);
  EXPECT_EQ(status.admission_time, "2026-11-23T10:00:30Z");
  EXPECT_EQ(status.queue_seconds, 30);
}

// Kueue evicts an admitted workload (preemption, PodsReadyTimeout, ...) by suspending it again:
// the admission is cleared and counted, and the next one adds its wait and restarts the timeout.
TEST(TrialAdmissionTest, AnEvictionClearsTheAdmissionAndTheNextOneAddsItsWait) {
  TrialRunStatus status;
  ObserveAdmission(Job({{"suspend", true}}), "q", "2026-11-23T10:01:00Z", &status);
  ObserveAdmission(Job({{"suspend", false}}, {{"startTime", "2026-11-23T10:04:10Z"}}), "q",
                   "2026-11-23T10:04:12Z", &status);
  ASSERT_EQ(status.queue_seconds, 250);
  status.start_time = "2026-11-23T10:04:15Z";  // its pods started (the trial reconciler's)
  AdmissionUpdate u =
      ObserveAdmission(Job({{"suspend", true}}, {{"startTime", "2026-11-23T10:04:10Z"}}), "q",
                       "2026-11-23T10:20:00Z", &status);
  EXPECT_TRUE(u.queued);
  EXPECT_TRUE(u.evicted_now);
  EXPECT_EQ(status.evictions, 1);
  EXPECT_FALSE(status.admission_time.has_value());
  EXPECT_FALSE(status.start_time.has_value()) << "the next run's pods set it again";
  const json* admitted = FindCondition(status.conditions, kAdmitted);
  ASSERT_NE(admitted, nullptr);
  EXPECT_EQ(admitted->value("reason", ""), kEvicted);
  EXPECT_EQ(admitted->value("status", ""), "False");
  EXPECT_NE(u.message.find("2026-11-23T10:04:10Z"), std::string::npos) << u.message;
  // Still suspended a minute later: one eviction, not two.
  u = ObserveAdmission(Job({{"suspend", true}}), "q", "2026-11-23T10:21:00Z", &status);
  EXPECT_FALSE(u.evicted_now);
  EXPECT_EQ(status.evictions, 1);
  // Admitted again at 10:23:00 (Kubernetes resets startTime on resume): 180 s more in the queue.
  u = ObserveAdmission(Job({{"suspend", false}}, {{"startTime", "2026-11-23T10:23:00Z"}}), "q",
                       "2026-11-23T10:23:01Z", &status);
  EXPECT_TRUE(u.admitted_now);
  EXPECT_FALSE(u.evicted_now);
  EXPECT_EQ(status.admission_time, "2026-11-23T10:23:00Z");
  EXPECT_EQ(status.queue_seconds, 250 + 180);
  EXPECT_TRUE(IsConditionTrue(status.conditions, kAdmitted));
  EXPECT_NE(u.message.find("admitted again"), std::string::npos) << u.message;
}

// Evicted and admitted again between two looks: the Job's startTime moved past the admission.
TEST(TrialAdmissionTest, AJobResumedAgainUnseenCountsAsAnEviction) {
  TrialRunStatus status;
  ObserveAdmission(Job({{"suspend", false}}, {{"startTime", "2026-11-23T10:04:10Z"}}), "q",
                   "2026-11-23T10:04:12Z", &status);
  // A startTime a few seconds after the admission the operator recorded is the same resume.
  AdmissionUpdate u =
      ObserveAdmission(Job({{"suspend", false}}, {{"startTime", "2026-11-23T10:04:40Z"}}), "q",
                       "2026-11-23T10:05:00Z", &status);
  EXPECT_FALSE(u.evicted_now);
  EXPECT_FALSE(status.evictions.has_value());
  u = ObserveAdmission(Job({{"suspend", false}}, {{"startTime", "2026-11-23T10:30:00Z"}}), "q",
                       "2026-11-23T10:30:05Z", &status);
  EXPECT_TRUE(u.evicted_now);
  EXPECT_TRUE(u.admitted_now);
  EXPECT_EQ(status.evictions, 1);
  EXPECT_EQ(status.admission_time, "2026-11-23T10:30:00Z");
  EXPECT_EQ(status.queue_seconds, 250);  // the unseen wait is unknown: not added
}

// Kubernetes 1.20 (the local control plane) drops spec.suspend: the Job ran unqueued.
TEST(TrialAdmissionTest, ApiServerWithoutSuspendIsReportedNotMistakenForAnAdmission) {
  TrialRunStatus status;
  const AdmissionUpdate u =
      ObserveAdmission(Job(json::object()), "q", "2026-11-23T10:02:00Z", &status);
  EXPECT_TRUE(u.suspend_unsupported);
  EXPECT_EQ(status.queue_seconds, 0);
  EXPECT_EQ(status.admission_time, "2026-11-23T10:00:00Z");
  EXPECT_EQ(FindCondition(status.conditions, kAdmitted)->value("reason", ""), "SuspendUnsupported");
}

}  // namespace
}  // namespace paratune::controllers
