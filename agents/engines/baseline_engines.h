// Honest baselines for the benchmark and `paratune simulate --strategy`: they never read the
// performance model (the session runs them with the Validator's memory check off, so their
// out-of-memory trials cost what they cost on a real cluster). Constraint-violating
// configurations are skipped as any user would by writing a valid search space.
//   random: uniform over the valid, untried configurations (Katib's random search).
//   grid:   the valid configurations in lexicographic order of the search space (Katib's grid).
//   greedy: one parameter at a time from the baseline (or the first valid configuration), each
//           value of the first parameter, moving to the best so far, then the next parameter,
//           the way experts tune by hand; stops at a local optimum.
// All three are stateless over the pool, so they resume like the built-in engine.
#ifndef PARATUNE_AGENTS_ENGINES_BASELINE_ENGINES_H_
#define PARATUNE_AGENTS_ENGINES_BASELINE_ENGINES_H_

#include <cstdint>
#include <string>

#include "agents/engines/strategy_engine.h"

namespace paratune {

class RandomSearchEngine : public StrategyEngine {
 public:
  explicit RandomSearchEngine(uint64_t seed) : seed_(seed) {}
  std::string name() const override { return "random"; }
  Result<EngineProposal> Propose(const EngineContext& ctx) override;

 private:
  uint64_t seed_;
};

class GridSearchEngine : public StrategyEngine {
 public:
  std::string name() const override { return "grid"; }
  Result<EngineProposal> Propose(const EngineContext& ctx) override;
};

class GreedyEngine : public StrategyEngine {
 public:
  std::string name() const override { return "greedy"; }
  Result<EngineProposal> Propose(const EngineContext& ctx) override;
};

}  // namespace paratune

#endif  // PARATUNE_AGENTS_ENGINES_BASELINE_ENGINES_H_
