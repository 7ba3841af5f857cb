// The strategy engines: analyst + strategist behind one interface, implemented by the built-in
// engine (model-ranked search), the honest baselines (random, grid, greedy) and the LLM engine
// (agents/engines/llm_engine.h). Engines are never trusted: every candidate still passes the
// Validator in TuningSession.
//
// Engines are made in agents/engines/engine_factory.h: CreateStrategyEngine(name) the built-in
// ones (builtin, random, grid, greedy), MakeEngineFactory every engine, the LLM ones included.
// No registry: the names are fixed.
#ifndef PARATUNE_AGENTS_ENGINES_STRATEGY_ENGINE_H_
#define PARATUNE_AGENTS_ENGINES_STRATEGY_ENGINE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/core/config.h"
#include "agents/predict/planner_model.h"
#include "agents/predict/predictor.h"
#include "agents/predict/validator.h"
#include "agents/trials/message_pool.h"
#include "base/status.h"

namespace paratune {

struct PastOptimization;  // agents/knowledge/knowledge_base.h

// Everything an engine may read. Pointers are owned by the TuningSession and valid for the
// duration of one Propose call.
struct EngineContext {
  const CampaignSpec* spec = nullptr;
  const MessagePool* pool = nullptr;        // history (with --ablate pool: tried configs only)
  const PlannerModel* model = nullptr;      // uncalibrated model
  const Workload* workload = nullptr;       // may be null (fake models)
  const SearchSpaceIndex* space = nullptr;  // every (sampled) configuration + its base estimate
  const CalibratedPredictor* predictor = nullptr;  // calibrated scoring
  const Validator* validator = nullptr;            // pre-flight check engines may use to pre-filter
  const Analysis* analysis = nullptr;              // the built-in Analyst's view for this iteration
  int64_t iteration = 0;                           // iteration the first candidate will get
  int want = 1;                                    // how many trials the session wants to launch
  uint64_t seed = 1;                               // for engines that draw random numbers
  double noise_fraction = 0.02;                    // measurement noise the session assumes
  // Past-optimization records for a warm start (agents/engines/warm_start.h); may be null.
  const std::vector<PastOptimization>* past = nullptr;

  // Calibrated prediction for any configuration (indexed or not).
  PointPrediction Score(const Config& c) const;
  // Validator verdict against the pool (does not record anything).
  ValidationVerdict Validate(const Config& c) const;
  // The best successful trial by the objective (nullptr when none).
  const TrialRecord* BestTrial() const;
};

struct EngineCandidate {
  Config config;      // full configuration (every searched parameter)
  Proposal proposal;  // rationale, expectedImpact, confidence, proposedBy
  // Predicted to fit but inside the Validator's memory margin. The session validates it with no
  // margin only while the campaign has seen no out-of-memory failure (at most one such risk).
  bool memory_borderline = false;
};

struct EngineProposal {
  std::optional<Analysis> analysis;         // engine's own analysis (else the built-in one is kept)
  std::vector<EngineCandidate> candidates;  // best first; more than `want` is fine
};

class StrategyEngine {
 public:
  virtual ~StrategyEngine() = default;
  virtual std::string name() const = 0;
  // Analyst + strategist. An error makes the session fall back to the built-in engine for this
  // step (and records why). Not required to be thread-safe.
  virtual Result<EngineProposal> Propose(const EngineContext& ctx) = 0;
};

struct EngineOptions {
  const CampaignSpec* spec = nullptr;
  uint64_t seed = 1;
  MessagePool* pool = nullptr;  // for engines that record exchanges (LLM); may be null
};

}  // namespace paratune

#endif  // PARATUNE_AGENTS_ENGINES_STRATEGY_ENGINE_H_
