// Internals of the performance model shared by its .cc files (and the simulated cluster, which
// re-runs them under its hidden constants). Not part of the agents' API.
#ifndef PARATUNE_AGENTS_MODEL_MODEL_INTERNAL_H_
#define PARATUNE_AGENTS_MODEL_MODEL_INTERNAL_H_

#include "agents/core/results.h"
#include "agents/model/activation_memory.h"
#include "agents/model/parallel_plan.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"

namespace paratune::internal {

// How a framework lays out memory and runs kernels (docs/model.md "Framework profiles").
// custom uses the Megatron-LM formulas (the documented default); maxtext runs on TPUs;
// megatron-deepspeed is Megatron-LM's kernels with DeepSpeed's optimizer memory and reduction.
enum class Profile { kMegatron, kTorchtitan, kTransformers, kDeepSpeed };
Profile ProfileOf(const Workload& w);

// The gradient groups' sizes: dense parameters reduce over dp x cp ranks, experts over
// dp x cp / ep (Megatron-LM's expert-data-parallel group, torchtitan's expert FSDP mesh). The
// step's communication (gpu_time.cc) and the sharded optimizer memory (gpu_model.cc) read them.
struct GradientGroups {
  int64_t dense, expert;
};
GradientGroups GradientGroupsOf(const ParallelPlan& p);
// torchtitan HSDP replicas: dpReplicate when it divides dp (parallel_dims.py builds the
// dp_replicate x dp_shard mesh; fully_shard shards over dp_shard x cp only), else 1. The FSDP
// shard group is GradientGroupsOf(p).dense / replicas.
int64_t TorchtitanReplicas(const ParallelPlan& p);

// Parameters of one pipeline stage on one device.
struct StageParams {
  double dense = 0;   // replicated over dp x cp
  double expert = 0;  // replicated over the expert data-parallel group
};
// `layers` transformer layers (the first `dense_layers` with a dense MLP) on one device.
StageParams LayerParams(const ModelShape& m, const ParallelPlan& p, double layers,
                        double dense_layers);

// Bytes per device on one pipeline stage.
struct GpuMemory {
  double parameters = 0, gradients = 0, optimizer = 0, activations = 0, other = 0;
  double Total() const { return parameters + gradients + optimizer + activations + other; }
};

GpuMemory GpuStageMemory(const Workload& w, const ParallelPlan& p, const ModelConstants& k,
                         double stage_layers, bool first, bool last);

// The transformers profile: peak allocated bytes of a stage (the larger of the end of the
// forward, the fp32 loss's backward and, with checkpointing, one layer's recomputation), and the
// bytes the caching allocator cannot hand to a new block (one fp32-logits-sized free block).
GpuMemory TransformersStageMemory(const Workload& w, const ParallelPlan& p, const ModelConstants& k,
                                  double stage_layers, bool first, bool last);
double TransformersAllocatorReserveBytes(const Workload& w, const ParallelPlan& p);
// Forward HBM bytes per token per layer of eager PyTorch's op-by-op elementwise work.
double TransformersElementwiseBytes(const ModelShape& m, const ParallelPlan& p);
// Host (Python + dispatcher) time to issue one micro-batch of `layers` layers, s.
double TransformersHostSeconds(const ParallelPlan& p, const ModelConstants& k, double layers);

// Forward HBM bytes per token per layer of a torchtitan block's non-matmul ops: eager op by op,
// or fused per block by torch.compile (p.torch_compile).
double TorchtitanElementwiseBytes(const ModelShape& m, const ParallelPlan& p, bool moe_layer);

// Bytes one layer keeps for backward under torchtitan's selective op checkpointing.
double TorchtitanOpSacBytes(const ModelShape& m, const LayerActivationInput& in);

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
