#include "controllers/trial_admission.h"

#include <chrono>

#include "base/json_fields.h"
#include "base/time_source.h"
#include "controllers/conditions.h"

namespace paratune::controllers {

namespace {

using nlohmann::json;

std::string StringAt(const json& obj, const char* section, const char* key) {
  const json& s = ObjectField(obj, section);
  const json& v = s.value(key, json());
  return v.is_string() ? v.get<std::string>() : "";
}

}  // namespace

AdmissionUpdate ObserveAdmission(const json& workload, const std::string& queue,
                                 const std::string& now, TrialRunStatus* status) {
  AdmissionUpdate u;
  if (queue.empty()) return u;
  const json& spec = ObjectField(workload, "spec");
  const std::string created = StringAt(workload, "metadata", "creationTimestamp");
  const json& suspend = spec.value("suspend", json());
  if (suspend.is_boolean() && suspend.get<bool>()) {
    u.queued = true;
    if (status->admission_time) {
      // Suspended again after its admission: Kueue evicts an admitted workload by suspending it
      // (jobframework/reconciler.go stopJob; KEP-83 workload preemption), and the Job controller
      // then deletes its pods (KEP-2232). It starts over once admitted again.
      u.evicted_now = true;
      status->evictions = status->evictions.value_or(0) + 1;
      u.message = "suspended again after its admission at " + *status->admission_time +
                  " (Kueue evicts an admitted workload by suspending it: preemption, "
                  "PodsReadyTimeout, node failures, a stopped queue); its pods are stopped, and "
                  "it runs again from the start once LocalQueue " +
                  queue + " admits it again, the trial timeout counting from then";
      status->admission_time.reset();
      // The stopped run's pods go: startTime (their earliest start) is the next run's, so the
      // accelerator-hours of an open trial do not count the wait in the queue.
      status->start_time.reset();
      SetCondition(&status->conditions, kAdmitted, false, kEvicted, u.message, 0, now);
      return u;
    }
    u.message = "waiting for Kueue to admit it from LocalQueue " + queue +
                (created.empty() ? "" : " (queued since " + created + ")");
    SetCondition(&status->conditions, kAdmitted, false, "Queued", u.message, 0, now);
    return u;
  }
  // We create it with spec.suspend: true; an API server that does not know the field (Job
  // suspension is Kubernetes >= 1.21) drops it, and the Job started at once.
  const bool unsupported = !suspend.is_boolean();
  // A Job's status.startTime is reset whenever it resumes (KEP-2232); JobSets and TrainJobs have
  // none, and their admission is the time it is first seen.
  std::string admitted = unsupported ? created : StringAt(workload, "status", "startTime");
  SystemTime t_admitted;
  const bool have_start = ParseRfc3339(admitted, &t_admitted);
  if (status->admission_time) {
    // Evicted and admitted again between two looks (an operator restart, say): the Job resumed
    // well after the admission recorded. The margin keeps a startTime the Job controller wrote
    // a little after the operator saw the resume (and recorded its own clock) from counting.
    constexpr std::chrono::seconds kResumedAgainAfter{60};
    SystemTime t_recorded;
    if (unsupported || !have_start || !ParseRfc3339(*status->admission_time, &t_recorded) ||
        t_admitted <= t_recorded + kResumedAgainAfter) {
      return u;
    }
    status->evictions = status->evictions.value_or(0) + 1;
    status->admission_time = admitted;
    u.evicted_now = u.admitted_now = true;
    u.message = "suspended again and admitted again from LocalQueue " + queue + " at " + admitted +
                " (eviction " + std::to_string(*status->evictions) +
                "); it runs again from the start, the trial timeout counting from then";
    SetCondition(&status->conditions, kAdmitted, true, "Admitted", u.message, 0, now);
    return u;
  }
  // The wait runs from the workload's creation, or, after an eviction, from when it was seen
  // suspended again (the Admitted condition's transition to False).
  const bool readmission = status->evictions.value_or(0) > 0;
  std::string queued_from = created;
  if (readmission) {
    const json* c = FindCondition(status->conditions, kAdmitted);
    if (c != nullptr && c->value("status", "") == "False") {
      queued_from = c->value("lastTransitionTime", created);
    }
  }
  SystemTime t_from;
  const bool have_from = ParseRfc3339(queued_from, &t_from);
  if (!have_start || (have_from && t_admitted < t_from)) {
    admitted = now;
    ParseRfc3339(now, &t_admitted);
  }
  int64_t queued_s = 0;
  if (have_from) {
    queued_s = std::chrono::duration_cast<std::chrono::seconds>(t_admitted - t_from).count();
    if (queued_s < 0) queued_s = 0;
  }
  status->admission_time = admitted;
  status->queue_seconds = (readmission ? status->queue_seconds.value_or(0) : 0) + queued_s;
  u.admitted_now = true;
  u.suspend_unsupported = unsupported;
  u.message = unsupported ? "not held for LocalQueue " + queue +
                                ": this cluster's API dropped spec.suspend (Job suspension needs "
                                "Kubernetes >= 1.21), so it started when created"
                          : std::string(readmission ? "admitted again" : "admitted") +
                                " from LocalQueue " + queue + " after " + std::to_string(queued_s) +
                                " s in the queue; the trial timeout counts from " + admitted;
  SetCondition(&status->conditions, kAdmitted, true,
               unsupported ? "SuspendUnsupported" : "Admitted", u.message, 0, now);
  return u;
}

}  // namespace paratune::controllers
