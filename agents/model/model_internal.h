// Internals of the performance model shared by its .cc files (and the simulated cluster, which
// re-runs them under its hidden constants). Not part of the agents' API.
#ifndef PARATUNE_AGENTS_MODEL_MODEL_INTERNAL_H_
#define PARATUNE_AGENTS_MODEL_MODEL_INTERNAL_H_

#include "agents/core/results.h"
#include "agents/model/parallel_plan.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"

namespace paratune::internal {

// Bytes per device on one pipeline stage.
struct GpuMemory {
  double parameters = 0, gradients = 0, optimizer = 0, activations = 0, other = 0;
  double Total() const { return parameters + gradients + optimizer + activations + other; }
};

GpuMemory GpuStageMemory(const Workload& w, const ParallelPlan& p, const ModelConstants& k,
                         double stage_layers, bool first, bool last);

// Fills e->memory, peak and capacity (GPU: most loaded pipeline stage).
void EstimateGpuMemory(const Workload& w, const ParallelPlan& p, const Calibration& cal,
                       const ModelConstants& k, Estimate* e);
// Fills e->time, step time and the FLOP figures.
void EstimateGpuTime(const Workload& w, const ParallelPlan& p, const Calibration& cal,
                     const ModelConstants& k, Estimate* e);
void EstimateTpu(const Workload& w, const ParallelPlan& p, const Calibration& cal,
                 const ModelConstants& k, Estimate* e);

// GEMM efficiency for a micro-batch of `tokens` tokens whose narrowest sharded GEMM dimension is
// `dim`, as a fraction of peak.
double GemmEfficiency(const ModelConstants& k, double tokens, double dim);

// Model FLOPs per token of one training step (forward + backward, no recompute), with
// attention counted over the full sequence (Megatron-LM / MaxText convention).
double ModelFlopsPerToken(const ModelShape& m, double seq);
// Forward attention-score FLOPs per token per layer (QK^T and AV).
double AttentionFlopsPerTokenLayer(const ModelShape& m, double seq);

}  // namespace paratune::internal

#endif  // PARATUNE_AGENTS_MODEL_MODEL_INTERNAL_H_
