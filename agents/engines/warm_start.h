// Warm start (issue 15, item 5): past-optimization records (agents/report/report.h
// PastOptimizationRecord, the report's past-optimization.json; the operator reads them from the
// campaign's knowledge ConfigMaps and earlier campaigns' published results) make the built-in
// engine's first proposal the best known configuration for the same model and hardware, when it
// is in this campaign's search space and the Validator (the memory model with its margin, the
// known failures) lets it run. The rationale names the record ("warm start from past:<id>: ...").
#ifndef PARATUNE_AGENTS_ENGINES_WARM_START_H_
#define PARATUNE_AGENTS_ENGINES_WARM_START_H_

#include <optional>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/engines/strategy_engine.h"
#include "agents/knowledge/knowledge_base.h"

namespace paratune {

// True when `p` was measured on the campaign's model and hardware: with a `workloadSpec`, the
// same model section, accelerator and device count (and TPU topology); without one, the same
// "<preset> on <N> x <accelerator>" head of its workload text (never for custom models, whose
// text does not identify them). Sequence length and global batch may differ: the search space
// and the Validator decide whether the configuration still applies.
bool SameModelAndHardware(const CampaignSpec& spec, const PastOptimization& p);

// The records of `past` on the campaign's model and hardware, best first: those measured with
// the campaign's objective metric ranked by afterValue in its direction, then the others in
// their given order.
std::vector<const PastOptimization*> MatchingPastOptimizations(
    const CampaignSpec& spec, const std::vector<PastOptimization>& past);

struct WarmStart {
  std::optional<EngineCandidate> candidate;  // the best known configuration, ready to launch
  // Why no candidate although records matched ("warm start from past:x skipped: ..."); "" when
  // a candidate was found, nothing matched, or the warm start already ran.
  std::string skipped;
};

// The warm-start candidate for this step: the best matching record whose configuration (its
// searched keys; keys it lacks are taken from spec.baseline) is a point of the search space that
// has not been tried in this campaign and passes ctx.Validate. Nothing once the pool holds a
// trial other than the baseline (the warm start is the engine's first proposal; from then on the
// campaign learns from its own trials) or when ctx.past is null or empty.
WarmStart FindWarmStart(const EngineContext& ctx);

// Reads past-optimization files (YAML or JSON, PastOptimizationRecord's format) in order.
// Errors name the file.
Result<std::vector<PastOptimization>> LoadPastOptimizationFiles(
    const std::vector<std::string>& paths);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_ENGINES_WARM_START_H_
