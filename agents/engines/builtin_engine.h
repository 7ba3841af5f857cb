// The built-in engine: ranks the whole (enumerated) valid space by the calibrated predicted
// objective with a small optimism bonus for configurations far from anything observed (so one
// model error cannot trap the search), launches the best untried candidates, and explains each
// one against the best configuration so far: which single steps the Analyst found, and when the
// winner needs several parameters changed at once, why single steps cannot reach it.
#ifndef PARATUNE_AGENTS_ENGINES_BUILTIN_ENGINE_H_
#define PARATUNE_AGENTS_ENGINES_BUILTIN_ENGINE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agents/engines/strategy_engine.h"

namespace paratune {

// A ranked candidate: index into ctx.space->points() and its calibrated prediction.
struct RankedCandidate {
  size_t index = 0;
  PointPrediction prediction;
  double score = 0;  // utility with the exploration bonus; larger is better
};

// Valid, untried points that pass the Validator, best score first, at most `limit`.
// `exploration` scales the optimism bonus (0: pure exploitation).
std::vector<RankedCandidate> RankCandidates(const EngineContext& ctx, size_t limit,
                                            double exploration);

// The best untried point predicted to fit the device but only inside the learned memory margin
// (optima of memory-hungry settings often sit there), when no memory failure has been seen yet
// and it is predicted to beat `bar` (utility scale); nullopt otherwise.
std::optional<RankedCandidate> BestBorderline(const EngineContext& ctx, double bar_utility);

// The exploration weight the built-in engine uses at this point of the campaign.
double ExplorationWeight(const EngineContext& ctx);

class BuiltinEngine : public StrategyEngine {
 public:
  explicit BuiltinEngine(uint64_t seed) : seed_(seed) {}
  std::string name() const override { return "builtin"; }
  Result<EngineProposal> Propose(const EngineContext& ctx) override;

  // The rationale, expected impact and confidence of launching `candidate` now.
  static Proposal Explain(const EngineContext& ctx, const RankedCandidate& candidate,
                          const Analysis& analysis);

 private:
  uint64_t seed_;
};

}  // namespace paratune

#endif  // PARATUNE_AGENTS_ENGINES_BUILTIN_ENGINE_H_
