#include "agents/engines/strategy_engine.h"

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

}  // namespace paratune
