// `paratune simulate` as a library function: runs the whole agent loop in-process against a
// trial runner (the simulated cluster of agents/sim by default), exactly as the operator runs it
// against pods: ProposeNext -> run -> RecordOutcome (metrics from the termination message,
// failures through the Diagnostician) -> ShouldStop. Used by the CLI and the benchmark.
#ifndef PARATUNE_AGENTS_SIM_CAMPAIGN_SIMULATION_H_
#define PARATUNE_AGENTS_SIM_CAMPAIGN_SIMULATION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agents/core/campaign.h"
#include "agents/engines/engine_factory.h"
#include "agents/health/node_ledger.h"
#include "agents/session/tuning_session.h"
#include "agents/trials/message_pool.h"

namespace paratune {

// Runs one trial and reports what a pod would: exit code, log tail, termination message.
// Not thread-safe unless an implementation says so.
class TrialRunner {
 public:
  virtual ~TrialRunner() = default;
  // `attempt` is 0 for a first run, 1 for its retry (infrastructure faults are drawn per attempt).
  virtual TrialOutcome Run(const TrialPlan& plan, int64_t attempt) = 0;
  // The same on the named nodes (rank order), for runners that model node placement and
  // per-node faults; the default ignores the nodes.
  virtual TrialOutcome RunOn(const TrialPlan& plan, int64_t attempt,
                             const std::vector<std::string>& nodes) {
    (void)nodes;
    return Run(plan, attempt);
  }
  // The noise-free objective of `config` on this cluster, or nullopt when it cannot run
  // (for --exhaustive and the benchmark's "fraction of the optimum").
  virtual std::optional<TrialMetrics> TrueMetrics(const Config& config) const = 0;
  // Replay (contract section 11): the configurations this runner can answer for (a
  // ReplayRunner's Measured). Non-null: other candidates cost no trial, the engine chooses
  // again, and the JSON gains "unmeasured": [configs]. Null (the default): every configuration
  // can run.
  virtual std::function<bool(const Config&)> Measurable() const { return nullptr; }
};

struct SimulationOptions {
  std::string strategy = "builtin";  // builtin | random | grid | greedy | llm | hybrid
  // Builds the engine named by `strategy` (MakeEngineFactory: the CLI's, with its LLM
  // overrides); null: the built-in engines only (CreateStrategyEngine).
  EngineFactory engine_factory;
  uint64_t seed = 1;
  int64_t max_trials = 0;   // 0: spec.budget.maxTrials
  bool exhaustive = false;  // also find the optimum of the whole space
  std::string ablate;       // "" | pool | failure-analysis | calibration
  // Cluster health (issue 9): > 0 simulates a pool of that many nodes (devices per node from
  // spec.hardware): each trial is placed on the nodes it needs, avoiding nodes the ledger holds
  // suspect; RetryTrial remediations are approved at once (no person in the loop here). The JSON
  // then gains per-trial "nodes"/"anomaly" and "suspectNodes". 0: no placement (as before).
  int64_t nodes = 0;
  health::LedgerOptions ledger;
  // The ledger's state before this campaign (the operator keeps one across campaigns); empty:
  // a fresh ledger with `ledger` options.
  std::optional<health::NodeLedger> start_ledger;
};

// Model-free baselines (random, grid, greedy) run without the memory check, convergence stop
// or built-in fallback; `ablate` switches one part of the loop off. kInvalidArgument naming
// `--ablate` or `--strategy` on unknown values.
Result<SessionOptions> SessionOptionsFor(const SimulationOptions& options);

struct OptimumResult {
  Config config;
  TrialMetrics metrics;
  double objective = 0;
  int64_t evaluated = 0;  // configurations evaluated
  int64_t runnable = 0;   // of which run without failing
};

// Best configuration of the (enumerated) space on `runner`'s cluster, noise-free.
std::optional<OptimumResult> FindOptimum(const TuningSession& session, const TrialRunner& runner);

struct SimulationResult {
  nlohmann::json json;  // the contract's simulate JSON (trials, best, baseline, optimum, ...)
  std::optional<health::NodeLedger> ledger;  // with SimulationOptions::nodes > 0
  std::optional<StopDecision> stop;
  double wall_seconds = 0;
};

// Called after each finished trial (for the live table); may be empty.
using TrialObserver = std::function<void(const TrialRecord&, const TuningSession&)>;

// Runs the campaign to its stop on `runner` (not owned; MakeSimulatedClusterRunner for the
// simulated cluster, created with the same spec and seed). Errors: a campaign that
// cannot run (kInvalidArgument naming the field), an unknown strategy.
Result<SimulationResult> RunSimulation(const CampaignSpec& spec, const SimulationOptions& options,
                                       TrialRunner* runner, const TrialObserver& observer,
                                       SessionDeps deps = {});

// The simulate JSON of a finished session (used by RunSimulation; exposed for the operator's
// `paratune report CAMPAIGN`).
nlohmann::json SimulationJson(const TuningSession& session, const std::optional<StopDecision>& stop,
                              const std::optional<OptimumResult>& optimum);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_SIM_CAMPAIGN_SIMULATION_H_
