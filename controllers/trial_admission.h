// Queue admission of a trial (Kueue): a campaign with a queue creates its trial Jobs (or
// JobSets) suspended; Kueue admits one by setting spec.suspend false. This reads that from the
// workload and keeps the TrialRun status in step: condition Admitted, status.admissionTime and
// status.queueSeconds (the time between the workload's creation and its admission, which the
// trial timeout does not count). Pure function of the workload's wire JSON and the typed
// TrialRun status; thread-safe.
#ifndef PARATUNE_CONTROLLERS_TRIAL_ADMISSION_H_
#define PARATUNE_CONTROLLERS_TRIAL_ADMISSION_H_

#include <nlohmann/json.hpp>
#include <string>

#include "controllers/trial_run_status.h"

namespace paratune::controllers {

// Condition type of a TrialRun whose campaign names a queue.
inline constexpr const char* kAdmitted = "Admitted";
// Its reason (and the trial's Warning Event) when the workload is suspended again after an
// admission: Kueue's eviction (preemption, PodsReadyTimeout, ...).
inline constexpr const char* kEvicted = "Evicted";

struct AdmissionUpdate {
  bool queued = false;        // still suspended: the trial waits in its queue (phase Pending)
  bool admitted_now = false;  // admission recorded by this call (emit one Event)
  // The API server dropped spec.suspend (Kubernetes < 1.21): the workload started when created,
  // unqueued (admissionTime = creation, queueSeconds 0; a Warning, not an admission).
  bool suspend_unsupported = false;
  // Suspended again after an admission, recorded by this call (status.evictions counted, one
  // Event): the trial is queued again, or, when it was admitted again before it was seen
  // suspended, admitted_now too.
  bool evicted_now = false;
  std::string message;  // for the Event / condition
};

// `queue` is the campaign's queue ("" none: no-op). Updates `trial_status` in place: while the
// workload is suspended, Admitted=False/Queued; once it is not, admissionTime (the Job's
// status.startTime, which Kubernetes sets on resume, else `now_rfc3339`), queueSeconds
// (admissionTime - the workload's creationTimestamp, >= 0) and Admitted=True/Admitted, each
// recorded once per admission. Suspended again after an admission is an eviction: evictions
// counted, admissionTime cleared, Admitted=False/Evicted; the next admission adds its wait to
// queueSeconds and restarts the timeout, as Kubernetes restarts the Job's activeDeadlineSeconds
// (and Kubeflow Trainer a TrainJob's) on resume. A Job whose startTime moved past the recorded
// admission was evicted and admitted again between two looks: counted the same. A workload
// without spec.suspend at all comes from an API server that does not know the field: recorded
// as suspend_unsupported.
AdmissionUpdate ObserveAdmission(const nlohmann::json& workload, const std::string& queue,
                                 const std::string& now_rfc3339, TrialRunStatus* trial_status);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_TRIAL_ADMISSION_H_
