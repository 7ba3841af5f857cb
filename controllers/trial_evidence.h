// Reading a trial's Job and pods: whether the Job finished, what its pods left behind
// (termination messages, terminated reasons, exit codes), where they ran, and whether they are
// stuck unschedulable. Pure functions on wire JSON; thread-safe.
#ifndef PARATUNE_CONTROLLERS_TRIAL_EVIDENCE_H_
#define PARATUNE_CONTROLLERS_TRIAL_EVIDENCE_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/time_source.h"

namespace paratune::controllers {

struct WorkloadState {
  enum class Phase { kActive, kSucceeded, kFailed };
  Phase phase = Phase::kActive;
  std::string reason;  // Job condition reason: DeadlineExceeded, BackoffLimitExceeded, ...
  std::string message;
};

// The state of a batch/v1 Job or a JobSet from its status conditions.
WorkloadState ReadWorkloadState(const nlohmann::json& workload);

// What the pods of a trial show. The "lead" pod is completion index 0 (or the first pod).
struct PodEvidence {
  std::string termination_message;  // the lead container's (JSON, or the log tail on error)
  std::string pod_reason;           // OOMKilled, Error, Evicted, ImagePullBackOff, ...
  int exit_code = 0;
  std::string failed_pod;  // the pod the evidence comes from
  std::string container;   // its first container's name
  std::vector<std::string> node_names;
  bool any_running = false;
  bool any_finished = false;             // a pod in phase Succeeded or Failed
  std::optional<SystemTime> start_time;  // earliest pod start
};

// Reads the trial's pods (any order). Prefers a failed pod for the failure evidence and the
// lead pod otherwise.
PodEvidence ReadPods(const std::vector<nlohmann::json>& pods);

// The message of the pod's first terminated container ("" when none has terminated or it wrote
// none).
std::string TerminationMessageOf(const nlohmann::json& pod);

// How long the trial's pods held their devices, in seconds: from the earliest pod start to the
// latest container finish, or to `now` while a pod has not finished (0 when no pod started).
double PodsWallSeconds(const std::vector<nlohmann::json>& pods, SystemTime now);

// The longest time a pod has been Pending with PodScheduled=False/Unschedulable, as of `now`
// (zero when none is), the scheduler's message and (when `pod` is given) that pod.
Millis UnschedulableFor(const std::vector<nlohmann::json>& pods, SystemTime now,
                        std::string* message, const nlohmann::json** pod = nullptr);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_TRIAL_EVIDENCE_H_
