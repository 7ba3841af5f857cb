// Reading a trial's Job and pods: whether the Job finished, what its pods left behind
// (termination messages, terminated reasons, exit codes), where they ran, and whether they are
// stuck unschedulable. The pods' JSON is read once into TrialPods; everything after reads the
// typed view. Pure functions; thread-safe.
#ifndef PARATUNE_CONTROLLERS_TRIAL_EVIDENCE_H_
#define PARATUNE_CONTROLLERS_TRIAL_EVIDENCE_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
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

// One pod of a trial, read from its wire JSON once (ReadTrialPods): all that the reconciler and
// the metrics reading use of it.
struct TrialPod {
  std::string name;
  std::string ns;
  std::string container;  // its first container's name (the trial's: its log is the one read)
  std::string node_name;  // "" until scheduled
  std::string phase;      // Kubernetes' pod phase (Pending, Running, Succeeded, Failed)
  // Its node rank: the Indexed Job completion index (annotation, or the label Kubernetes 1.28+
  // also sets), -1 when it has none (a single-pod Job).
  int64_t rank = -1;
  bool lead = false;  // completion index annotation 0, or none: the trial's lead pod
  // Its first terminated container (JSON, or the log tail on error), "" when none terminated.
  std::string termination_message;
  int exit_code = 0;  // that container's
  // The pod shows a failure: phase Failed, a non-zero exit or OOMKilled, an image or container
  // configuration that cannot start.
  bool failed = false;
  std::string pod_reason;  // when failed: OOMKilled, Error, Evicted, ImagePullBackOff, ...
  std::optional<SystemTime> start_time;
  std::optional<SystemTime> finished_at;  // its containers' latest finish, when one finished
  bool deleting = false;                  // it has a deletionTimestamp
  // Being deleted while another pod of its rank is not: an earlier run's, on its way out (a run
  // Kueue evicted, whose pods the Job controller replaces at once on resume; a JobSet restart).
  // Not this run's: its log, times and node are left out of what the trial shows.
  bool replaced = false;
  // Its PodScheduled=False/Unschedulable conditions while Pending: since when, and the
  // scheduler's message.
  std::vector<std::pair<SystemTime, std::string>> unschedulable;
};

// What the pods of a trial show, read in one pass over their JSON.
struct TrialPods {
  std::vector<TrialPod> pods;           // in the order given
  std::vector<std::string> node_names;  // sorted, distinct
  bool any_running = false;
  bool any_finished = false;             // a pod in phase Succeeded or Failed
  std::optional<SystemTime> start_time;  // earliest pod start
  // Indexes into `pods` in the order their failure evidence is preferred: the failed pods by the
  // time they finished (the first to fail is the cause; the pods failing after it are mostly its
  // victims: peers timing out in a collective, or pods the Job controller deleted when the Job
  // failed; in the same second, one not being deleted first: finishedAt has whole seconds), then
  // failed pods that never finished a container, then the lead pod (the first with completion
  // index 0, else the first pod), then the rest in the order given. A pod whose log is gone
  // (deleted since it was listed) gives way to the next.
  std::vector<size_t> evidence_order;

  // The pod the failure evidence comes from: the first of evidence_order (an empty pod when
  // there are no pods).
  const TrialPod& Evidence() const;
};

// Reads the trial's pods (any order).
TrialPods ReadTrialPods(const std::vector<nlohmann::json>& pods);

// How long the trial's pods held their devices, in seconds: from the earliest pod start to the
// latest container finish, or to `now` while a pod has not finished (0 when no pod started).
double WallSeconds(const TrialPods& pods, SystemTime now);

// Whether a failed read of `pod`'s log is worth another try: the API server's proxy to the
// kubelet answered 5xx / 429 or timed out (kUnavailable, kDeadlineExceeded), and the pod finished
// less than kLogRetryWindow before `now` (its log is what the trial's diagnosis and metrics come
// from). A pod whose log is gone (NotFound), that never finished, or that finished longer ago is
// read as it is: the trial does not wait for ever on a node that no longer answers.
inline constexpr Millis kLogRetryWindow{60000};
bool ShouldRetryLogRead(const Status& read, const TrialPod& pod, SystemTime now);

// The longest time a pod has been Pending with PodScheduled=False/Unschedulable, as of `now`
// (zero when none is), the scheduler's message and (when `which` is given) that pod's index.
Millis UnschedulableFor(const TrialPods& pods, SystemTime now, std::string* message,
                        size_t* which = nullptr);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_TRIAL_EVIDENCE_H_
