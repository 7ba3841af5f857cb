#include "agents/session/tuning_session.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "agents/engines/analyst.h"
#include "agents/engines/builtin_engine.h"
#include "agents/model/model_flops.h"
#include "agents/model/workload.h"
#include "agents/session/baseline_preflight.h"
#include "agents/trials/knowledge_failure_analyzer.h"
#include "base/strings.h"

namespace paratune {

namespace {

// Times one ProposeNext asks the engine again after every candidate of a batch was rejected.
constexpr int kMaxReproposals = 64;

std::string TrialName(const CampaignSpec& spec, int64_t iteration) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "-t%03lld", static_cast<long long>(iteration));
  return (spec.name.empty() ? std::string("campaign") : spec.name) + buf;
}

bool IsBetter(double a, double b, bool maximize) { return maximize ? a > b : a < b; }

}  // namespace

collectors::CollectorContext CollectorContextFor(const CampaignSpec& spec, const Workload* w) {
  collectors::CollectorContext ctx;
  ctx.seq_length = spec.training.seq_length;
  ctx.global_batch_size = spec.training.global_batch_size;
  ctx.devices = spec.hardware.TotalDevices();
  if (w != nullptr && w->accel != nullptr) {
    ctx.peak_tflops_per_device = w->accel->PeakTflops(spec.training.precision);
    ctx.devices = w->devices;
  }
  if (w != nullptr) ctx.model_flops_per_token = ModelFlopsPerToken(*w);
  return ctx;
}

collectors::CollectorContext CollectorContextFor(const CampaignSpec& spec) {
  auto w = ResolveWorkload(spec);
  return CollectorContextFor(spec, w.ok() ? &*w : nullptr);
}

collectors::CollectorContext CollectorContextFor(const CampaignSpec& spec, const Config& config) {
  collectors::CollectorContext ctx = CollectorContextFor(spec);
  auto it = config.find("recompute");
  if (it != config.end()) ctx.recompute = it->second.ToString();
  return ctx;
}

const char* StopReasonName(StopReason r) {
  switch (r) {
    case StopReason::kBudgetExhausted:
      return "BudgetExhausted";
    case StopReason::kTargetReached:
      return "TargetReached";
    case StopReason::kMaxFailedTrials:
      return "MaxFailedTrials";
    case StopReason::kConverged:
      return "Converged";
    case StopReason::kSpaceExhausted:
      return "SpaceExhausted";
    case StopReason::kClusterCannotRun:
      return "ClusterCannotRun";
  }
  return "Unknown";
}

struct TuningSession::Impl {
  CampaignSpec spec;
  MessagePool* pool = nullptr;
  std::unique_ptr<StrategyEngine> engine;
  std::unique_ptr<StrategyEngine> builtin;
  std::shared_ptr<const PlannerModel> model;
  std::shared_ptr<const FailureAnalyzer> diagnostician;
  std::function<double()> clock;
  SessionOptions opt;
  std::vector<PastOptimization> past;
  std::shared_ptr<const SearchSpaceIndex> space;  // never null once created
  std::unique_ptr<Validator> validator;
  bool engine_exhausted = false;

  bool Learns() const { return opt.use_pool && opt.use_calibration; }
  void Refit();
  bool HasAnomalies() const;
  // The pool without its anomalous trials: what calibration, the engine and the Validator see.
  MessagePool LearnView() const;
  // What the engine and Validator see: the pool, or with --ablate pool only the tried configs.
  MessagePool HistoryView() const;
  CalibratedPredictor MakePredictor(const MessagePool& view) const;
  EngineContext MakeContext(const MessagePool& view, const CalibratedPredictor& predictor,
                            int want) const;
  TrialCounts Counts() const;
  const TrialRecord* Best() const;
  std::vector<const TrialRecord*> PendingRetries() const;
  // Approved re-runs (RequestRetry) not yet proposed, while budget is left.
  std::vector<const TrialRecord*> RequestedRetries() const;
  bool Retried(const TrialRecord& t) const;
  TrialPlan AddPlan(const Config& c, const Proposal& p, const Prediction& pred,
                    int64_t analysis_index, const std::string& retry_of);
  std::optional<health::Anomaly> DetectAnomaly(const TrialRecord& t, const TrialOutcome& o,
                                               const TrialMetrics& m) const;
  void RecordAnomaly(TrialRecord* t, health::Anomaly a, const std::vector<std::string>& nodes);
  // `depth`: how many times this step already asked again after a fully rejected batch.
  Status ProposeFromEngine(int n, std::vector<TrialPlan>* plans, int depth = 0);
  std::optional<StopDecision> Converged() const;
};

void TuningSession::Impl::Refit() {
  CalibrationState prior;
  if (Learns()) {
    pool->calibration() = HasAnomalies() ? FitCalibration(*space, *model, LearnView(), prior)
                                         : FitCalibration(*space, *model, *pool, prior);
  } else {
    MessagePool empty;
    pool->calibration() = FitCalibration(*space, *model, empty, prior);
  }
}

bool TuningSession::Impl::HasAnomalies() const {
  return std::any_of(pool->trials().begin(), pool->trials().end(),
                     [](const TrialRecord& t) { return t.anomaly.has_value(); });
}

MessagePool TuningSession::Impl::LearnView() const {
  if (!HasAnomalies()) return *pool;
  MessagePool view = *pool;
  auto& trials = view.trials();
  trials.erase(std::remove_if(trials.begin(), trials.end(),
                              [](const TrialRecord& t) { return t.anomaly.has_value(); }),
               trials.end());
  return view;
}

MessagePool TuningSession::Impl::HistoryView() const {
  if (opt.use_pool) return LearnView();
  MessagePool view;
  for (const auto& t : pool->trials()) {
    if (t.anomaly) continue;
    TrialRecord r;
    r.iteration = t.iteration;
    r.name = t.name;
    r.config = t.config;
    r.phase = t.phase == TrialPhase::kSucceeded ? TrialPhase::kFailed : t.phase;
    view.AddTrial(std::move(r));
  }
  view.calibration() = pool->calibration();
  return view;
}

CalibratedPredictor TuningSession::Impl::MakePredictor(const MessagePool& view) const {
  std::vector<ResidualObservation> residuals;
  if (Learns()) {
    residuals = CollectResiduals(*space, *model, view, view.calibration(), spec.objective);
  }
  return CalibratedPredictor(space.get(), spec.objective, view.calibration(), std::move(residuals));
}

EngineContext TuningSession::Impl::MakeContext(const MessagePool& view,
                                               const CalibratedPredictor& predictor,
                                               int want) const {
  EngineContext ctx;
  ctx.spec = &spec;
  ctx.pool = &view;
  ctx.model = model.get();
  ctx.workload = model->workload();
  ctx.space = space.get();
  ctx.predictor = &predictor;
  ctx.validator = validator.get();
  ctx.iteration = pool->LastIteration() + 1;
  ctx.want = want;
  ctx.seed = opt.seed;
  ctx.noise_fraction = opt.noise_fraction;
  ctx.past = &past;
  return ctx;
}

TrialCounts TuningSession::Impl::Counts() const {
  TrialCounts c;
  for (const auto& t : pool->trials()) {
    ++c.total;
    if (t.phase == TrialPhase::kPending || t.phase == TrialPhase::kRunning) ++c.running;
    if (t.phase == TrialPhase::kSucceeded) ++(t.anomaly ? c.anomalous : c.succeeded);
    if (t.phase == TrialPhase::kFailed) ++c.failed;
  }
  c.rejected = static_cast<int64_t>(pool->rejected().size());
  return c;
}

const TrialRecord* TuningSession::Impl::Best() const {
  const TrialRecord* best = nullptr;
  for (const auto& t : pool->trials()) {
    if (!t.Learnable() || !t.metrics) continue;
    const double v = t.metrics->Objective(spec.objective.metric);
    if (v <= 0) continue;
    if (best == nullptr ||
        IsBetter(v, best->metrics->Objective(spec.objective.metric), spec.objective.Maximize())) {
      best = &t;
    }
  }
  return best;
}

std::vector<const TrialRecord*> TuningSession::Impl::PendingRetries() const {
  std::vector<const TrialRecord*> out;
  if (!opt.use_failure_analysis) return out;
  for (const auto& t : pool->trials()) {
    if (t.phase != TrialPhase::kFailed || !t.failure || !t.failure->retryable) continue;
    if (!t.retry_of.empty()) continue;
    if (!Retried(t)) out.push_back(&t);
  }
  return out;
}

bool TuningSession::Impl::Retried(const TrialRecord& t) const {
  return std::any_of(pool->trials().begin(), pool->trials().end(),
                     [&](const TrialRecord& r) { return r.retry_of == t.name; });
}

std::vector<const TrialRecord*> TuningSession::Impl::RequestedRetries() const {
  std::vector<const TrialRecord*> out;
  if (Counts().total >= spec.budget.max_trials) return out;
  const auto failure_retries = PendingRetries();
  for (const auto& t : pool->trials()) {
    if (!t.retry_requested || Retried(t)) continue;
    if (std::find(failure_retries.begin(), failure_retries.end(), &t) != failure_retries.end()) {
      continue;  // already re-run as a retryable failure (with the requested avoid_nodes)
    }
    out.push_back(&t);
  }
  return out;
}

TrialPlan TuningSession::Impl::AddPlan(const Config& c, const Proposal& p, const Prediction& pred,
                                       int64_t analysis_index, const std::string& retry_of) {
  TrialRecord r;
  const TrialRecord* original = retry_of.empty() ? nullptr : pool->FindTrial(retry_of);
  r.iteration = original ? original->iteration : pool->LastIteration() + 1;
  r.name = original ? retry_of + "-r1" : TrialName(spec, r.iteration);
  r.config = c;
  r.phase = TrialPhase::kPending;
  r.proposal = p;
  r.prediction = pred;
  r.retry_of = retry_of;
  const TrialRecord* best = Best();
  r.change =
      best ? DescribeChange(best->config, c) : (p.proposed_by == "baseline" ? "baseline" : "start");
  if (original) r.change = "retry";
  if (original) r.avoid_nodes = original->retry_avoid_nodes;
  r.analysis_index = analysis_index;
  TrialPlan plan{r.name,       r.iteration, r.config, r.proposal,
                 r.prediction, r.retry_of,  r.change, r.avoid_nodes};
  pool->AddTrial(std::move(r));
  return plan;
}

Status TuningSession::Impl::ProposeFromEngine(int n, std::vector<TrialPlan>* plans, int depth) {
  const MessagePool view = HistoryView();
  const CalibratedPredictor predictor = MakePredictor(view);
  EngineContext ctx = MakeContext(view, predictor, n);
  const Analysis analysis = AnalyzeBottlenecks(ctx);
  ctx.analysis = &analysis;
  const size_t analysis_index = pool->AddAnalysis(analysis);
  auto proposal = engine->Propose(ctx);
  std::string note;
  if (!proposal.ok()) {
    if (!opt.fallback_to_builtin) return proposal.status();
    note = "built-in fallback (" + engine->name() + ": " + proposal.status().message() + "): ";
    proposal = builtin->Propose(ctx);
    if (!proposal.ok()) return proposal.status();
  }
  if (proposal->analysis) {
    Analysis a = *proposal->analysis;
    a.iteration = ctx.iteration;
    pool->AddAnalysis(std::move(a));
  }
  const int64_t aidx = static_cast<int64_t>(pool->analyses().size()) - 1;
  (void)analysis_index;
  const Config reference = ReferenceConfig(ctx);
  int rejected_now = 0;
  // n more than the plans already made in this call (a baseline or retries come first).
  const size_t target = plans->size() + static_cast<size_t>(n);
  auto consider = [&](const std::vector<EngineCandidate>& candidates) {
    for (const auto& cand : candidates) {
      if (plans->size() >= target) break;
      Config c = cand.config;
      for (const auto& [k, v] : reference) c.emplace(k, v);  // complete missing keys
      // Validate against the live pool view plus this batch (pending trials count as tried).
      const bool borderline =
          cand.memory_borderline && pool->calibration().oom_observations == 0 && opt.use_pool;
      // Anomalous trials do not count as tried: their configs may be proposed again.
      const bool filtered = !opt.use_pool || HasAnomalies();
      const MessagePool filtered_view = filtered ? HistoryView() : MessagePool();
      const ValidationVerdict v =
          validator->Check(c, filtered ? filtered_view : *pool, predictor, borderline ? 0.0 : -1.0);
      if (!v.ok) {
        pool->AddRejected({pool->LastIteration() + 1, c, v.reason, cand.proposal.proposed_by});
        ++rejected_now;
        continue;
      }
      if (opt.measurable && !opt.measurable(c)) {  // replay: no trial can answer for it
        pool->AddRejected({pool->LastIteration() + 1, c, std::string(kUnmeasuredReason),
                           cand.proposal.proposed_by});
        ++rejected_now;
        continue;
      }
      Proposal p = cand.proposal;
      p.rationale = note + p.rationale;
      plans->push_back(AddPlan(c, p, v.prediction.ToPrediction(), aidx, ""));
    }
  };
  const size_t before = plans->size();
  consider(proposal->candidates);
  if (plans->size() == before && opt.fallback_to_builtin && engine->name() != "builtin") {
    auto fallback = builtin->Propose(ctx);
    if (fallback.ok()) {
      note = "built-in fallback (" + engine->name() + " had no valid candidate): ";
      consider(fallback->candidates);
    }
  }
  if (plans->size() == before) {
    // Every candidate was turned away: the rejections are in the pool now, so the engine is asked
    // again (it must choose something else) until it proposes nothing new.
    if (rejected_now > 0 && depth < kMaxReproposals) return ProposeFromEngine(n, plans, depth + 1);
    engine_exhausted = true;
  }
  return Status::Ok();
}

std::optional<StopDecision> TuningSession::Impl::Converged() const {
  const TrialCounts counts = Counts();
  if (!opt.stop_on_convergence || counts.running > 0 ||
      counts.succeeded < opt.min_successes_before_convergence || !PendingRetries().empty() ||
      !RequestedRetries().empty()) {
    return std::nullopt;
  }
  const TrialRecord* best = Best();
  if (best == nullptr) return std::nullopt;
  const MessagePool view = HistoryView();
  const CalibratedPredictor predictor = MakePredictor(view);
  const EngineContext ctx = MakeContext(view, predictor, 1);
  const auto top = RankCandidates(ctx, 1, 2.0);
  const double observed = best->metrics->Objective(spec.objective.metric);
  const bool maximize = spec.objective.Maximize();
  const double bar =
      maximize ? observed * (1 + opt.noise_fraction) : observed / (1 + opt.noise_fraction);
  if (!top.empty()) {
    const double optimistic = maximize ? top.front().score : -top.front().score;
    if (IsBetter(optimistic, bar, maximize)) return std::nullopt;
  }
  if (opt.use_pool) {
    const double bar_u = predictor.Utility(bar);
    if (BestBorderline(ctx, bar_u + std::abs(bar_u) * opt.noise_fraction)) {
      return std::nullopt;  // the engine still has its memory-borderline attempt to make
    }
  }
  StopDecision d;
  d.reason = StopReason::kConverged;
  d.message = "No untried configuration is predicted to beat " + best->name + " (" +
              ObjectiveMetricName(spec.objective.metric) + " " + Significant(observed, 4) +
              ") by more than the " + Significant(opt.noise_fraction * 100, 4) + "% noise.";
  return d;
}

// The spread (log scale) of a calibrated prediction: the residual spread of the campaign's own
// trials, the prediction's distance-based uncertainty, and the run-to-run noise.
// The residual spread is blended with a prior of 15% (worth 3 observations): a fit resting on a
// few trials that it matches exactly has not shown that its predictions are that sharp.
static double PredictionSpread(const CalibrationState& c, const PointPrediction& p) {
  constexpr double kPriorSigma = 0.15, kPriorWeight = 3;
  const double dof = std::max<double>(0, static_cast<double>(c.observations) - 1);
  const double sigma2 =
      (dof * c.residual_sigma * c.residual_sigma + kPriorWeight * kPriorSigma * kPriorSigma) /
      (dof + kPriorWeight);
  return std::sqrt(sigma2 + p.uncertainty * p.uncertainty + 0.02 * 0.02);
}

// The runner's own anomaly wins; then the logged step times; then, once calibrated, the
// objective against the calibrated prediction for this config made from the healthy history
// (this trial is still Pending, so it does not predict itself).
std::optional<health::Anomaly> TuningSession::Impl::DetectAnomaly(const TrialRecord& t,
                                                                  const TrialOutcome& o,
                                                                  const TrialMetrics& m) const {
  if (o.anomaly) return o.anomaly;
  if (!opt.detect_anomalies) return std::nullopt;
  if (!o.step_times.empty()) {
    if (auto a = health::DetectStepTimeAnomaly(o.step_times, opt.anomaly_thresholds)) return a;
  }
  if (!Learns()) return std::nullopt;  // an uncalibrated model is no fair bar
  // The same configuration already measured as slow, and this run agrees with it: the slowness
  // belongs to the configuration (the model misses it), not to a node.
  const double objective = m.Objective(spec.objective.metric);
  for (const auto& other : pool->trials()) {
    if (&other == &t || !other.anomaly || !other.metrics ||
        ConfigKey(other.config) != ConfigKey(t.config)) {
      continue;
    }
    const double before = other.metrics->Objective(spec.objective.metric);
    if (before > 0 && objective > 0 && std::abs(objective / before - 1) < 0.1) return std::nullopt;
  }
  const MessagePool view = HistoryView();
  const CalibratedPredictor predictor = MakePredictor(view);
  const int64_t idx = space->Find(ConfigKey(t.config));
  const PointPrediction p = idx >= 0 ? predictor.Predict(static_cast<size_t>(idx))
                                     : predictor.PredictConfig(t.config, *model);
  return health::DetectSlowerThanPredicted(
      ObjectiveMetricName(spec.objective.metric), m.Objective(spec.objective.metric), p.objective,
      spec.objective.Maximize(), static_cast<int>(pool->calibration().observations),
      opt.anomaly_thresholds, PredictionSpread(pool->calibration(), p));
}

void TuningSession::Impl::RecordAnomaly(TrialRecord* t, health::Anomaly a,
                                        const std::vector<std::string>& nodes) {
  if (a.node_names.empty()) a.node_names = nodes;
  std::string where;
  for (const auto& n : a.node_names) where += (where.empty() ? "" : ", ") + n;
  PoolMessage msg;
  msg.iteration = t->iteration;
  msg.trial = t->name;
  msg.kind = "Anomaly";
  msg.text = t->name + " succeeded but is anomalous (" + health::AnomalyKindName(a.kind) +
             "): " + a.summary + ". " +
             (where.empty() ? std::string("Its nodes are unknown")
                            : "It ran on " + where + ", which may be unhealthy") +
             "; the campaign does not learn from it and proposes to re-run it elsewhere.";
  pool->AddMessage(std::move(msg));
  t->anomaly = std::move(a);
}

TuningSession::TuningSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TuningSession::~TuningSession() = default;

Result<std::unique_ptr<TuningSession>> TuningSession::Create(const CampaignSpec& spec,
                                                             MessagePool* pool, SessionDeps deps) {
  if (pool == nullptr) return Status::Invalid("pool: required");
  if (deps.space != nullptr && deps.model == nullptr) {
    return Status::Invalid("deps.space: given without the model that evaluated it");
  }
  auto impl = std::make_unique<Impl>();
  impl->spec = spec;
  impl->pool = pool;
  impl->opt = deps.options;
  impl->clock = std::move(deps.clock);
  impl->past = std::move(deps.past);
  impl->model = std::move(deps.model);
  if (impl->model == nullptr) {
    auto m = CreateModelPlanner(spec);
    if (!m.ok()) return m.status();
    impl->model = std::shared_ptr<const PlannerModel>(std::move(m).value());
  }
  if (spec.search_space.empty()) {
    return Status::Invalid("spec.searchSpace.parameters: empty; list at least one parameter");
  }
  if (spec.baseline) {
    PARATUNE_RETURN_IF_ERROR(spec.CheckInSearchSpace(*spec.baseline, "spec.baseline"));
    for (const auto& p : spec.search_space) {
      if (spec.baseline->count(p.name) == 0) {
        return Status::Invalid("spec.baseline." + p.name +
                               ": missing; the baseline must set every searched parameter");
      }
    }
  }
  impl->space = std::move(deps.space);
  if (impl->space == nullptr) {
    auto space = SearchSpaceIndex::Build(spec, *impl->model, impl->opt.max_space_points);
    if (!space.ok()) return space.status();
    impl->space = std::make_shared<const SearchSpaceIndex>(std::move(space).value());
  }
  if (impl->space->valid().empty()) {
    const auto v = impl->model->Violations(impl->space->points().front().config);
    return Status::Invalid("spec.searchSpace: no valid configuration among " +
                           std::to_string(impl->space->points().size()) +
                           " (for example: " + (v.empty() ? std::string("?") : v.front()) + ")");
  }
  ValidatorOptions vo;
  vo.check_memory = impl->opt.validator_checks_memory;
  vo.check_known_failures = impl->opt.use_failure_analysis && impl->opt.use_pool;
  impl->validator =
      std::make_unique<Validator>(&impl->spec, impl->model.get(), impl->space.get(), vo);
  impl->engine = std::move(deps.engine);
  impl->builtin = std::make_unique<BuiltinEngine>(impl->opt.seed);
  if (impl->engine == nullptr) impl->engine = std::make_unique<BuiltinEngine>(impl->opt.seed);
  impl->diagnostician = std::move(deps.diagnostician);  // null: made at the first failure
  impl->Refit();
  return std::unique_ptr<TuningSession>(new TuningSession(std::move(impl)));
}

Result<std::vector<TrialPlan>> TuningSession::ProposeNext(int n) {
  Impl& s = *impl_;
  std::vector<TrialPlan> plans;
  if (n <= 0) return plans;
  const TrialCounts counts = s.Counts();
  const int64_t left = s.spec.budget.max_trials - counts.total;
  if (left <= 0) return plans;
  if (auto stop = ShouldStop(); stop && stop->reason != StopReason::kSpaceExhausted) return plans;
  n = static_cast<int>(std::min<int64_t>(n, left));
  for (const TrialRecord* t : s.RequestedRetries()) {
    if (static_cast<int>(plans.size()) >= n) break;
    Proposal p = t->proposal;
    p.rationale = "Approved re-run of " + t->name + " on other nodes: " +
                  (t->anomaly ? t->anomaly->summary
                              : (t->failure ? t->failure->summary : std::string("requested"))) +
                  ".";
    const Config c = t->config;
    const Prediction pred = t->prediction;
    const std::string name = t->name;
    plans.push_back(s.AddPlan(c, p, pred, t->analysis_index, name));
  }
  for (const TrialRecord* t : s.PendingRetries()) {
    if (static_cast<int>(plans.size()) >= n) break;
    Proposal p = t->proposal;
    p.rationale =
        "Retry of " + t->name + ": " + t->failure->summary + " is not caused by the configuration.";
    const Config c = t->config;
    const Prediction pred = t->prediction;
    const std::string name = t->name;
    plans.push_back(s.AddPlan(c, p, pred, t->analysis_index, name));
  }
  if (static_cast<int>(plans.size()) < n && s.spec.baseline && s.pool->trials().empty() &&
      !BaselineRejected(*s.pool)) {
    const MessagePool view = s.HistoryView();
    const CalibratedPredictor predictor = s.MakePredictor(view);
    Proposal p{"The campaign's baseline: the reference every later trial is compared with.",
               "reference", 1.0, "baseline"};
    // Pre-flight (agents/session/baseline_preflight.h): a baseline that cannot run costs no trial.
    const BaselinePreflight pre = CheckBaseline(*s.spec.baseline, *s.space, *s.model, predictor);
    if (pre.rejected) s.pool->AddRejected({1, *s.spec.baseline, pre.reason, "baseline"});
    if (pre.rejected) p.rationale = "Stands in for the campaign's baseline: " + pre.reason + ".";
    const Config* start = pre.rejected ? (pre.start ? &*pre.start : nullptr) : &*s.spec.baseline;
    if (start != nullptr) {
      const Prediction pred = predictor.PredictConfig(*start, *s.model).ToPrediction();
      plans.push_back(s.AddPlan(*start, p, pred, -1, ""));
    }
  }
  if (static_cast<int>(plans.size()) < n) {
    PARATUNE_RETURN_IF_ERROR(s.ProposeFromEngine(n - static_cast<int>(plans.size()), &plans));
  }
  return plans;
}

Status TuningSession::RecordOutcome(const TrialOutcome& outcome) {
  Impl& s = *impl_;
  TrialRecord* t = s.pool->FindTrial(outcome.name);
  if (t == nullptr) return Status::NotFound("trial \"" + outcome.name + "\" is not in the pool");
  if (t->phase != TrialPhase::kPending && t->phase != TrialPhase::kRunning) {
    return Status::Precondition("trial \"" + outcome.name + "\" already finished");
  }
  // "Nothing left to propose" held for what was known then; an outcome is new evidence (a
  // baseline that ran alone gives the engine its first reference), so the engine is asked again.
  s.engine_exhausted = false;
  std::optional<TrialMetrics> metrics = outcome.metrics;
  if (outcome.succeeded && !metrics) {
    auto collected = collectors::CollectTrialMetrics(
        s.spec.metrics_collector, outcome.termination_message, outcome.log,
        s.model->workload() != nullptr ? CollectorContextFor(s.spec, s.model->workload())
                                       : CollectorContextFor(s.spec));
    if (collected.ok()) metrics = *collected;
  }
  if (!outcome.node_names.empty()) t->node_names = outcome.node_names;
  t->accelerator_hours = outcome.accelerator_hours;
  if (outcome.succeeded && metrics && metrics->Objective(s.spec.objective.metric) > 0) {
    if (auto anomaly = s.DetectAnomaly(*t, outcome, *metrics)) {
      s.RecordAnomaly(t, std::move(*anomaly), outcome.node_names);
    }
    t->phase = TrialPhase::kSucceeded;
    t->metrics = *metrics;
  } else {
    t->phase = TrialPhase::kFailed;
    FailureEvidence ev{outcome.log.empty() ? outcome.termination_message : outcome.log,
                       outcome.pod_reason, outcome.exit_code, outcome.events};
    FailureDiagnosis d;
    if (outcome.succeeded) {
      d.category = "Unknown";
      d.summary = "the trial exited 0 but reported no " +
                  std::string(ObjectiveMetricName(s.spec.objective.metric)) + " (Confidence: 90)";
      d.confidence = 90;
    } else if (outcome.diagnosis) {
      d = *outcome.diagnosis;
    } else if (s.opt.use_failure_analysis) {
      // A session given no analyzer loads the embedded knowledge (tens of ms) only when a failure
      // needs it: most campaigns and tests never diagnose one.
      if (s.diagnostician == nullptr) s.diagnostician = MakeEmbeddedFailureAnalyzer();
      d = s.diagnostician->Diagnose(ev, t->config, s.model->workload());
    } else {
      d.category = "Unknown";
      d.summary = "failure analysis switched off";
    }
    t->failure = d;
  }
  s.Refit();
  return Status::Ok();
}

Status TuningSession::RequestRetry(const std::string& trial_name,
                                   std::vector<std::string> avoid_nodes) {
  Impl& s = *impl_;
  TrialRecord* t = s.pool->FindTrial(trial_name);
  if (t == nullptr) return Status::NotFound("trial \"" + trial_name + "\" is not in the pool");
  const bool failed = t->phase == TrialPhase::kFailed;
  if (!t->anomaly && !failed) {
    return Status::Precondition("trial \"" + trial_name +
                                "\" is neither anomalous nor failed; there is nothing to re-run");
  }
  if (t->retry_requested || s.Retried(*t)) {
    return Status::Precondition("trial \"" + trial_name + "\" was already re-run or queued");
  }
  std::sort(avoid_nodes.begin(), avoid_nodes.end());
  avoid_nodes.erase(std::unique(avoid_nodes.begin(), avoid_nodes.end()), avoid_nodes.end());
  t->retry_requested = true;
  t->retry_avoid_nodes = avoid_nodes;
  std::string avoid;
  for (const auto& n : avoid_nodes) avoid += (avoid.empty() ? "" : ", ") + n;
  s.pool->AddMessage({t->iteration, t->name, "RetryRequested",
                      "A re-run of " + t->name + " was approved" +
                          (avoid.empty() ? std::string(".") : " away from " + avoid + ".")});
  return Status::Ok();
}

std::optional<health::Anomaly> TuningSession::AnomalyOf(const std::string& trial) const {
  const TrialRecord* t = impl_->pool->FindTrial(trial);
  return t ? t->anomaly : std::nullopt;
}

std::optional<StopDecision> TuningSession::ShouldStop() const {
  const Impl& s = *impl_;
  const TrialCounts counts = s.Counts();
  const TrialRecord* best = s.Best();
  const bool maximize = s.spec.objective.Maximize();
  if (best != nullptr && s.spec.objective.target > 0) {
    const double v = best->metrics->Objective(s.spec.objective.metric);
    if (!IsBetter(s.spec.objective.target, v, maximize)) {
      return StopDecision{
          StopReason::kTargetReached,
          best->name + " reached the target " + ObjectiveMetricName(s.spec.objective.metric) + " " +
              Significant(s.spec.objective.target, 4) + " (" + Significant(v, 4) + ")."};
    }
  }
  for (const auto& t : s.pool->trials()) {
    // A pod the scheduler can never place, as the cluster's Nodes or a signature say; a
    // category guessed from resembling logs does not end a campaign.
    if (t.phase != TrialPhase::kFailed || !t.failure || t.failure->retryable ||
        !t.failure->Is(FailureCategory::kUnschedulable) || t.failure->ByResemblance()) {
      continue;
    }
    return StopDecision{StopReason::kClusterCannotRun,
                        t.name +
                            " can never be scheduled here, and every trial of the campaign "
                            "asks for the same pods: " +
                            t.failure->summary};
  }
  if (counts.failed >= s.spec.budget.max_failed_trials) {
    return StopDecision{StopReason::kMaxFailedTrials,
                        std::to_string(counts.failed) + " trials failed (maxFailedTrials " +
                            std::to_string(s.spec.budget.max_failed_trials) + ")."};
  }
  if (counts.running > 0) return std::nullopt;
  if (counts.total >= s.spec.budget.max_trials && s.PendingRetries().empty()) {
    return StopDecision{
        StopReason::kBudgetExhausted,
        "All " + std::to_string(s.spec.budget.max_trials) + " trials of the budget were used."};
  }
  if (s.engine_exhausted && s.PendingRetries().empty() && s.RequestedRetries().empty()) {
    return StopDecision{
        StopReason::kSpaceExhausted,
        "The " + s.engine->name() + " engine has no untried valid configuration left to propose."};
  }
  return s.Converged();
}

SessionSummary TuningSession::Summary() const {
  const Impl& s = *impl_;
  SessionSummary sum;
  sum.counts = s.Counts();
  if (const TrialRecord* b = s.Best()) sum.best = *b;
  for (const auto& t : s.pool->trials()) {
    if (t.proposal.proposed_by != "baseline") continue;
    sum.baseline = t;
    if (t.phase == TrialPhase::kSucceeded) break;
  }
  if (!s.pool->analyses().empty()) sum.last_analysis = s.pool->analyses().back();
  for (const auto& t : s.pool->trials()) {
    if (t.anomaly) sum.anomalous.push_back(t);
  }
  if (sum.best && sum.baseline && sum.baseline->metrics) {
    const double a = sum.baseline->metrics->Objective(s.spec.objective.metric);
    const double b = sum.best->metrics->Objective(s.spec.objective.metric);
    if (a > 0 && b > 0)
      sum.improvement_over_baseline = s.spec.objective.Maximize() ? b / a - 1 : a / b - 1;
  }
  return sum;
}

double TuningSession::ObjectiveOf(const TrialRecord& t) const {
  return t.metrics ? t.metrics->Objective(impl_->spec.objective.metric) : 0;
}
const CampaignSpec& TuningSession::spec() const { return impl_->spec; }
const MessagePool& TuningSession::pool() const { return *impl_->pool; }
const SearchSpaceIndex& TuningSession::space() const { return *impl_->space; }
const PlannerModel& TuningSession::model() const { return *impl_->model; }
std::string TuningSession::engine_name() const { return impl_->engine->name(); }

std::optional<BaselinePreflight> TuningSession::RejectedBaseline() const {
  const CampaignSpec& spec = this->spec();
  if (!spec.baseline || !BaselineRejected(pool())) return std::nullopt;
  const MessagePool empty;
  const CalibrationState prior = FitCalibration(space(), model(), empty, CalibrationState{});
  const CalibratedPredictor predictor(&space(), spec.objective, prior, {});
  return CheckBaseline(*spec.baseline, space(), model(), predictor);
}

}  // namespace paratune
