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
  u = ObserveAdmission(Job({{"suspend", false}}, {{"startTime", "2026-11-23T10:09:00Z"}}), "q",
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
