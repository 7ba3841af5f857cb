#include "controllers/trial_reconciler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>

#include "agents/collectors/metric_collector.h"
#include "agents/core/campaign.h"
#include "agents/core/failure_category.h"
#include "agents/health/anomaly.h"
#include "agents/model/workload.h"
#include "agents/session/tuning_session.h"
#include "base/json_fields.h"
#include "base/utf8.h"
#include "controllers/accelerator_hours.h"
#include "controllers/collectors/log_sources.h"
#include "controllers/conditions.h"
#include "controllers/job_renderer.h"
#include "controllers/kueue_workload.h"
#include "controllers/status_writer.h"
#include "controllers/trial_admission.h"
#include "controllers/trial_evidence.h"
#include "controllers/trial_metrics.h"

namespace paratune::controllers {

namespace {

using kube::Json;
namespace res = kube::resources;

constexpr size_t kMaxObservedText = 8 * 1024;
constexpr char kPodsByTrial[] = "pods-by-trial";

}  // namespace

TrialRunReconciler::TrialRunReconciler(kube::KubeClient* client, TrialInformers informers,
                                       kube::EventRecorder* recorder,
                                       const CampaignKnowledge* knowledge, TimeSource* time,
                                       TrialReconcilerOptions opts)
    : client_(client),
      informers_(informers),
      recorder_(recorder),
      knowledge_(knowledge),
      time_(time),
      opts_(std::move(opts)) {
  // A trial's pods by "<ns>/<trial>": no scan of the namespace's pods per reconcile.
  if (informers_.pods != nullptr) {
    informers_.pods->AddIndex(kPodsByTrial, kube::LabelIndex(kTrialLabel));
  }
}

Result<kube::ReconcileResult> TrialRunReconciler::Reconcile(const kube::ObjectKey& key) {
  kube::ObjectPtr cached = informers_.trials->Get(key);
  if (!cached) return kube::ReconcileResult{};  // deleted: owner references clean up
  Context ctx;
  ctx.key = key;
  ctx.trial = *cached;
  ctx.original_status = ObjectField(ctx.trial, "status");
  auto status = TrialRunStatusOf(ctx.trial);
  // Not a status this operator wrote (the CRD's schema admits none): left alone, retried.
  if (!status.ok()) return status.status().WithPrefix("trialrun " + key.String());
  ctx.original = std::move(*status);
  ctx.status = ctx.original;
  const std::optional<TrialRunPhase> phase = ctx.status.phase;
  if (phase == TrialRunPhase::kEarlyStopped) {
    // Stopped: make sure the Job is gone (its delete may have failed after the status landed).
    kube::ObjectPtr job = informers_.jobs->Get(key);
    if (job && !(*job)["metadata"].contains("deletionTimestamp")) {
      PARATUNE_RETURN_IF_ERROR(DeleteWorkload(ctx, "Job", key.name));
    }
  }
  if (phase && IsTerminal(*phase)) return kube::ReconcileResult{};
  ctx.now = FormatRfc3339(time_->SystemNow());
  auto spec = TrialRunSpecFromJson(ctx.trial.value("spec", Json()));
  if (!spec.ok()) return Fail(ctx, "InvalidSpec", spec.status().message());
  ctx.spec = std::move(*spec);
  const std::string& campaign_name = ctx.spec.campaign_name;
  kube::ObjectPtr campaign = informers_.campaigns->Get({key.ns, campaign_name});
  if (!campaign) {
    // Not in the cache yet (or being deleted, then garbage collection takes the trial too).
    return kube::ReconcileResult{false, Millis(5000)};
  }
  auto parsed = CampaignFromJson(*campaign, opts_.parse);
  if (!parsed.ok()) return Fail(ctx, "InvalidCampaign", parsed.status().message());
  ctx.campaign = std::move(*parsed);
  ctx.campaign.name = campaign_name;
  ctx.campaign_status = ObjectField(*campaign, "status");
  ctx.campaign_object = campaign;
  for (const auto& pod : informers_.pods->ByIndex(kPodsByTrial, key.String())) {
    ctx.pod_objects.push_back(*pod);
  }
  ctx.pods = ReadTrialPods(ctx.pod_objects);
  auto workload = GetWorkload(ctx);
  if (!workload.ok()) {
    if (workload.status().code() != StatusCode::kNotFound) return workload.status();
    return Launch(ctx);
  }
  return Observe(ctx, *workload);
}

const kube::GroupVersionResource& WorkloadResource(const std::string& kind) {
  if (kind == "JobSet") return kJobSets;
  if (kind == "TrainJob") return kTrainJobs;
  return res::kJobs;
}

Result<Json> TrialRunReconciler::GetWorkload(const Context& ctx) {
  const std::string ns = ctx.key.ns;
  const std::string name = ctx.key.name;
  const std::string kind = TrialWorkloadKind(ctx.campaign, opts_.jobset_available);
  if (kind != "Job") return client_->Get(WorkloadResource(kind), ns, name);
  kube::ObjectPtr job = informers_.jobs->Get({ns, name});
  if (job) return *job;
  // The cache may lag our own create; ask the server before creating a second time.
  if (ctx.status.job_name.value_or("").empty()) return Status::NotFound("job " + name);
  return client_->Get(res::kJobs, ns, name);
}

Result<kube::ReconcileResult> TrialRunReconciler::Launch(Context& ctx) {
  TrialJobInput in;
  in.campaign = &ctx.campaign;
  in.namespace_ = ctx.key.ns;
  in.trial_name = ctx.key.name;
  in.trial_uid = kube::UidOf(ctx.trial);
  in.iteration = ctx.spec.iteration;
  in.config = ctx.spec.config;
  in.jobset_available = opts_.jobset_available;
  in.default_image = opts_.default_image;
  in.avoid_nodes = AvoidList(ctx);
  if (opts_.admit) {
    Status admitted = opts_.admit(in.namespace_, ctx.campaign);
    if (admitted.code() == StatusCode::kInvalidArgument) {
      return Fail(ctx, "PolicyRefused", admitted.message());
    }
    if (!admitted.ok()) return admitted;
  }
  auto rendered = RenderTrial(in);
  if (!rendered.ok()) return Fail(ctx, "InvalidTemplate", rendered.status().message());
  if (rendered->service) {
    auto svc = client_->Create(res::kServices, in.namespace_, *rendered->service);
    if (!svc.ok() && svc.status().code() != StatusCode::kAlreadyExists) return svc.status();
  }
  const auto& gvr = WorkloadResource(rendered->kind);
  auto created = client_->Create(gvr, in.namespace_, rendered->workload);
  if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
    if (created.status().code() == StatusCode::kInvalidArgument) {
      return Fail(ctx, "InvalidTemplate", created.status().message());
    }
    if (created.status().code() == StatusCode::kNotFound && rendered->kind == "TrainJob") {
      return Fail(ctx, "InvalidTemplate",
                  "spec.trialTemplate: the TrainJob API (trainer.kubeflow.org/v1alpha1 "
                  "trainjobs) is not installed on this cluster (Kubeflow Trainer v2): " +
                      created.status().message());
    }
    return created.status();
  }
  if (created.ok()) {
    spdlog::info("trial {}/{}: created {} (iteration {})", in.namespace_, in.trial_name,
                 rendered->kind, in.iteration);
    if (recorder_ != nullptr) {
      // A plain creation is told by the JobCreated condition and the campaign's Proposed
      // Event (no Event of its own: one API request per trial less); waiting in a queue is news.
      const std::string queue = TrialQueueName(ctx.campaign);
      if (!queue.empty()) {
        recorder_->Event(ctx.trial, "Normal", reasons::kQueued,
                         "Created " + rendered->kind + " " + in.trial_name +
                             ", suspended until Kueue admits it from LocalQueue " + queue);
      }
      if (!in.avoid_nodes.empty()) {
        std::string list;
        for (const auto& n : in.avoid_nodes) list += (list.empty() ? "" : ", ") + n;
        const std::string why = " (suspect or excluded nodes; required node anti-affinity)";
        if (!ctx.spec.avoid_nodes.empty() || !ctx.campaign_object) {  // this trial's own list
          recorder_->Event(ctx.trial, "Normal", reasons::kAvoidingNodes,
                           in.trial_name + " will not run on " + list + why);
        } else {
          // The cluster's suspects, the same for every trial launched meanwhile: one Event on
          // the campaign whose count says how many trials avoided them, not one per trial.
          recorder_->Event(*ctx.campaign_object, "Normal", reasons::kAvoidingNodes,
                           "trials launched now will not run on " + list + why);
        }
      }
    }
  }
  if (created.ok() && rendered->kind == "Job") informers_.jobs->Wrote(*created);
  if (opts_.first_status_wait.count() > 0 && created.ok() && TrialQueueName(ctx.campaign).empty()) {
    // Pending with jobName goes out with the pods' start (Observe), or after the wait. A queued
    // Job's pods wait for admission: its Pending goes out at once.
    return kube::ReconcileResult{false, opts_.first_status_wait};
  }
  ctx.status.phase = TrialRunPhase::kPending;
  ctx.status.job_name = in.trial_name;
  NoteJobCreated(ctx, rendered->kind, ctx.now);
  PARATUNE_RETURN_IF_ERROR(WriteStatus(ctx));
  return kube::ReconcileResult{};
}

void TrialRunReconciler::NoteJobCreated(Context& ctx, const std::string& kind,
                                        const std::string& when) {
  if (FindCondition(ctx.status.conditions, kJobCreated) != nullptr) return;
  const std::string name = ctx.status.job_name.value_or(ctx.key.name);
  SetCondition(&ctx.status.conditions, kJobCreated, true, "Created", kind + " " + name + " created",
               0, when.empty() ? ctx.now : when);
}

Result<kube::ReconcileResult> TrialRunReconciler::Observe(Context& ctx, const Json& workload) {
  WorkloadState state = ReadWorkloadState(workload);
  const TrialPods& pods = ctx.pods;
  TrialRunStatus& status = ctx.status;
  status.job_name = kube::NameOf(workload);
  NoteJobCreated(ctx, workload.value("kind", "Job"),
                 workload["metadata"].value("creationTimestamp", ""));
  // No pods placed yet: nothing to say (an empty list written was a status write of its own).
  if (!pods.node_names.empty() || status.node_names) status.node_names = pods.node_names;
  // Queued (Kueue): pending until admitted; admission time and queue time go to status. The
  // trial timeout (the Job's activeDeadlineSeconds) counts from admission.
  const AdmissionUpdate admission =
      ObserveAdmission(workload, TrialQueueName(ctx.campaign), ctx.now, &status);
  // Not while queued: the pods still listed then are an evicted run's, on their way out.
  if (pods.start_time && !status.start_time && !admission.queued) {
    status.start_time = FormatRfc3339(*pods.start_time);
  }
  if (admission.admitted_now && recorder_ != nullptr) {
    // Evicted and admitted again between two looks: one Evicted Warning says both.
    const bool evicted = admission.evicted_now;
    recorder_->Event(ctx.trial, admission.suspend_unsupported || evicted ? "Warning" : "Normal",
                     admission.suspend_unsupported ? "QueueUnsupported"
                                                   : (evicted ? kEvicted : reasons::kAdmitted),
                     admission.message);
  }
  if (admission.queued) {
    status.phase = TrialRunPhase::kPending;
    // Kueue's reason (its Workload is not watched: looked at again every kueue_check_interval).
    auto pending = ReadKueuePending(client_, workload);
    if (!pending.ok()) return pending.status();
    if (admission.evicted_now && recorder_ != nullptr) {
      const std::string why =
          pending->evicted_reason.empty()
              ? ""
              : "Kueue evicted Workload " + pending->workload + " (" + pending->evicted_reason +
                    (pending->evicted_message.empty() ? "" : ": " + pending->evicted_message) +
                    "); ";
      recorder_->Event(ctx.trial, "Warning", kEvicted,
                       Utf8Head(why + admission.message, 1000, "..."));
    }
    if (pending->deactivated) {
      // Kueue admits a deactivated Workload only once someone sets spec.active true again
      // (waitForPodsReady's requeuing limit and a rejected admission check deactivate it): the
      // trial would wait for ever.
      const std::string kind = workload.value("kind", "Job");
      const std::string& said =
          pending->evicted_message.empty() ? pending->message : pending->evicted_message;
      PARATUNE_RETURN_IF_ERROR(DeleteWorkload(ctx, kind, kube::NameOf(workload)));
      return Fail(ctx, kKueueDeactivated,
                  "Kueue deactivated its Workload " + pending->workload + " (spec.active false" +
                      (said.empty() ? "" : ": " + said) +
                      ") and admits it again only once spec.active is true; its " + kind +
                      " was deleted");
    }
    if (pending->message.empty() && !pending->checks.empty()) {
      SetCondition(
          &status.conditions, kAdmitted, false, "Queued",
          Utf8Head("Kueue (Workload " + pending->workload +
                       "): quota reserved, waiting for its admission checks: " + pending->checks,
                   1000, "..."),
          0, ctx.now);
    }
    if (!pending->message.empty()) {
      SetCondition(&status.conditions, kAdmitted, false,
                   admission.evicted_now ? kEvicted : "Queued",
                   "Kueue (Workload " + pending->workload + "): " + pending->message, 0, ctx.now);
      if (NeverAdmissible(ctx, pending->message)) {
        PARATUNE_RETURN_IF_ERROR(
            DeleteWorkload(ctx, workload.value("kind", "Job"), kube::NameOf(workload)));
        return Fail(ctx, "Inadmissible",
                    "Kueue cannot admit it (Workload " + pending->workload +
                        "): " + pending->message + "; its " + workload.value("kind", "Job") +
                        " was deleted");
      }
    }
    PARATUNE_RETURN_IF_ERROR(WriteStatus(ctx));
    kube::ReconcileResult queued;
    queued.requeue_after = opts_.kueue_check_interval;
    if (workload.value("kind", "Job") != "Job") {  // JobSets and TrainJobs are not watched
      queued.requeue_after = std::min(queued.requeue_after, Millis(10000));
    }
    return queued;
  }
  if (state.phase == WorkloadState::Phase::kSucceeded) return Succeed(ctx);
  if (state.phase == WorkloadState::Phase::kFailed) {
    return Fail(ctx, state.reason.empty() ? "JobFailed" : state.reason, state.message);
  }
  const Millis deadline_in = DeadlineIn(ctx, workload);
  if (deadline_in.count() <= 0) {
    PARATUNE_RETURN_IF_ERROR(
        DeleteWorkload(ctx, workload.value("kind", "Job"), kube::NameOf(workload)));
    return Fail(ctx, "DeadlineExceeded",
                std::to_string(ctx.campaign.budget.trial_timeout_seconds) +
                    " s counted from admission at " +
                    status.admission_time.value_or("the workload's creation") + "; its " +
                    workload.value("kind", "Job") + " was deleted");
  }
  std::string why;
  size_t stuck_pod = ctx.pod_objects.size();  // none
  Millis stuck = UnschedulableFor(ctx.pods, time_->SystemNow(), &why, &stuck_pod);
  if (stuck >= opts_.infeasible_after && stuck_pod < ctx.pod_objects.size()) {
    ctx.node_fit = JudgeAgainstNodes(ctx.pod_objects[stuck_pod]);
    if (ctx.node_fit && ctx.node_fit->could_run == 0) {
      // Unless the cluster autoscaler is adding a node for it (a node pool scaled to zero has
      // no Node object to judge).
      bool scaling_up = false;
      for (const auto& e : PodEvents(ctx.pods.pods[stuck_pod])) {
        scaling_up |= e.rfind("TriggeredScaleUp:", 0) == 0;
      }
      if (!scaling_up) {
        PARATUNE_RETURN_IF_ERROR(
            DeleteWorkload(ctx, workload.value("kind", "Job"), kube::NameOf(workload)));
        return Fail(ctx, "Unschedulable", why);
      }
      ctx.node_fit.reset();
    }
  }
  if (stuck >= opts_.unschedulable_after) {
    (void)DeleteWorkload(ctx, workload.value("kind", "Job"), kube::NameOf(workload));
    return Fail(ctx, "Unschedulable", why);
  }
  // A trial whose pods have run stays Running until its workload ends: a pod that finished
  // before the Job controller marks the Job Complete or Failed (seconds under load) is no step
  // back to Pending, and no status write of its own.
  const bool ran =
      pods.any_running || pods.any_finished || ctx.original.phase == TrialRunPhase::kRunning;
  status.phase = ran ? TrialRunPhase::kRunning : TrialRunPhase::kPending;
  if (!ctx.original.phase && status.phase == TrialRunPhase::kPending) {
    const Millis wait = FirstStatusIn(workload);
    if (wait.count() > 0) return kube::ReconcileResult{false, std::min(wait, deadline_in)};
  }
  if (!ran && ctx.original.phase == TrialRunPhase::kPending) {
    // Still Pending: where its pods were placed and when they started go out with the next
    // phase (Running or the outcome, both from the pods) instead of as status writes of their own.
    status.node_names = ctx.original.node_names;
    status.start_time = ctx.original.start_time;
  }
  const bool poll = pods.any_running && ctx.campaign.budget.early_stopping &&
                    opts_.early_stop_interval.count() > 0;
  if (poll) {
    auto stopped = MaybeStopEarly(ctx, workload);
    if (!stopped.ok()) return stopped.status();
    if (*stopped) return kube::ReconcileResult{};
  }
  PARATUNE_RETURN_IF_ERROR(WriteStatus(ctx));
  kube::ReconcileResult r;
  if (poll) r.requeue_after = opts_.early_stop_interval;
  if (stuck.count() > 0) {
    const bool judge_later = opts_.cluster_nodes != nullptr && stuck < opts_.infeasible_after;
    r.requeue_after =
        (judge_later ? opts_.infeasible_after : opts_.unschedulable_after) - stuck + Millis(1000);
  }
  if (deadline_in.count() < kNoDeadline.count() &&
      (r.requeue_after.count() == 0 || deadline_in < r.requeue_after)) {
    r.requeue_after = deadline_in + Millis(500);
  }
  if (workload.value("kind", "Job") != "Job" &&
      (r.requeue_after.count() == 0 || r.requeue_after > Millis(10000))) {
    r.requeue_after = Millis(10000);
  }
  return r;
}

Millis TrialRunReconciler::FirstStatusIn(const Json& workload) const {
  if (opts_.first_status_wait.count() <= 0) return Millis(0);
  SystemTime created;
  if (!ParseRfc3339(workload["metadata"].value("creationTimestamp", ""), &created)) {
    return Millis(0);
  }
  const auto left =
      std::chrono::duration_cast<Millis>(created + opts_.first_status_wait - time_->SystemNow());
  // Clocks apart (ours more than the wait behind the server's): no waiting, rather than waiting
  // on every look.
  return left > opts_.first_status_wait ? Millis(0) : left;
}

Millis TrialRunReconciler::DeadlineIn(const Context& ctx, const Json& workload) const {
  const int64_t timeout = ctx.campaign.budget.trial_timeout_seconds;
  if (timeout <= 0) return kNoDeadline;
  std::string from = ctx.status.admission_time.value_or("");
  if (from.empty()) from = workload["metadata"].value("creationTimestamp", "");
  SystemTime start;
  if (!ParseRfc3339(from, &start)) return kNoDeadline;
  const auto deadline = start + std::chrono::seconds(timeout) + opts_.deadline_grace;
  return std::chrono::duration_cast<Millis>(deadline - time_->SystemNow());
}

Result<kube::ReconcileResult> TrialRunReconciler::Succeed(Context& ctx) {
  if (ctx.pods.pods.empty()) return kube::ReconcileResult{false, Millis(2000)};
  const collectors::CollectorContext cctx = CollectorContextFor(ctx.campaign, ctx.spec.config);
  bool retry_log = false;
  auto read = ReadTrialMetrics(
      ctx.pods, ctx.campaign.metrics_collector, cctx,
      [this, &retry_log](const TrialPod& pod) { return PodLog(pod, &retry_log); },
      opts_.max_log_reads);
  if (retry_log) return Status::Unavailable("a log of the trial's pods could not be read yet");
  if (!read.ok()) {
    return Fail(ctx, "NoMetrics",
                "the trial succeeded but reported no metrics: " + read.status().message());
  }
  const collectors::CollectedMetrics& collected = read->collected;
  const ObjectiveMetric objective = ctx.campaign.objective.metric;
  // A log that lacks the objective (issue 35): no objective rather than a 0, the
  // ObjectiveMissing condition, and a Warning Event on the campaign naming what the log lacked.
  const std::string missing = collectors::MissingObjectiveReason(ctx.campaign.metrics_collector,
                                                                 collected, objective, cctx);
  const std::string objective_name = ObjectiveMetricName(objective);
  // Logged step times that drift or spike (contract section 10), on the pods' nodes.
  auto anomaly =
      health::DetectStepTimeAnomaly(collected.step_times, {}, collected.warmup_intervals);
  const std::string anomaly_kind = anomaly ? health::AnomalyKindName(anomaly->kind) : "";
  if (anomaly) anomaly->node_names = ctx.pods.node_names;
  TrialRunStatus& status = ctx.status;
  status.phase = TrialRunPhase::kSucceeded;
  status.metrics = collected.metrics.ToJson();
  status.objective = missing.empty() ? std::optional<double>(collected.metrics.Objective(objective))
                                     : std::nullopt;
  status.metrics_source = read->source.ToJson();
  status.metric_sources = collected.sources;
  if (anomaly) status.anomaly = anomaly->ToJson();
  if (!missing.empty()) {
    SetCondition(&status.conditions, kObjectiveMissing, true, kObjectiveMissing, missing, 0,
                 ctx.now);
    ctx.events.push_back(
        {true, "Warning", reasons::kObjectiveMissing,
         Utf8Head(ctx.key.name + " succeeded without its " + objective_name + ": " + missing, 1000,
                  "...")});
  }
  // How the log was read where the collector corrected or dropped something (a resumed
  // process's warm-up, Megatron-DeepSpeed's recomputation-counting TFLOPs, an impossible derived
  // TFLOP/s): status.metricsWarnings, and Normal Events on the TrialRun, so `kubectl describe
  // trialrun` says it.
  status.metrics_warnings = BoundedMetricsWarnings(collected.warnings);
  if (status.metrics_warnings) {
    for (const std::string& w : *status.metrics_warnings) {
      ctx.events.push_back({false, "Normal", reasons::kMetricsRead, w});
    }
  }
  if (anomaly) {
    spdlog::warn("trial {}/{}: anomaly {}: {}", ctx.key.ns, ctx.key.name, anomaly_kind,
                 anomaly->summary);
    ctx.events.push_back(
        {false, "Warning", reasons::kAnomalyDetected, anomaly_kind + ": " + anomaly->summary});
  }
  spdlog::info("trial {}/{}: succeeded, {} = {} (from the {} of pod {})", ctx.key.ns, ctx.key.name,
               objective_name, status.objective.value_or(0), read->source.from, read->source.pod);
  return Finish(ctx, "Succeeded", "the trial finished");
}

bool TrialRunReconciler::NeverAdmissible(const Context& ctx, const std::string& kueue_message) {
  auto knowledge = knowledge_->For(ctx.key.ns, ctx.campaign);
  const FailureAnalyzer& analyzer =
      knowledge.ok() ? *knowledge->analyzer : *knowledge_->Site().analyzer;
  FailureEvidence evidence;
  evidence.events.push_back(kueue_message);
  const FailureDiagnosis d = analyzer.Diagnose(evidence, ctx.spec.config, nullptr);
  return d.Is(FailureCategory::kUnschedulable) && !d.retryable;
}

Result<kube::ReconcileResult> TrialRunReconciler::Fail(Context& ctx, const std::string& reason,
                                                       const std::string& message) {
  // The evidence pod (trial_evidence.h: the first failed pod to finish), or the next in that
  // order when the API server no longer has it, deleted between the list and the read: the Job
  // controller deletes a Job's active pods when it fails (backoffLimit), and JobSet's deletes
  // its active child Jobs once the JobSet has failed (jobset_controller.go, "clean up active
  // child jobs"). Its log, exit and events are the diagnosis's input. At most max_log_reads
  // pods are tried.
  const TrialPod* chosen = &ctx.pods.Evidence();
  std::string log;
  const size_t tries =
      std::min(ctx.pods.evidence_order.size(), std::max<size_t>(1, opts_.max_log_reads));
  for (size_t t = 0; t < tries; ++t) {
    const TrialPod& candidate = ctx.pods.pods[ctx.pods.evidence_order[t]];
    bool retry_log = false, gone = false;
    log = PodLog(candidate, &retry_log, &gone);
    if (retry_log) return Status::Unavailable("the failed pod's log could not be read yet");
    if (!gone) {
      chosen = &candidate;
      break;
    }
  }
  const TrialPod& pod = *chosen;
  FailureEvidence evidence;
  evidence.pod_reason = pod.pod_reason.empty() ? reason : pod.pod_reason;
  evidence.exit_code = pod.exit_code;
  if (!ctx.pods.pods.empty()) evidence.events = PodEvents(pod);
  evidence.log = log.empty() ? pod.termination_message : log;
  if (!message.empty()) evidence.events.push_back(reason + ": " + message);
  // The campaign's knowledge ConfigMaps (its namespace) beside the site's.
  auto knowledge = knowledge_->For(ctx.key.ns, ctx.campaign);
  if (!knowledge.ok() && knowledge.status().code() == StatusCode::kPermissionDenied) {
    // Not allowed to read them (the operator's RBAC): the site's knowledge diagnoses, and the
    // user is told; retrying would hold the trial's end for ever.
    CampaignKnowledgeView site = knowledge_->Site();
    site.warnings.push_back("knowledge ConfigMaps not read (" + knowledge.status().message() +
                            "): diagnosed with the site's knowledge");
    knowledge = std::move(site);
  }
  if (!knowledge.ok()) return knowledge.status();  // transient: retried
  for (const auto& w : knowledge->warnings) {
    ctx.events.push_back({true, "Warning", reasons::kKnowledgeSkipped, Utf8Head(w, 1000, "...")});
  }
  FailureDiagnosis d;
  if (reason == kKueueDeactivated) {
    // Read from the Workload, not from words: Kueue gave up admitting the trial's pods
    // (PodsReadyTimeout up to its requeuing limit, a rejected admission check) or someone
    // stopped it. Not the parameters' fault, and running it again meets the same queue.
    d.category = ToString(FailureCategory::kUnschedulable);
    d.retryable = false;
    d.confidence = 90;
    d.signature = "kueue-deactivated";
    d.summary = message + " (Confidence: 90)";
    d.evidence = reason + ": " + message;
  } else {
    auto workload = ResolveWorkload(ctx.campaign);
    d = knowledge->analyzer->Diagnose(evidence, ctx.spec.config,
                                      workload.ok() ? &*workload : nullptr);
  }
  if (reason == "DeadlineExceeded" && d.Is(FailureCategory::kUnknown)) {
    d.category = ToString(FailureCategory::kTimeout);
    d.summary = "the trial ran past spec.budget.trialTimeout (" + message + ")";
  }
  if (reason == "Unschedulable" && d.Is(FailureCategory::kUnknown)) {
    d.category = ToString(FailureCategory::kUnschedulable);
    d.summary = "no node could run the trial's pods: " + message;
  }
  if (reason == "Unschedulable" && ctx.node_fit) {
    // The cluster's nodes, not the wording, say whether waiting can help.
    const PodFit& fit = *ctx.node_fit;
    if (fit.could_run == 0) {
      d.category = ToString(FailureCategory::kUnschedulable);
      d.retryable = false;
      d.confidence = std::max(d.confidence, 95);
      d.summary = fit.message + " (Confidence: " + std::to_string(d.confidence) + ")";
      d.evidence = fit.message + (d.evidence.empty() ? "" : "\n" + d.evidence);
      d.signature = "cluster-nodes";
    } else if (d.Is(FailureCategory::kUnschedulable) && !d.retryable &&
               d.signature != "unschedulable-volume" &&  // volumes are not judged
               message.find("Insufficient ") != std::string::npos) {
      d.retryable = true;
      d.summary = std::to_string(fit.could_run) + " of " + std::to_string(fit.nodes) +
                  " nodes could run the trial's pods once their capacity frees up: " + message;
      d.signature = "cluster-nodes";
    }
  }
  if (d.category.empty()) d.category = ToString(FailureCategory::kUnknown);
  if (d.summary.empty()) d.summary = reason + (message.empty() ? "" : ": " + message);
  TrialRunStatus& status = ctx.status;
  status.phase = TrialRunPhase::kFailed;
  status.failure = d.ToJson();
  status.failure["evidence"] = Utf8Tail(d.evidence, kMaxObservedText);
  status.observed = {{"podReason", evidence.pod_reason},
                     {"exitCode", evidence.exit_code},
                     {"terminationMessage", Utf8Tail(pod.termination_message, kMaxObservedText)},
                     {"logTail", Utf8Tail(log, kMaxObservedText)},
                     {"events", evidence.events}};
  if (!pod.name.empty()) status.observed["pod"] = pod.name;
  spdlog::warn("trial {}/{}: failed ({}): {}", ctx.key.ns, ctx.key.name, d.category, d.summary);
  return Finish(ctx, "Failed", d.summary);
}

Result<kube::ReconcileResult> TrialRunReconciler::Finish(Context& ctx, const std::string& reason,
                                                         const std::string& message) {
  TrialRunStatus& status = ctx.status;
  status.completion_time = ctx.now;
  status.accelerator_hours = AcceleratorHoursOf(ctx.campaign.hardware.TotalDevices(),
                                                WallSeconds(ctx.pods, time_->SystemNow()));
  SetCondition(&status.conditions, kCompleted, true, reason, message, 0, ctx.now);
  PARATUNE_RETURN_IF_ERROR(WriteStatus(ctx));
  return kube::ReconcileResult{};
}

std::vector<std::string> TrialRunReconciler::AvoidList(const Context& ctx) {
  std::set<std::string> avoid;
  avoid.insert(ctx.spec.avoid_nodes.begin(), ctx.spec.avoid_nodes.end());
  if (opts_.suspect_nodes) {
    auto suspects = opts_.suspect_nodes();
    if (suspects.ok()) {
      avoid.insert(suspects->begin(), suspects->end());
    } else {
      spdlog::warn("trial {}/{}: node ledger unavailable, launching without it: {}", ctx.key.ns,
                   ctx.key.name, suspects.status().message());
    }
  }
  return {avoid.begin(), avoid.end()};
}

std::string TrialRunReconciler::PodLog(const TrialPod& pod, bool* retry, bool* gone) {
  kube::PodLogOptions opts;
  opts.container = pod.container;
  opts.tail_lines = opts_.log_tail_lines;
  opts.limit_bytes = opts_.log_limit_bytes;
  auto log = client_->GetPodLog(pod.ns, pod.name, opts);
  if (!log.ok()) {
    if (gone != nullptr) *gone = log.status().code() == StatusCode::kNotFound;
    // Only the reads a trial's outcome rests on are reported (early stopping polls pods that
    // may not have started yet).
    if (retry != nullptr) {
      *retry = ShouldRetryLogRead(log.status(), pod, time_->SystemNow()) || *retry;
      spdlog::warn("pod {}/{}: log not read: {}", pod.ns, pod.name, log.status().ToString());
    }
    return std::string();
  }
  return BoundedLog(std::move(*log), static_cast<size_t>(std::max<int64_t>(0, opts.limit_bytes)));
}

std::optional<PodFit> TrialRunReconciler::JudgeAgainstNodes(const Json& pod) {
  if (opts_.cluster_nodes == nullptr) return std::nullopt;
  auto nodes = opts_.cluster_nodes->Get();
  if (!nodes.ok()) {
    // No verdict this time (the scheduler's words decide, as without the right to list); the
    // trial is not held up by a Node list that failed.
    spdlog::warn("trial pods: cannot list the cluster's nodes: {}", nodes.status().ToString());
    return std::nullopt;
  }
  if (*nodes == nullptr || (*nodes)->empty()) return std::nullopt;
  return JudgePodFit(pod, **nodes);
}

std::vector<std::string> TrialRunReconciler::PodEvents(const TrialPod& pod) {
  kube::ListOptions opts;
  opts.field_selector = "involvedObject.name=" + pod.name;
  auto list = client_->List(res::kEvents, pod.ns, opts);
  std::vector<std::string> out;
  if (!list.ok()) return out;
  for (const auto& e : list->items) {
    out.push_back(e.value("reason", "") + ": " + e.value("message", ""));
    if (out.size() >= 20) break;
  }
  return out;
}

Status TrialRunReconciler::WriteStatus(Context& ctx) {
  for (const Context::PendingEvent& e : ctx.events) {
    if (recorder_ == nullptr) break;
    recorder_->Event(e.on_campaign && ctx.campaign_object ? *ctx.campaign_object : ctx.trial,
                     e.type, e.reason, e.message);
  }
  ctx.events.clear();
  Json status = ToJson(ctx.status);
  DropEmptyStrings(&status);
  if (status == ctx.original_status) return Status::Ok();
  ctx.trial["status"] = std::move(status);
  return PatchStatus(client_, kube::resources::kTrialRuns, ctx.trial, ctx.original_status,
                     informers_.trials)
      .status();
}

}  // namespace paratune::controllers
