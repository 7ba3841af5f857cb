#include "agents/engines/strategy_engine.h"

#include <map>
#include <mutex>

#include "agents/engines/baseline_engines.h"
#include "agents/engines/builtin_engine.h"

namespace paratune {

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, StrategyEngineFactory> factories;  // guarded by mu
};

Registry& GetRegistry() {
  static Registry* r = [] {
    auto* reg = new Registry();
    reg->factories["builtin"] =
        [](const EngineOptions& o) -> Result<std::unique_ptr<StrategyEngine>> {
      return std::unique_ptr<StrategyEngine>(new BuiltinEngine(o.seed));
    };
    reg->factories["random"] =
        [](const EngineOptions& o) -> Result<std::unique_ptr<StrategyEngine>> {
      return std::unique_ptr<StrategyEngine>(new RandomSearchEngine(o.seed));
    };
    reg->factories["grid"] = [](const EngineOptions&) -> Result<std::unique_ptr<StrategyEngine>> {
      return std::unique_ptr<StrategyEngine>(new GridSearchEngine());
    };
    reg->factories["greedy"] = [](const EngineOptions&) -> Result<std::unique_ptr<StrategyEngine>> {
      return std::unique_ptr<StrategyEngine>(new GreedyEngine());
    };
    return reg;
  }();
  return *r;
}

}  // namespace

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

void RegisterStrategyEngine(const std::string& name, StrategyEngineFactory factory) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.factories[name] = std::move(factory);
}

Result<std::unique_ptr<StrategyEngine>> CreateStrategyEngine(const std::string& name,
                                                             const EngineOptions& options) {
  StrategyEngineFactory factory;
  {
    Registry& r = GetRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.factories.find(name);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (const auto& n : StrategyEngineNames()) known += (known.empty() ? "" : ", ") + n;
    return Status::Invalid("strategy: unknown engine \"" + name + "\" (known: " + known + ")");
  }
  return factory(options);
}

std::vector<std::string> StrategyEngineNames() {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [n, f] : r.factories) names.push_back(n);
  return names;
}

}  // namespace paratune
