// TrialRunReconciler: drives one TrialRun through its Job (contract sections 4 and 5).
//   Pending, no Job -> renders the Job (and headless Service / JobSet / TrainJob) and creates it.
//                       JobSets and TrainJobs are not watched: read every 10 s; a TrainJob's
//                       pods are the trainer pods of the JobSet Trainer makes of it, labelled
//                       with the trial through its runtime patch.
//   Job running      -> phase Running, startTime, nodeNames, jobName, JobCreated. A Job whose
//                       pods start within first_status_wait of its creation gets this as its
//                       first status write; one still waiting then is written Pending with
//                       jobName and JobCreated (one status write per trial less, issue 17).
//   Job complete     -> metrics from a termination message of any pod, else the logs of the
//                       pods the framework prints throughput on (trial_metrics.h: Megatron-LM
//                       the last rank, MaxText / torchtitan / transformers rank 0) via the
//                       campaign's collector -> phase Succeeded (objective, metrics,
//                       metricsSource naming the pod and rank); logged step times that drift
//                       or spike -> status.anomaly (contract section 10).
//   Job running      -> with spec.budget.earlyStopping, the log is read every
//                       early_stop_interval; a trial that cannot beat the campaign's best
//                       (early_stopping.h) is ended EarlyStopped with its partial metrics and
//                       the evidence (status.earlyStop), then its Job is deleted.
// Every finished trial records status.acceleratorHours (devices x wall time of its pods).
// Every Job gets a required node anti-affinity against the ledger's suspect nodes at launch
// time and the TrialRun's spec.avoidNodes.
//   Job queued (Kueue) -> phase Pending, Admitted=False with Kueue's reason (its Workload's
//                       QuotaReserved message, read every kueue_check_interval); a workload Kueue
//                       can never admit (request above any quota, resource not in the
//                       ClusterQueue, missing queue) -> its Job deleted, Failed as Unschedulable.
//   Past spec.budget.trialTimeout + deadline_grace counted from admission (queue time is not
//                       trial time) -> its Job/JobSet is deleted, Failed as Timeout.
//   Pods no node of the cluster could ever run (node_fit.h: labels, taints, allocatable) ->
//                       after infeasible_after, Failed as Unschedulable, not retryable, the
//                       summary counting the nodes by reason; its Job deleted.
//   Job failed, or pods unschedulable too long -> gathers the evidence (termination message,
//                       log tail, pod reason such as OOMKilled, exit code, scheduling events,
//                       Job condition), runs the Diagnostician over the site's knowledge and
//                       the campaign's knowledge ConfigMaps -> phase Failed, status.failure.
// Finished trials are left alone. Level-based and idempotent: every call re-reads the caches;
// names are deterministic so a restart never makes a second Job. Thread-safe for different
// keys (the Controller never runs one key twice at once).
#ifndef PARATUNE_CONTROLLERS_TRIAL_RECONCILER_H_
#define PARATUNE_CONTROLLERS_TRIAL_RECONCILER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agents/collectors/metric_collector.h"
#include "agents/core/campaign.h"
#include "agents/trials/early_stopping.h"
#include "base/time_source.h"
#include "controllers/campaign_knowledge.h"
#include "controllers/node_fit.h"
#include "controllers/trial_evidence.h"
#include "controllers/trial_run_spec.h"
#include "controllers/trial_run_status.h"
#include "operator/controller.h"
#include "operator/event_recorder.h"
#include "operator/kube_client.h"
#include "operator/object_reader.h"

namespace paratune::controllers {

struct TrialReconcilerOptions {
  bool jobset_available = false;
  std::string default_image = "paratune/paratune:latest";
  // A trial whose pods cannot be scheduled for this long fails as Unschedulable.
  Millis unschedulable_after{180000};
  // The cluster's nodes (node_fit.h), null: not judged. A pod Unschedulable for infeasible_after
  // that no node could ever run (too few devices or too little memory on every node, labels or
  // taints no node has), with no scale-up triggered for it, fails its trial at once (not
  // retryable); at unschedulable_after, one that nodes could run when their capacity frees is
  // retryable whatever else the scheduler's message says.
  ClusterNodes* cluster_nodes = nullptr;
  Millis infeasible_after{60000};
  // The operator's own bound on a trial: spec.budget.trialTimeout counted from admission
  // (status.admissionTime; the workload's creation when unqueued) plus this grace. The Job's
  // activeDeadlineSeconds normally ends it first; this one also ends a JobSet, a resumed Job
  // on a cluster that does not restart its deadline, and a workload nobody runs.
  Millis deadline_grace{10000};
  int64_t log_tail_lines = 400;
  // Bytes of one pod log read at most (the pod log API's limitBytes).
  int64_t log_limit_bytes = 256 * 1024;
  // Pod logs read at most per finished trial (the framework's metrics rank first, issue 13).
  size_t max_log_reads = 8;
  // Early stopping (spec.budget.earlyStopping): a running trial's log is read this often, and
  // the rule of early_stopping.h decides. Zero turns polling off for every campaign.
  Millis early_stop_interval{30000};
  EarlyStopOptions early_stop;
  // The node ledger's suspect nodes at launch time (every new Job gets a required node
  // anti-affinity against them). Null: none. An error is logged and launches without them.
  std::function<Result<std::vector<std::string>>()> suspect_nodes;
  // Administrator policy re-checked before a Job is created (a TrialRun may be made by hand):
  // kInvalidArgument fails the trial as PolicyRefused with its message; other errors retry.
  std::function<Status(const std::string& ns, const CampaignSpec& spec)> admit;
  // How the owning campaign is parsed (the same options as the campaign reconciler's).
  CampaignParseOptions parse;
  // A new Job's TrialRun status (Pending, jobName, JobCreated) waits this long for its pods to
  // start, to go out as Running in the same write. Zero: written when the Job is created.
  Millis first_status_wait{10000};
  // A queued trial's Kueue Workload is read (one LIST) this often while it waits: its
  // QuotaReserved message becomes the Admitted condition's, and one Kueue can never admit fails
  // the trial as Unschedulable (reason Inadmissible).
  Millis kueue_check_interval{60000};
};

// The caches the reconciler reads. Borrowed; they must outlive it.
struct TrialInformers {
  kube::ObjectReader* trials = nullptr;
  kube::ObjectReader* campaigns = nullptr;
  kube::ObjectReader* jobs = nullptr;
  kube::ObjectReader* pods = nullptr;
};

class TrialRunReconciler : public kube::Reconciler {
 public:
  // Borrows everything; `recorder` may be null.
  TrialRunReconciler(kube::KubeClient* client, TrialInformers informers,
                     kube::EventRecorder* recorder, const CampaignKnowledge* knowledge,
                     TimeSource* time, TrialReconcilerOptions opts);
  Result<kube::ReconcileResult> Reconcile(const kube::ObjectKey& key) override;

 private:
  struct Context;
  Result<kube::ReconcileResult> Launch(Context& ctx);
  Result<kube::ReconcileResult> Observe(Context& ctx, const kube::Json& workload);
  Result<kube::ReconcileResult> Succeed(Context& ctx);
  // Reads a running trial's log and stops it when it cannot beat the campaign's best (defined
  // in trial_early_stop.cc). True when it stopped the trial (its status is then written).
  Result<bool> MaybeStopEarly(Context& ctx, const kube::Json& workload);
  // Deletes the trial's Job or JobSet (background propagation: its pods go too).
  Status DeleteWorkload(const Context& ctx, const std::string& kind, const std::string& name);
  // Time left before the trial's own deadline (TrialReconcilerOptions::deadline_grace);
  // kNoDeadline without a timeout or a start time.
  static constexpr Millis kNoDeadline = Millis::max();
  Millis DeadlineIn(const Context& ctx, const kube::Json& workload) const;
  // How much longer a new workload's first status waits for its pods (<= 0: no longer).
  Millis FirstStatusIn(const kube::Json& workload) const;
  // Sets the JobCreated condition unless it is there (`when`: the workload's creation).
  static void NoteJobCreated(Context& ctx, const std::string& kind, const std::string& when);
  // The bounded, UTF-8 safe log of the trial container of `pod` ("" when it cannot be read).
  // When `retry` is given, it is set if the read failed in a way that reading again soon can
  // mend (ShouldRetryLogRead): the caller then returns an error so that the reconcile is retried
  // with backoff instead of ending the trial without its log. When `gone` is given, it is set
  // if the API server no longer has the pod (NotFound: deleted since the pods were listed).
  std::string PodLog(const TrialPod& pod, bool* retry = nullptr, bool* gone = nullptr);
  Result<kube::ReconcileResult> Fail(Context& ctx, const std::string& reason,
                                     const std::string& message);
  // True when the campaign's diagnosis of Kueue's QuotaReserved message is Unschedulable and
  // not retryable (waiting cannot get the trial admitted).
  bool NeverAdmissible(const Context& ctx, const std::string& kueue_message);
  Result<kube::Json> GetWorkload(const Context& ctx);
  std::vector<std::string> PodEvents(const TrialPod& pod);
  // `pod` judged against the cluster's nodes (nothing without them: no ClusterNodes, Forbidden,
  // a list that failed).
  std::optional<PodFit> JudgeAgainstNodes(const kube::Json& pod);
  // Ends the trial (its phase and outcome already set): completionTime, acceleratorHours (devices
  // x its pods' wall time), the Completed condition with `reason` and `message`; then
  // WriteStatus. Done: nothing to requeue.
  Result<kube::ReconcileResult> Finish(Context& ctx, const std::string& reason,
                                       const std::string& message);
  // Records the Events this reconcile decided (Context::events), then writes its status (one
  // patch; none when it is unchanged).
  Status WriteStatus(Context& ctx);
  std::vector<std::string> AvoidList(const Context& ctx);

  kube::KubeClient* client_;
  TrialInformers informers_;
  kube::EventRecorder* recorder_;
  const CampaignKnowledge* knowledge_;  // the failure analyzer of each trial's campaign
  TimeSource* time_;
  TrialReconcilerOptions opts_;
};

// Everything one reconcile of one trial knows.
struct TrialRunReconciler::Context {
  // An Event this reconcile decided, recorded with its status write (WriteStatus).
  struct PendingEvent {
    bool on_campaign = false;  // on the TuningCampaign (when cached), else on the TrialRun
    std::string type;          // "Normal" or "Warning"
    std::string reason;
    std::string message;
  };
  kube::ObjectKey key;              // the TrialRun's namespace and name
  kube::Json trial;                 // the cached TrialRun (a copy; WriteStatus sets its status)
  kube::Json original_status;       // its status as read (the base of the status patch)
  TrialRunStatus original;          // the same, typed
  TrialRunStatus status;            // what this reconcile writes (starts as `original`)
  kube::Json campaign_status;       // the campaign's status (best objective for early stopping)
  kube::ObjectPtr campaign_object;  // the cached TuningCampaign (Events about all its trials)
  CampaignSpec campaign;
  TrialRunSpec spec;                    // the TrialRun's spec, typed
  std::vector<kube::Json> pod_objects;  // the trial's pods as cached (judged against the nodes)
  TrialPods pods;                       // the same, read once (trial_evidence.h)
  std::string now;
  std::optional<PodFit> node_fit;  // an Unschedulable pod judged against the cluster's nodes
  std::vector<PendingEvent> events;
};

// JobSet API (jobset.x-k8s.io/v1alpha2 jobsets), used when discovery finds it.
inline const kube::GroupVersionResource kJobSets{"jobset.x-k8s.io", "v1alpha2", "jobsets", true,
                                                 "JobSet"};
// Kubeflow Trainer v2 (trainer.kubeflow.org/v1alpha1 trainjobs), used when the campaign's
// trialTemplate is a TrainJob (controllers/trainjob_renderer.h).
inline const kube::GroupVersionResource kTrainJobs{"trainer.kubeflow.org", "v1alpha1", "trainjobs",
                                                   true, "TrainJob"};
// The resource of a trial workload kind ("Job", "JobSet", "TrainJob").
const kube::GroupVersionResource& WorkloadResource(const std::string& kind);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_TRIAL_RECONCILER_H_
