// TrialRunReconciler's early stopping (issue 13, item 4): reads a running trial's log, asks
// DecideEarlyStop whether it can still beat the campaign's best, and when it cannot ends the
// TrialRun EarlyStopped (partial metrics, evidence, accelerator-hours) BEFORE deleting its Job,
// so that a failed delete never makes the reconciler launch the trial again (a terminal trial
// is never relaunched; Reconcile retries the delete).
#include <spdlog/spdlog.h>

#include "agents/session/tuning_session.h"
#include "controllers/accelerator_hours.h"
#include "controllers/conditions.h"
#include "controllers/trial_evidence.h"
#include "controllers/trial_metrics.h"
#include "controllers/trial_reconciler.h"

namespace paratune::controllers {

namespace {

using kube::Json;

// Logs read per poll: the framework's metrics rank first, one more in case it is elsewhere.
constexpr size_t kPollLogReads = 2;

}  // namespace

Status TrialRunReconciler::DeleteWorkload(const Context& ctx, const std::string& kind,
                                          const std::string& name) {
  const auto& gvr = WorkloadResource(kind);
  Status s = client_->Delete(gvr, ctx.key.ns, name, kube::DeleteOptions{"Background", {}, "", ""});
  return s.ok() || s.code() == StatusCode::kNotFound ? Status::Ok() : s;
}

Result<bool> TrialRunReconciler::MaybeStopEarly(Context& ctx, const Json& workload) {
  const Json& best = ctx.campaign_status.value("best", Json::object());
  if (!best.is_object()) return false;
  const std::string best_trial = best.value("trialName", "");
  const double best_objective = best.contains("objective") && best["objective"].is_number()
                                    ? best["objective"].get<double>()
                                    : 0.0;
  if (best_trial.empty() || best_trial == ctx.key.name || best_objective <= 0) {
    return false;
  }
  auto read = ReadTrialMetrics(
      ctx.pods, ctx.campaign.metrics_collector, CollectorContextFor(ctx.campaign, ctx.spec.config),
      [this](const TrialPod& pod) { return PodLog(pod); }, kPollLogReads,
      /*use_termination_messages=*/false);
  if (!read.ok()) return false;  // nothing logged yet: look again later
  const TrialMetrics& m = read->collected.metrics;
  EarlyStopInput in;
  in.steady_step_times = read->collected.steady_step_times;
  in.objective = m.Objective(ctx.campaign.objective.metric);
  in.best_objective = best_objective;
  in.maximize = ctx.campaign.objective.Maximize();
  EarlyStopDecision d = DecideEarlyStop(in, opts_.early_stop);
  if (!d.stop) return false;
  TrialRunStatus& status = ctx.status;
  Json evidence = d.ToJson();
  evidence["bestTrial"] = best_trial;
  status.phase = TrialRunPhase::kEarlyStopped;
  status.metrics = m.ToJson();
  status.objective = in.objective;
  status.metrics_source = read->source.ToJson();
  status.metric_sources = read->collected.sources;
  status.metrics_warnings = BoundedMetricsWarnings(read->collected.warnings);
  status.early_stop = evidence;
  auto finished = Finish(ctx, "EarlyStopped", d.summary);
  if (!finished.ok()) return finished.status();
  spdlog::info("trial {}/{}: stopped early: {}", ctx.key.ns, ctx.key.name, d.summary);
  if (recorder_ != nullptr) {
    recorder_->Event(ctx.trial, "Normal", "EarlyStopped",
                     d.summary + " (best: " + best_trial + ")");
  }
  const std::string kind = workload.value("kind", "Job");
  PARATUNE_RETURN_IF_ERROR(DeleteWorkload(ctx, kind, kube::NameOf(workload)));
  return true;
}

}  // namespace paratune::controllers
