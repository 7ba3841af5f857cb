// One definition of each objective metric (issue 35, item 3): the metrics a log or termination
// message lacks are derived from those it has and the campaign, and each metric's source is
// recorded. Internal to agents/collectors; pure functions.
#ifndef PARATUNE_AGENTS_COLLECTORS_METRIC_DERIVATION_H_
#define PARATUNE_AGENTS_COLLECTORS_METRIC_DERIVATION_H_

#include <cstdint>
#include <map>
#include <string>

#include "agents/collectors/metric_collector.h"

namespace paratune::collectors::internal {

// Records `source` for every non-zero metric of `m` not already in `sources`.
void MarkSources(const TrialMetrics& m, const char* source,
                 std::map<std::string, std::string>* sources);

// Fills what the reading lacks, in this order: tokens/s per device <-> step time (global batch
// x sequence / devices per step; `logged_gbs` when the log printed it, else the campaign's);
// Megatron-DeepSpeed's recomputation-counting TFLOPs (`counts_recompute`) replaced by model FLOPs
// (or scaled by 3/4 for full recompute when the model's FLOPs are unknown); TFLOP/s per device
// = model FLOPs per token x tokens/s per device (or MFU x peak); MFU = TFLOP/s / peak. Derived
// metrics are marked kSourceDerived; values pushed out of range (inf, NaN) are dropped, and so
// are a derived TFLOP/s above the accelerator's peak and the MFU derived from it
// (CollectedMetrics::implausible_derivation says why).
void DeriveMissing(const CollectorContext& ctx, int64_t logged_gbs, bool counts_recompute,
                   CollectedMetrics* c);

}  // namespace paratune::collectors::internal

#endif  // PARATUNE_AGENTS_COLLECTORS_METRIC_DERIVATION_H_
