#include "agents/engines/strategy_engine.h"

#include "agents/engines/baseline_engines.h"
#include "agents/engines/builtin_engine.h"
#include "base/strings.h"

namespace paratune {

PointPrediction EngineContext::Score(const Config& c) const {
  return predictor->PredictConfig(c, *model);
}

ValidationVerdict EngineContext::Validate(const Config& c) const {
  return validator->Check(c, *pool, *predictor);
}

const TrialRecord* EngineContext::BestTrial() const {
  const TrialRecord* best = nullptr;
  const bool maximize = spec->objective.Maximize();
  for (const auto& t : pool->trials()) {
    if (t.phase != TrialPhase::kSucceeded || !t.metrics) continue;
    const double v = t.metrics->Objective(spec->objective.metric);
    if (v <= 0) continue;
    if (best == nullptr) {
      best = &t;
      continue;
    }
    const double b = best->metrics->Objective(spec->objective.metric);
    if (maximize ? v > b : v < b) best = &t;
  }
  return best;
}

Result<std::unique_ptr<StrategyEngine>> CreateStrategyEngine(const std::string& name,
                                                             const EngineOptions& options) {
  if (name == "builtin") return std::unique_ptr<StrategyEngine>(new BuiltinEngine(options.seed));
  if (name == "random") {
    return std::unique_ptr<StrategyEngine>(new RandomSearchEngine(options.seed));
  }
  if (name == "grid") return std::unique_ptr<StrategyEngine>(new GridSearchEngine());
  if (name == "greedy") return std::unique_ptr<StrategyEngine>(new GreedyEngine());
  if (name == "llm" || name == "hybrid") {
    return Status::Invalid("strategy: engine \"" + name +
                           "\" needs a model client: build it with MakeEngineFactory "
                           "(agents/engines/engine_factory.h)");
  }
  return Status::Invalid("strategy: unknown engine \"" + name +
                         "\" (known: " + Join(StrategyEngineNames(), ", ") + ")");
}

std::vector<std::string> StrategyEngineNames() {
  return {"builtin", "greedy", "grid", "hybrid", "llm", "random"};
}

}  // namespace paratune
