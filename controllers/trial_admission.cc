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
    u.message = "waiting for Kueue to admit it from LocalQueue " + queue +
                (created.empty() ? "" : " (queued since " + created + ")");
    SetCondition(&status->conditions, kAdmitted, false, "Queued", u.message, 0, now);
    return u;
  }
  if (status->admission_time) return u;
  // We create it with spec.suspend: true; an API server that does not know the field (Job
  // suspension is Kubernetes >= 1.21) drops it, and the Job started at once.
  const bool unsupported = !suspend.is_boolean();
  std::string admitted = unsupported ? created : StringAt(workload, "status", "startTime");
  SystemTime t_created, t_admitted;
  const bool have_created = ParseRfc3339(created, &t_created);
  if (!ParseRfc3339(admitted, &t_admitted) || (have_created && t_admitted < t_created)) {
    admitted = now;
    ParseRfc3339(now, &t_admitted);
  }
  int64_t queued_s = 0;
  if (have_created) {
    queued_s = std::chrono::duration_cast<std::chrono::seconds>(t_admitted - t_created).count();
    if (queued_s < 0) queued_s = 0;
  }
  status->admission_time = admitted;
  status->queue_seconds = queued_s;
  u.admitted_now = true;
  u.suspend_unsupported = unsupported;
  u.message = unsupported
                  ? "not held for LocalQueue " + queue +
                        ": this cluster's API dropped spec.suspend (Job suspension needs "
                        "Kubernetes >= 1.21), so it started when created"
                  : "admitted from LocalQueue " + queue + " after " + std::to_string(queued_s) +
                        " s in the queue; the trial timeout counts from " + admitted;
  SetCondition(&status->conditions, kAdmitted, true,
               unsupported ? "SuspendUnsupported" : "Admitted", u.message, 0, now);
  return u;
}

}  // namespace paratune::controllers
