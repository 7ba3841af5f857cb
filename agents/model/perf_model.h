// The performance and memory model: for one workload and configuration, the peak memory per
// device (parameters, gradients, optimizer states, activations per Korthikanti et al., framework
// overhead), the step time (GEMMs and attention at size-dependent efficiency, tensor/context/
// expert/data-parallel collectives, pipeline bubble), MFU/HFU, tokens per second per device and
// the dominant bottleneck. Pure functions of their arguments: thread-safe, no allocation on the
// common path (one estimate takes about a microsecond, see bench/model_estimate_bench.cc).
// docs/model.md derives every formula and lists the calibration against published figures.
#ifndef PARATUNE_AGENTS_MODEL_PERF_MODEL_H_
#define PARATUNE_AGENTS_MODEL_PERF_MODEL_H_

#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/core/results.h"
#include "agents/model/parallel_plan.h"
#include "agents/model/workload.h"

namespace paratune {

// Multipliers the agent loop fits from observed trials (1.0 / 0.0: the model as calibrated).
struct Calibration {
  double compute_efficiency = 1.0;        // scales every kernel's achieved FLOP/s
  double communication_efficiency = 1.0;  // scales every collective's achieved bandwidth
  double memory_overhead_gib = 0.0;       // added to the framework overhead per device
};

// The fitted constants of the model (docs/model.md, "Calibration"). The simulated cluster
// perturbs a copy to build its hidden reality; agents use Defaults().
struct ModelConstants {
  // GEMM efficiency: gemm_max * T/(T + gemm_tokens_half) * d/(d + gemm_dim_half), with T the
  // tokens of one micro-batch on a device and d the narrowest sharded GEMM dimension.
  double gemm_max = 0.78;
  double gemm_tokens_half = 200;
  double gemm_dim_half = 156;
  double fp8_gemm_factor = 0.70;   // fp8 reaches this fraction of bf16's efficiency at 2x peak
  double attention_factor = 0.75;  // flash attention vs GEMM efficiency
  double unfused_attention_factor = 0.66;
  // Memory-bound elementwise work (norms, activations, dropout, softmax for unfused kernels):
  // bytes read+written per token per hidden unit per layer, forward.
  double elementwise_bytes = 17.2;
  double elementwise_bytes_fused = 6;
  double tpu_compute_factor = 1.10;  // MaxText/XLA kernels vs GPU formula
  // Collectives: achieved fraction of link bandwidth, per-collective latency in seconds.
  double collective_efficiency = 0.93;
  double all_to_all_efficiency = 0.55;
  double collective_latency_s = 20e-6;
  double dp_overlap_exposed = 0.10;  // fraction that stays exposed even when overlapped
  double framework_overhead_gib = 2.0;
  double tpu_framework_overhead_gib = 0.8;
  // Hugging Face transformers profile (eager PyTorch, bf16 autocast over fp32 weights; see
  // docs/model.md "Framework profiles"), fitted once on ../shared/measurements/h100-hf.
  double transformers_gemm_factor = 0.90;           // cuBLAS via autocast vs the fused stack
  double transformers_elementwise_factor = 1.0;     // scales the op-by-op traffic count
  double transformers_ce_bytes = 40;                // HBM bytes per logit, fp32 loss fwd + bwd
  double transformers_weight_bytes = 24;            // per parameter per micro-batch (+6 recompute)
  double transformers_host_layer_s = 3.6e-3;        // host dispatch per layer per micro-batch
  double transformers_host_recompute_factor = 2.2;  // with gradient checkpointing
  double transformers_host_overlap_norm = 3;        // micro time = (gpu^n + host^n)^(1/n)
  double transformers_overhead_gib = 0.15;          // cuBLAS workspaces, small buffers (allocated)
  double cuda_context_gib = 0.5;                    // CUDA context: outside torch's allocator
  // torchtitan profile (PyTorch FSDP2 stacks: torchtitan, NeMo AutoModel): the matmul and
  // attention rate against the fused stack the GEMM constants were fitted on, fitted on the
  // published rows of that profile (docs/model.md, "Framework profiles"; refit by
  // bench/model_published_bench.cc, checked by tests/model/interval_test.cc).
  double torchtitan_kernel_factor = 0.833;

  static const ModelConstants& Defaults();
};

// The configuration with every key of the workload's framework set to its effective value
// (defaults in agents/model/parallel_plan.h). Keys that do not apply are dropped.
Config EffectiveConfig(const Workload& w, const Config& c);

// Broken constraints as sentences naming the keys ("numAttentionHeads 32 is not divisible by tp
// 3"). Empty when the configuration can launch.
std::vector<std::string> CheckConstraints(const Workload& w, const Config& c);

// The model's verdict. EstimatePlan's `fits` is the point verdict (false when a constraint is
// broken or peak memory exceeds the device capacity); EstimateConfig adds the interval of
// agents/model/interval.h (contract section 14): `verdict` fits | marginal | does-not-fit and
// `fits` true unless does-not-fit. The estimate is still filled in as far as it makes sense.
Estimate EstimateConfig(const Workload& w, const Config& c, const Calibration& cal = {});
Estimate EstimatePlan(const Workload& w, const ParallelPlan& p, const Calibration& cal,
                      const ModelConstants& k);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_MODEL_PERF_MODEL_H_
