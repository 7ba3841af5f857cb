// The Analyst (bottleneck analysis): from the pool and the calibrated model to a health
// diagnosis of the best configuration so far (severely under-utilized, high pipeline overhead,
// memory-bound, communication-bound, compute-bound) and ranked "Change X from A to B"
// suggestions, each with its reason: the model's breakdown delta, and where the pool holds two
// trials that differ only in X, the measured effect (a controlled comparison).
#ifndef PARATUNE_AGENTS_ENGINES_ANALYST_H_
#define PARATUNE_AGENTS_ENGINES_ANALYST_H_

#include <string>
#include <vector>

#include "agents/engines/strategy_engine.h"
#include "agents/trials/message_pool.h"

namespace paratune {

// A measured one-parameter effect: two successful trials that differ only in `parameter`.
struct ControlledComparison {
  std::string parameter;
  ParamValue from, to;
  std::string from_trial, to_trial;
  double relative_change = 0;  // objective(to) / objective(from) - 1 (better-direction signed)
};

// Every pair of successful trials in `pool` that differ in exactly one parameter.
std::vector<ControlledComparison> FindControlledComparisons(const MessagePool& pool,
                                                            const CampaignSpec& spec);

// The configuration the analysis reasons from: the best successful trial, else the baseline,
// else the model's best valid point. Empty when the space has no valid point.
Config ReferenceConfig(const EngineContext& ctx);

// Pure function of the context; `max_suggestions` bounds the ranked list.
Analysis AnalyzeBottlenecks(const EngineContext& ctx, size_t max_suggestions = 5);

// "tp 1->2, mbs 2->1" (keys in config order); "" when equal.
std::string DescribeChange(const Config& from, const Config& to);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_ENGINES_ANALYST_H_
