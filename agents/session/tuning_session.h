// The agent loop as pure steps over (CampaignSpec, MessagePool): ProposeNext (analyze, generate,
// validate), the caller runs the trials (in-process simulation, or Jobs in a cluster),
// RecordOutcome (diagnose, learn), ShouldStop (coordinate). All state lives in the pool, so a
// session can be destroyed after any step and re-created from the same spec and pool.
//
// Thread-safety: none; the owner serializes calls. The pool is not owned and must outlive the
// session.
#ifndef PARATUNE_AGENTS_SESSION_TUNING_SESSION_H_
#define PARATUNE_AGENTS_SESSION_TUNING_SESSION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agents/collectors/metric_collector.h"
#include "agents/core/campaign.h"
#include "agents/core/config.h"
#include "agents/core/results.h"
#include "agents/engines/strategy_engine.h"
#include "agents/health/anomaly.h"
#include "agents/knowledge/knowledge_base.h"
#include "agents/predict/planner_model.h"
#include "agents/predict/predictor.h"
#include "agents/predict/validator.h"
#include "agents/session/baseline_preflight.h"
#include "agents/trials/failure_analyzer.h"
#include "agents/trials/message_pool.h"
#include "base/status.h"

namespace paratune {

struct SessionOptions {
  bool use_pool = true;                 // --ablate pool: no learning from history at all
  bool use_failure_analysis = true;     // --ablate failure-analysis: failures undiagnosed, no retry
  bool use_calibration = true;          // --ablate calibration: the model is never refitted
  bool validator_checks_memory = true;  // off for the model-free baselines
  bool fallback_to_builtin = true;      // the built-in engine covers a failing or empty engine
  bool stop_on_convergence = true;      // off for the model-free baselines
  int64_t min_successes_before_convergence = 5;
  double noise_fraction = 0.02;  // relative run-to-run noise of the objective
  uint64_t seed = 1;
  size_t max_space_points = 20000;  // larger spaces are sampled (every sample spec in
                                    // bench/ and manifests/ has <= 1,728 points)
  // Cluster health (issue 9): succeeded trials far below the calibrated prediction, or whose
  // step times drift or spike, are set aside as anomalies instead of being learned from.
  bool detect_anomalies = true;
  health::AnomalyThresholds anomaly_thresholds;
  // Replay (contract section 11): when set, a validated candidate for which this returns false
  // cannot be measured: it is recorded as rejected with kUnmeasuredReason (no trial) and the
  // engine is asked again.
  std::function<bool(const Config&)> measurable;
};

struct SessionDeps {
  std::unique_ptr<StrategyEngine> engine;     // null: builtin
  std::shared_ptr<const PlannerModel> model;  // null: agents/model for the spec
  // The search space evaluated by `model` (SearchSpaceIndex::Build of this spec with
  // options.max_space_points; PlanningCache shares it between reconciles and campaigns).
  // Null: built here. Set only together with `model`.
  std::shared_ptr<const SearchSpaceIndex> space;
  // Null: a new one over the embedded knowledge (MakeEmbeddedFailureAnalyzer, tens of ms), made
  // when the first failure needs diagnosing.
  std::shared_ptr<const FailureAnalyzer> diagnostician;
  std::function<double()> clock;  // seconds; null: none recorded
  SessionOptions options;
  // Past-optimization records (the campaign's knowledge ConfigMaps, earlier campaigns' results,
  // `--past FILE`): the built-in engine warm-starts from the best one on the same model and
  // hardware (agents/engines/warm_start.h). Empty: no warm start.
  std::vector<PastOptimization> past;
};

// A trial to launch now (a TrialRun's spec).
struct TrialPlan {
  std::string name;  // "<campaign>-t003"; retries "<campaign>-t003-r1"
  int64_t iteration = 0;
  Config config;  // every searched parameter
  Proposal proposal;
  Prediction prediction;
  std::string retry_of;
  std::string change;  // "tp 1->2" relative to the best config so far ("baseline" for it)
  std::vector<std::string> avoid_nodes;  // run it on none of these (required anti-affinity)
};

// A finished trial, as the runner saw it.
// What the collectors need to know of the campaign to turn a log into metrics (sequence length,
// batch, devices, the accelerator's peak for MFU): the same for the operator's trial reconciler
// and the in-process loop. The first form resolves the workload itself; the second takes one
// already resolved (null: what the spec alone says, no MFU).
collectors::CollectorContext CollectorContextFor(const CampaignSpec& spec);
collectors::CollectorContext CollectorContextFor(const CampaignSpec& spec, const Workload* w);
// The context of one trial: the campaign's, plus the trial's `recompute` (Megatron-DeepSpeed's
// TFLOPs count recomputation).
collectors::CollectorContext CollectorContextFor(const CampaignSpec& spec, const Config& config);

struct TrialOutcome {
  std::string name;
  bool succeeded = false;
  // When absent: collected as the operator collects a finished trial's (the termination message,
  // else `log` through the campaign's collector, agents/collectors).
  std::optional<TrialMetrics> metrics;
  std::string termination_message;  // the container's JSON (or log tail on error)
  std::string log;                  // log tail
  std::string pod_reason;
  int exit_code = 0;
  std::vector<std::string> events;
  // A failed trial's diagnosis when the runner already made one (the operator's TrialRun
  // status.failure, made with the campaign's knowledge ConfigMaps): the session records it
  // instead of diagnosing the evidence again, so the pool and the TrialRun never disagree.
  std::optional<FailureDiagnosis> diagnosis;
  // Cluster health (issue 9).
  std::vector<std::string> node_names;     // the nodes the trial's pods ran on
  std::optional<health::Anomaly> anomaly;  // one the runner already saw (e.g. drift in logs)
  std::vector<double> step_times;  // per logged interval; non-empty: the session checks them
  // Devices x the time the trial held them, in hours (the operator: status.acceleratorHours;
  // the simulated cluster: its simulated run time); 0 when unknown.
  double accelerator_hours = 0;
};

enum class StopReason {
  kBudgetExhausted,
  kTargetReached,
  kMaxFailedTrials,
  kConverged,
  kSpaceExhausted,
  // A trial failed as Unschedulable and not retryable (no node or queue could ever take its
  // pods): every trial of the campaign asks for the same pods, so none is launched after it.
  kClusterCannotRun
};
// "BudgetExhausted", "TargetReached", "MaxFailedTrials", "Converged", "SpaceExhausted",
// "ClusterCannotRun".
const char* StopReasonName(StopReason r);

struct StopDecision {
  StopReason reason = StopReason::kBudgetExhausted;
  std::string message;  // one sentence for people
};

// total = running + succeeded + failed + anomalous (rejected candidates cost no trial).
// `succeeded` counts the healthy successes the campaign learns from; `anomalous` the succeeded
// runs set aside as anomalies.
struct TrialCounts {
  int64_t total = 0, running = 0, succeeded = 0, failed = 0, rejected = 0;
  int64_t anomalous = 0;
};

struct SessionSummary {
  std::optional<TrialRecord> best;
  std::optional<TrialRecord> baseline;
  TrialCounts counts;
  Analysis last_analysis;
  double improvement_over_baseline = 0;  // relative, in the objective's better direction
  std::vector<TrialRecord> anomalous;    // succeeded but set aside, in trial order
};

class TuningSession {
 public:
  // Validates the campaign: empty search space, baseline outside it, or no valid configuration
  // -> kInvalidArgument naming the field. A non-empty pool resumes where it stopped.
  static Result<std::unique_ptr<TuningSession>> Create(const CampaignSpec& spec, MessagePool* pool,
                                                       SessionDeps deps);
  ~TuningSession();
  TuningSession(const TuningSession&) = delete;
  TuningSession& operator=(const TuningSession&) = delete;

  // Up to `n` new trials to launch now, recorded in the pool as Pending. Pending retries come
  // first. Rejected candidates are recorded (they cost no trial). Returns fewer or none when
  // the budget or space is exhausted or the session should stop.
  Result<std::vector<TrialPlan>> ProposeNext(int n);
  // Ingests a finished trial: metrics on success; on failure, the evidence goes to the
  // Diagnostician and into the pool; calibration is refitted; a retryable failure gets one
  // retry plan (returned by the next ProposeNext). NotFound for an unknown or finished name.
  // A success is anomalous when the outcome carries an anomaly, when its step_times drift or
  // spike, or (after >= 2 healthy successes) when its objective is far below the calibrated
  // prediction for its config: it stays Succeeded with TrialRecord::anomaly set, a pool message
  // names its nodes, and it is not learned from (no best, calibration, convergence; its config
  // may be proposed again).
  Status RecordOutcome(const TrialOutcome& outcome);
  // Queues one re-run of a finished trial on nodes other than `avoid_nodes`, returned first by
  // the next ProposeNext (it uses the budget like any trial). The operator calls it only after a
  // person approved the RetryTrial remediation; the in-process simulation approves it at once.
  // NotFound for an unknown trial; FailedPrecondition when it has not finished, is neither
  // anomalous nor failed, or was already retried or queued. Kept in the pool (resumable).
  Status RequestRetry(const std::string& trial_name, std::vector<std::string> avoid_nodes);
  // The anomaly of a trial (nullopt: none, or no such trial).
  std::optional<health::Anomaly> AnomalyOf(const std::string& trial) const;
  // Why the campaign should stop now, or nullopt to continue.
  std::optional<StopDecision> ShouldStop() const;
  SessionSummary Summary() const;
  // The pre-flight verdict of the baseline when pre-flight rejected it, recomputed exactly as
  // the session decided it when the campaign started (the prior calibration: no trial had run),
  // or nullopt when the campaign has no baseline or it was not rejected.
  std::optional<BaselinePreflight> RejectedBaseline() const;

  // Objective of a successful trial (0 when none).
  double ObjectiveOf(const TrialRecord& t) const;
  const CampaignSpec& spec() const;
  const MessagePool& pool() const;
  const SearchSpaceIndex& space() const;
  const PlannerModel& model() const;
  std::string engine_name() const;

 private:
  struct Impl;
  explicit TuningSession(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace paratune

#endif  // PARATUNE_AGENTS_SESSION_TUNING_SESSION_H_
