#include "agents/sim_campaign/simulation.h"

#include <chrono>
#include <cmath>
#include <map>
#include <set>

#include "agents/core/failure_category.h"
#include "agents/engines/engine_factory.h"
#include "agents/model/workload.h"
#include "agents/session/baseline_preflight.h"
#include "agents/sim/sim_placement.h"

namespace paratune {

namespace {

bool IsModelFree(const std::string& strategy) {
  return strategy == "random" || strategy == "grid" || strategy == "greedy";
}

nlohmann::json TrialJson(const TrialRecord& t) {
  nlohmann::json j = t.ToJson();
  j["proposedBy"] = t.proposal.proposed_by;
  j["expectedImpact"] = t.proposal.expected_impact;
  j["confidence"] = t.proposal.confidence;
  if (!t.node_names.empty() || t.anomaly) {  // node placement was simulated (issue 9)
    j["nodes"] = t.node_names;
    j["anomaly"] = t.anomaly ? t.anomaly->ToJson() : nlohmann::json(nullptr);
  }
  return j;
}

nlohmann::json RecordSummary(const TrialRecord& t, double objective) {
  return {{"trialName", t.name},
          {"iteration", t.iteration},
          {"config", ConfigToJson(t.config)},
          {"metrics", t.metrics ? t.metrics->ToJson() : nlohmann::json(nullptr)},
          {"objective", objective}};
}

// The node pool of --nodes: devices per node from the campaign's hardware.
Result<SimNodePool> MakeNodePool(const CampaignSpec& spec, const SimulationOptions& o) {
  auto w = ResolveWorkload(spec);
  if (!w.ok()) return w.status();
  const int64_t per_node = std::max<int64_t>(1, w->DevicesPerNode());
  const int64_t per_trial = std::max<int64_t>(1, (w->devices + per_node - 1) / per_node);
  return SimNodePool::Create(o.nodes, per_trial, w->IsTpu() ? "paratune-tpu-" : "paratune-gpu-",
                             o.seed, o.ledger);
}

// After a trial on simulated nodes: the ledger scores its nodes; a node fault or an anomaly gets
// its RetryTrial remediation approved at once (the simulation has no person to ask; the operator
// waits for the approval annotation), away from the trial's nodes and every suspect. Retries
// are not re-run again. `suspect_after` records the trial after which each node became suspect.
void AttributeTrial(TuningSession& s, const TrialRecord& t, SimNodePool* nodes, int64_t index,
                    std::map<std::string, std::string>* suspect_after) {
  health::TrialObservation obs;
  obs.campaign = s.spec().name;
  obs.trial = t.name;
  obs.nodes = t.node_names;
  if (t.phase == TrialPhase::kFailed && t.failure) {
    obs.failure_category = t.failure->category;
    obs.failure_confidence = t.failure->confidence;
  }
  obs.anomaly = t.anomaly;
  for (const auto& n : nodes->ledger().RecordTrial(obs, SimTime(index))) {
    (*suspect_after)[n] = t.name;
  }
  const FailureCategory category = FailureCategoryOf(obs.failure_category);
  const bool node_failure =
      category == FailureCategory::kNodeFault || category == FailureCategory::kCollectiveTimeout;
  if ((!t.anomaly && !node_failure) || !t.retry_of.empty()) return;
  std::vector<std::string> avoid = t.node_names;
  for (const auto& n : nodes->ledger().SuspectNames()) avoid.push_back(n);
  (void)s.RequestRetry(t.name, avoid);  // FailedPrecondition when already queued: nothing to do
}

nlohmann::json SuspectNodesJson(const health::NodeLedger& ledger,
                                const std::map<std::string, std::string>& suspect_after) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : ledger.Suspects()) {
    auto it = suspect_after.find(r.name);
    out.push_back({{"name", r.name},
                   {"score", std::round(r.score * 1000) / 1000},
                   {"since", r.suspect_since},
                   {"afterTrial", it == suspect_after.end() ? "" : it->second},
                   {"reasons", health::SuspectReasons(r)}});
  }
  return out;
}

}  // namespace

Result<SessionOptions> SessionOptionsFor(const SimulationOptions& options) {
  SessionOptions o;
  o.seed = options.seed;
  if (IsModelFree(options.strategy)) {
    o.validator_checks_memory = false;
    o.stop_on_convergence = false;
    o.fallback_to_builtin = false;
  }
  if (options.ablate == "pool") {
    o.use_pool = false;
  } else if (options.ablate == "failure-analysis") {
    o.use_failure_analysis = false;
  } else if (options.ablate == "calibration") {
    o.use_calibration = false;
  } else if (!options.ablate.empty()) {
    return Status::Invalid("--ablate: unknown part \"" + options.ablate +
                           "\" (pool, failure-analysis, calibration)");
  }
  return o;
}

std::optional<OptimumResult> FindOptimum(const TuningSession& session, const TrialRunner& runner) {
  std::optional<OptimumResult> best;
  const auto& space = session.space();
  const ObjectiveSpec& obj = session.spec().objective;
  int64_t evaluated = 0, runnable = 0;
  for (size_t i : space.valid()) {
    ++evaluated;
    const auto m = runner.TrueMetrics(space.points()[i].config);
    if (!m) continue;
    const double v = m->Objective(obj.metric);
    if (v <= 0) continue;
    ++runnable;
    if (!best || (obj.Maximize() ? v > best->objective : v < best->objective)) {
      best = OptimumResult{space.points()[i].config, *m, v, 0, 0};
    }
  }
  if (best) {
    best->evaluated = evaluated;
    best->runnable = runnable;
  }
  return best;
}

nlohmann::json SimulationJson(const TuningSession& session, const std::optional<StopDecision>& stop,
                              const std::optional<OptimumResult>& optimum) {
  const MessagePool& pool = session.pool();
  const SessionSummary sum = session.Summary();
  nlohmann::json j;
  j["campaign"] = session.spec().name;
  j["workload"] = WorkloadJson(session.spec());
  j["objective"] = {{"metric", ObjectiveMetricName(session.spec().objective.metric)},
                    {"maximize", session.spec().objective.Maximize()},
                    {"target", session.spec().objective.target}};
  j["strategy"] = session.engine_name();
  j["searchSpace"] = {{"size", session.space().total_size()},
                      {"valid", session.space().valid().size()},
                      {"sampled", session.space().sampled()}};
  j["trials"] = nlohmann::json::array();
  for (const auto& t : pool.trials()) j["trials"].push_back(TrialJson(t));
  j["best"] = nullptr;
  if (sum.best) {
    j["best"] = RecordSummary(*sum.best, session.ObjectiveOf(*sum.best));
    j["best"]["improvementOverBaseline"] = sum.improvement_over_baseline;
  }
  j["baseline"] = sum.baseline ? RecordSummary(*sum.baseline, session.ObjectiveOf(*sum.baseline))
                               : nlohmann::json(nullptr);
  if (optimum) {
    j["optimum"] = {{"config", ConfigToJson(optimum->config)},
                    {"metrics", optimum->metrics.ToJson()},
                    {"objective", optimum->objective},
                    {"evaluated", optimum->evaluated},
                    {"runnable", optimum->runnable}};
  }
  double hours = 0;
  for (const auto& t : pool.trials()) hours += t.accelerator_hours;
  j["acceleratorHours"] = hours;  // every finished trial's, as status.acceleratorHours.spent
  j["trialCounts"] = {{"total", sum.counts.total},     {"succeeded", sum.counts.succeeded},
                      {"failed", sum.counts.failed},   {"rejected", sum.counts.rejected},
                      {"running", sum.counts.running}, {"anomalous", sum.counts.anomalous}};
  j["lastAnalysis"] = sum.last_analysis.ToJson();
  j["stopReason"] = stop ? StopReasonName(stop->reason) : "";
  j["stopMessage"] = stop ? stop->message : "";
  j["pool"] = pool.ToJson();
  if (auto pre = session.RejectedBaseline()) j["baselinePreflight"] = pre->ToJson();
  return j;
}

Result<SimulationResult> RunSimulation(const CampaignSpec& spec_in,
                                       const SimulationOptions& options, TrialRunner* runner,
                                       const TrialObserver& observer, SessionDeps deps) {
  const auto start = std::chrono::steady_clock::now();
  auto session_options = SessionOptionsFor(options);
  if (!session_options.ok()) return session_options.status();
  CampaignSpec spec = spec_in;
  if (options.max_trials > 0) spec.budget.max_trials = options.max_trials;
  if (runner == nullptr) return Status::Invalid("runner: required");
  session_options->measurable = runner->Measurable();
  MessagePool pool;
  deps.options = *session_options;
  if (deps.engine == nullptr) {
    EngineOptions eo{&spec, options.seed, &pool};
    auto engine = options.engine_factory
                      ? options.engine_factory(WithEngine(spec, options.strategy), &pool)
                      : CreateStrategyEngine(options.strategy, eo);
    if (!engine.ok()) return engine.status().WithPrefix("--strategy");
    deps.engine = std::move(engine).value();
  }
  auto session = TuningSession::Create(spec, &pool, std::move(deps));
  if (!session.ok()) return session.status();
  TuningSession& s = **session;
  SimulationResult result;
  std::optional<SimNodePool> nodes;
  std::map<std::string, std::string> suspect_after;
  if (options.nodes > 0) {
    auto p = MakeNodePool(spec, options);
    if (!p.ok()) return p.status();
    nodes = std::move(p).value();
    if (options.start_ledger) nodes->ledger() = *options.start_ledger;
  }
  int64_t finished = 0;
  const int parallel = static_cast<int>(std::max<int64_t>(1, spec.budget.parallel_trials));
  for (int guard = 0; guard < 100000; ++guard) {
    if ((result.stop = s.ShouldStop())) break;
    auto plans = s.ProposeNext(parallel);
    if (!plans.ok()) return plans.status();
    if (plans->empty()) {
      result.stop = s.ShouldStop();
      if (!result.stop) {
        result.stop = StopDecision{StopReason::kSpaceExhausted, "Nothing left to propose."};
      }
      break;
    }
    std::set<std::string> busy;  // nodes of the batch's trials, which run side by side
    for (const auto& plan : *plans) {
      const int64_t attempt = plan.retry_of.empty() ? 0 : 1;
      std::vector<std::string> placed;
      if (nodes) {
        placed = nodes->Place(plan.name, plan.avoid_nodes, busy);
        busy.insert(placed.begin(), placed.end());
      }
      const TrialOutcome outcome =
          nodes ? runner->RunOn(plan, attempt, placed) : runner->Run(plan, attempt);
      PARATUNE_RETURN_IF_ERROR(s.RecordOutcome(outcome));
      if (nodes) AttributeTrial(s, *pool.FindTrial(plan.name), &*nodes, finished, &suspect_after);
      ++finished;
      if (observer) observer(*pool.FindTrial(plan.name), s);
    }
  }
  std::optional<OptimumResult> optimum;
  if (options.exhaustive) optimum = FindOptimum(s, *runner);
  result.json = SimulationJson(s, result.stop, optimum);
  result.json["seed"] = options.seed;
  result.json["strategy"] = options.strategy;
  result.json["ablate"] = options.ablate;
  if (session_options->measurable) {
    nlohmann::json unmeasured = nlohmann::json::array();
    for (const auto& r : pool.rejected()) {
      if (r.reason == kUnmeasuredReason) unmeasured.push_back(ConfigToJson(r.config));
    }
    result.json["unmeasured"] = unmeasured;
  }
  if (nodes) {
    result.json["nodes"] = nodes->names();
    result.json["suspectNodes"] = SuspectNodesJson(nodes->ledger(), suspect_after);
    result.json["nodeLedger"] = nodes->ledger().ToJson();
    result.ledger = nodes->ledger();
  }
  result.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.json["wallSeconds"] = result.wall_seconds;
  return result;
}

}  // namespace paratune
