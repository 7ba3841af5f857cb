// The session's best as a past-optimization record (issue 15, item 5): what the operator publishes
// beside the best configuration so that later campaigns on the same model and hardware warm-start
// from it (agents/engines/warm_start.h reads such records).
#ifndef PARATUNE_AGENTS_SESSION_PAST_OPTIMIZATION_H_
#define PARATUNE_AGENTS_SESSION_PAST_OPTIMIZATION_H_

#include <nlohmann/json.hpp>

#include "agents/session/tuning_session.h"

namespace paratune {

// The session's best as a past-optimization document, {"pastOptimizations": [{id
// "<campaign>/<trial>", workload, workloadSpec, before (the baseline, when it ran), after (the
// best), metric, beforeValue, afterValue, note}]}: what the operator publishes beside the best
// configuration (data key past-optimization.json) so later campaigns in the namespace warm-start
// from it. Stable while the best and baseline do not change. Null when nothing succeeded yet.
nlohmann::json PastOptimizationOfSession(const TuningSession& session);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_SESSION_PAST_OPTIMIZATION_H_
