// TrialRunReconciler: drives one TrialRun through its Job (contract sections 4 and 5).
//   Pending, no Job -> renders the Job (and headless Service / JobSet) and creates it.
//   Job running      -> phase Running, startTime, nodeNames.
//   Job complete     -> metrics from the termination message, else the pod log via the
//                       campaign's collector -> phase Succeeded (objective, metrics); logged
//                       step times that drift or spike -> status.anomaly (contract section 10).
// Every Job gets a required node anti-affinity against the ledger's suspect nodes at launch
// time and the TrialRun's spec.avoidNodes.
//   Job failed, or pods unschedulable too long -> gathers the evidence (termination message,
//                       log tail, pod reason such as OOMKilled, exit code, scheduling events,
//                       Job condition), runs the Diagnostician -> phase Failed, status.failure.
// Finished trials are left alone. Level-based and idempotent: every call re-reads the caches;
// names are deterministic so a restart never makes a second Job. Thread-safe for different
// keys (the Controller never runs one key twice at once).
#ifndef PARATUNE_CONTROLLERS_TRIAL_RECONCILER_H_
#define PARATUNE_CONTROLLERS_TRIAL_RECONCILER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/loop/failure_analyzer.h"
#include "operator/controller.h"
#include "operator/event_recorder.h"
#include "operator/informer.h"
#include "operator/kube_client.h"
#include "operator/time_source.h"

namespace paratune::controllers {

struct TrialReconcilerOptions {
  bool jobset_available = false;
  std::string default_image = "paratune/paratune:latest";
  // A trial whose pods cannot be scheduled for this long fails as Unschedulable.
  kube::Millis unschedulable_after{180000};
  int64_t log_tail_lines = 400;
  // The node ledger's suspect nodes at launch time (every new Job gets a required node
  // anti-affinity against them). Null: none. An error is logged and launches without them.
  std::function<Result<std::vector<std::string>>()> suspect_nodes;
  // Administrator policy re-checked before a Job is created (a TrialRun may be made by hand):
  // kInvalidArgument fails the trial as PolicyRefused with its message; other errors retry.
  std::function<Status(const std::string& ns, const CampaignSpec& spec)> admit;
};

// The caches the reconciler reads. Borrowed; they must outlive it.
struct TrialInformers {
  kube::Informer* trials = nullptr;
  kube::Informer* campaigns = nullptr;
  kube::Informer* jobs = nullptr;
  kube::Informer* pods = nullptr;
};

class TrialRunReconciler : public kube::Reconciler {
 public:
  // Borrows everything; `recorder` may be null.
  TrialRunReconciler(kube::KubeClient* client, TrialInformers informers,
                     kube::EventRecorder* recorder, const FailureAnalyzer* analyzer,
                     kube::TimeSource* time, TrialReconcilerOptions opts);
  Result<kube::ReconcileResult> Reconcile(const kube::ObjectKey& key) override;

 private:
  struct Context;
  Result<kube::ReconcileResult> Launch(Context& ctx);
  Result<kube::ReconcileResult> Observe(Context& ctx, const kube::Json& workload);
  Result<kube::ReconcileResult> Succeed(Context& ctx);
  Result<kube::ReconcileResult> Fail(Context& ctx, const std::string& reason,
                                     const std::string& message);
  Result<kube::Json> GetWorkload(const Context& ctx);
  std::string LogTail(const kube::Json& pod, const std::string& container);
  std::vector<std::string> PodEvents(const kube::Json& pod);
  Status WriteStatus(Context& ctx);
  std::vector<std::string> AvoidList(const Context& ctx);
  void DetectStepTimeAnomaly(Context& ctx, const std::vector<double>& step_times);

  kube::KubeClient* client_;
  TrialInformers informers_;
  kube::EventRecorder* recorder_;
  const FailureAnalyzer* analyzer_;
  kube::TimeSource* time_;
  TrialReconcilerOptions opts_;
};

// JobSet API (jobset.x-k8s.io/v1alpha2 jobsets), used when discovery finds it.
inline const kube::GroupVersionResource kJobSets{"jobset.x-k8s.io", "v1alpha2", "jobsets", true,
                                                 "JobSet"};

// True for the phases a trial never leaves (Succeeded, Failed, Rejected).
bool IsTerminalTrialPhase(const std::string& phase);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_TRIAL_RECONCILER_H_
