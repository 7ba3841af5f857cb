// paratune simulate -f CAMPAIGN.yaml [--seed N] [--max-trials K] [--reality perturbed|structural]
//   [--measurements FILE.jsonl] [--past past-optimization.json ...]
//   [--strategy builtin|llm|random|grid|greedy] [--exhaustive]
//   [--ablate pool|failure-analysis|calibration] [--nodes N [--node-faults TEXT]] [-o json]
// The whole agent loop offline against the simulated cluster (contract section 6). People see a
// live table (iteration, change, rationale, result, objective, best so far) and a summary;
// `-o json` prints {"trials", "best", "baseline", "optimum", "stopReason", "pool", ...}.
// --nodes N places every trial on simulated nodes paratune-gpu-0..N-1 (devices per node from
// spec.hardware), avoiding nodes found suspect; --node-faults "NODE=KIND:SEVERITY;..." makes some
// of them sick (agents/sim/node_faults.h). Anomalous trials and suspect nodes are then shown,
// and the JSON gains per-trial "nodes"/"anomaly" and "suspectNodes".
// --measurements FILE.jsonl replays measured trials (contract section 11) instead of the
// simulated cluster: a candidate with no line in the file costs no trial (JSON "unmeasured").
// --past FILE (repeatable): past-optimization records (a report's past-optimization.json); the
// built-in engine starts from the best one on the same model and hardware
// (agents/engines/warm_start.h).
// --reality picks the simulated cluster's kind: perturbed (the model with perturbed constants)
// or structural (a reality whose form differs from the model; agents/sim/reality.h).
// --evaluate CONFIG_JSON [--attempt K] runs one trial of CONFIG instead of the loop (for
// external tuners such as bench/optuna_peer.py).
#include <cstdio>
#include <iostream>
#include <string>

#include "agents/core/campaign.h"
#include "agents/engines/engine_factory.h"
#include "agents/engines/llm_engine.h"
#include "agents/engines/warm_start.h"
#include "agents/sim_campaign/replay.h"
#include "agents/sim_campaign/sim_runner.h"
#include "agents/sim_campaign/simulation.h"
#include "base/strings.h"
#include "cli/command.h"

namespace paratune::cli {

namespace {

std::string Fit(std::string s, size_t width) {
  if (s.size() > width) s = s.substr(0, width - 1) + "~";
  return s + std::string(width - s.size(), ' ');
}

class LiveTable {
 public:
  explicit LiveTable(const CampaignSpec& spec) : spec_(spec) {}
  void Header() {
    std::cout << Fit("iter", 5) << Fit("trial", 22) << Fit("change", 26) << Fit("result", 22)
              << Fit(ObjectiveMetricName(spec_.objective.metric), 11) << Fit("best", 9)
              << "rationale\n";
  }
  void Row(const TrialRecord& t, const TuningSession& s) {
    if (!header_printed_) Header();
    header_printed_ = true;
    const double obj = s.ObjectiveOf(t);
    if (obj > 0 && (best_ == 0 || (spec_.objective.Maximize() ? obj > best_ : obj < best_))) {
      best_ = obj;
    }
    std::string result = TrialPhaseName(t.phase);
    if (t.failure) result = "Failed " + t.failure->category;
    if (t.anomaly) result = std::string("Anomaly ") + health::AnomalyKindName(t.anomaly->kind);
    std::string where;
    for (const auto& n : t.node_names) where += (where.empty() ? "" : ",") + n;
    std::cout << Fit(std::to_string(t.iteration), 5) << Fit(t.name, 22) << Fit(t.change, 26)
              << Fit(result, 22) << Fit(obj > 0 ? Significant(obj, 4) : "-", 11)
              << Fit(best_ > 0 ? Significant(best_, 4) : "-", 9)
              << (where.empty() ? std::string() : "[" + where + "] ")
              << t.proposal.rationale.substr(0, 110) << "\n"
              << std::flush;
  }

 private:
  const CampaignSpec& spec_;
  double best_ = 0;
  bool header_printed_ = false;
};

void PrintSummary(const nlohmann::json& j) {
  std::cout << "\nStopped: " << j.value("stopReason", "") << ". " << j.value("stopMessage", "")
            << "\n";
  const auto& c = j["trialCounts"];
  std::cout << "Trials: " << c.value("total", 0) << " (" << c.value("succeeded", 0)
            << " succeeded, " << c.value("failed", 0) << " failed, " << c.value("rejected", 0)
            << " candidates rejected before running)\n";
  if (j["baseline"].is_object()) {
    const double b = j["baseline"].value("objective", 0.0);
    std::cout << "Baseline: " << j["baseline"].value("trialName", "") << " "
              << (b > 0 ? Significant(b, 4) : std::string("failed (no objective)")) << "\n";
  }
  if (j["best"].is_object()) {
    std::cout << "Best:     " << j["best"].value("trialName", "") << " "
              << Significant(j["best"].value("objective", 0.0), 4) << " ("
              << Significant(100 * j["best"].value("improvementOverBaseline", 0.0), 4)
              << "% over baseline) " << j["best"]["config"].dump() << "\n";
  }
  if (j.contains("optimum") && j["optimum"].is_object()) {
    std::cout << "Optimum:  " << Significant(j["optimum"].value("objective", 0.0), 4) << " "
              << j["optimum"]["config"].dump() << " (exhaustive over "
              << j["optimum"].value("evaluated", 0) << " valid configurations)\n";
  }
  if (c.value("anomalous", 0) > 0) {
    std::cout << "Anomalous: " << c.value("anomalous", 0)
              << " succeeded trials set aside (slower than their nodes should allow)\n";
  }
  if (j.contains("suspectNodes")) {
    std::cout << "Suspect nodes:";
    if (j["suspectNodes"].empty()) std::cout << " none";
    std::cout << "\n";
    for (const auto& n : j["suspectNodes"]) {
      std::string reasons;
      for (const auto& r : n["reasons"])
        reasons += (reasons.empty() ? "" : "; ") + r.get<std::string>();
      std::cout << "  " << n.value("name", "") << " score " << Significant(n.value("score", 0.0), 4)
                << " (after " << n.value("afterTrial", "") << "): " << reasons << "\n";
    }
  }
  std::cout << "Wall time: " << Significant(j.value("wallSeconds", 0.0), 4) << " s\n";
}

// --evaluate CONFIG_JSON: one trial of CONFIG on the simulated cluster of --seed/--reality, for
// external tuners (bench/optuna_peer.py): {"config", "succeeded", "objective" (measured, with
// the run's noise), "trueObjective" (noise-free, 0 when it cannot run)} plus "optimum" with
// --exhaustive. Each call with the same --attempt is the same run.
int RunEvaluate(const Args& args, const CampaignSpec& spec, const TrialRunner& runner_const,
                TrialRunner* runner, uint64_t seed) {
  const nlohmann::json cj =
      nlohmann::json::parse(args.GetOr("--evaluate", ""), nullptr, /*allow_exceptions=*/false);
  if (cj.is_discarded()) {
    return ReportError("simulate", Status::Invalid("--evaluate: a JSON object expected"));
  }
  auto config = ConfigFromJson(cj, "--evaluate");
  if (!config.ok()) return ReportError("simulate", config.status());
  auto attempt = args.GetInt("--attempt", 0, 0, 1 << 20);
  if (!attempt.ok()) return ReportError("simulate", attempt.status());
  TrialPlan plan;
  plan.name = spec.name + "-eval";
  plan.config = *config;
  const TrialOutcome o = runner->Run(plan, *attempt);
  nlohmann::json out = {{"config", ConfigToJson(*config)}, {"succeeded", o.succeeded}};
  double objective = 0;
  if (o.succeeded) {  // read as the operator and the loop read a finished trial
    auto m = collectors::CollectTrialMetrics(spec.metrics_collector, o.termination_message, o.log,
                                             CollectorContextFor(spec));
    if (m.ok()) objective = m->Objective(spec.objective.metric);
  }
  out["objective"] = objective;
  const auto truth = runner_const.TrueMetrics(*config);
  out["trueObjective"] = truth ? truth->Objective(spec.objective.metric) : 0.0;
  if (args.Has("--exhaustive")) {
    MessagePool pool;
    SessionDeps deps;
    auto session = TuningSession::Create(spec, &pool, std::move(deps));
    if (!session.ok()) return ReportError("simulate", session.status());
    const auto optimum = FindOptimum(**session, runner_const);
    out["optimum"] = optimum ? optimum->objective : 0.0;
  }
  out["seed"] = seed;
  std::cout << out.dump() << "\n";
  return kExitOk;
}

int RunSimulate(const Args& args) {
  const std::string file = args.GetOr("-f", "");
  if (file.empty()) return ReportError("simulate", Status::Invalid("-f: campaign file required"));
  auto spec = LoadCampaignFile(file);
  if (!spec.ok()) return ReportError("simulate", spec.status());
  SimulationOptions opt;
  auto seed = args.GetInt("--seed", 1, 0, INT64_MAX);
  if (!seed.ok()) return ReportError("simulate", seed.status());
  auto max_trials = args.GetInt("--max-trials", 0, 0, 100000);
  if (!max_trials.ok()) return ReportError("simulate", max_trials.status());
  opt.seed = static_cast<uint64_t>(*seed);
  opt.max_trials = *max_trials;
  opt.strategy =
      args.GetOr("--strategy", spec->agents.engine.empty() ? "builtin" : spec->agents.engine);
  opt.exhaustive = args.Has("--exhaustive");
  opt.ablate = args.GetOr("--ablate", "");
  auto nodes = args.GetInt("--nodes", 0, 0, 100000);
  if (!nodes.ok()) return ReportError("simulate", nodes.status());
  opt.nodes = *nodes;
  const std::string node_faults = args.GetOr("--node-faults", "");
  if (!node_faults.empty() && opt.nodes == 0) {
    return ReportError("simulate",
                       Status::Invalid("--node-faults: needs --nodes N (the simulated node pool)"));
  }
  // LLM engines (agents/engines/llm_engine.h, owned by the LLM engine): --llm-endpoint,
  // --llm-model and --llm-timeout override spec.agents.llm (key: OPENAI_API_KEY); --llm-replay
  // RUN.json answers from the exchanges recorded in an earlier run instead of a model.
  {
    LlmCliOverrides llm{args.GetOr("--llm-endpoint", ""),
                        args.GetOr("--llm-model", ""),
                        {},
                        args.GetOr("--llm-replay", ""),
                        EnvOr("OPENAI_API_KEY", ""),
                        EnvOr("PARATUNE_KNOWLEDGE_DIR", "")};
    if (auto t = args.Get("--llm-timeout")) {
      auto secs = ParseDurationSeconds(*t, "--llm-timeout");
      if (!secs.ok()) return ReportError("simulate", secs.status());
      llm.timeout = std::chrono::seconds(*secs);
    }
    EngineFactoryOptions engines;
    engines.seed = opt.seed;
    engines.overrides = std::move(llm);
    opt.engine_factory = MakeEngineFactory(std::move(engines));
  }
  const bool json = args.JsonOutput();
  std::unique_ptr<LiveTable> table;
  TrialObserver observer;
  if (!json) {
    table = std::make_unique<LiveTable>(*spec);
    observer = [&](const TrialRecord& t, const TuningSession& s) { table->Row(t, s); };
  }
  std::unique_ptr<TrialRunner> runner;
  if (auto measurements = args.Get("--measurements")) {
    if (opt.nodes > 0) {
      return ReportError("simulate", Status::Invalid("--measurements: cannot be combined with "
                                                     "--nodes (measured trials have no nodes)"));
    }
    auto trials = LoadMeasurementsFile(*measurements, *spec);
    if (!trials.ok()) return ReportError("simulate", trials.status());
    auto replay = MakeReplayRunner(*spec, std::move(trials).value());
    if (!replay.ok()) return ReportError("simulate", replay.status());
    runner = std::move(replay).value();
  } else {
    auto sim = MakeSimulatedClusterRunner(*spec, opt.seed, node_faults,
                                          args.GetOr("--reality", "perturbed"));
    if (!sim.ok()) return ReportError("simulate", sim.status());
    runner = std::move(sim).value();
  }
  if (args.Has("--evaluate")) return RunEvaluate(args, *spec, *runner, runner.get(), opt.seed);
  SessionDeps deps;
  auto past = LoadPastOptimizationFiles(args.GetAll("--past"));
  if (!past.ok()) return ReportError("simulate", past.status().WithPrefix("--past"));
  deps.past = std::move(past).value();
  auto result = RunSimulation(*spec, opt, runner.get(), observer, std::move(deps));
  if (!result.ok()) return ReportError("simulate", result.status());
  if (json) {
    std::cout << result->json.dump(2) << "\n";
  } else {
    PrintSummary(result->json);
  }
  return kExitOk;
}

}  // namespace

PARATUNE_COMMAND("simulate",
                 "run the agent loop against the simulated cluster (-f CAMPAIGN [--strategy S] "
                 "[--exhaustive] [--nodes N [--node-faults NODE=KIND:SEVERITY;...]] "
                 "[--reality perturbed|structural] [--measurements FILE.jsonl] [--past FILE])",
                 {"--exhaustive"}, RunSimulate,
                 {"-f", "--ablate", "--attempt", "--evaluate", "--llm-endpoint", "--llm-model",
                  "--llm-replay", "--llm-timeout", "--max-trials", "--measurements",
                  "--node-faults", "--nodes", "--past", "--reality", "--seed", "--strategy"});

}  // namespace paratune::cli
