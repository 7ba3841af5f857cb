// The GPU (Megatron-LM / torchtitan) half of EstimatePlan. See docs/model.md for the formulas.
#include <algorithm>
#include <cmath>

#include "agents/model/activation_memory.h"
#include "agents/model/model_internal.h"

namespace paratune::internal {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct StageParams {
  double dense = 0;   // parameters on this device replicated over dp x cp
  double expert = 0;  // parameters replicated over the expert data-parallel group
};

// Parameters of `layers` transformer layers (the first `dense_layers` of them with a dense MLP)
// on one device.
StageParams LayerParams(const ModelShape& m, const ParallelPlan& p, double layers,
                        double dense_layers) {
  const double tp = static_cast<double>(p.tp);
  StageParams s;
  const double moe_layers = m.IsMoe() ? layers - dense_layers : 0;
  const double mlp_layers = layers - moe_layers;
  s.dense = layers * m.AttentionParams() / tp + mlp_layers * m.DenseMlpParams() / tp;
  if (moe_layers > 0) {
    s.dense += moe_layers * (m.SharedExpertParams() / tp + m.RouterParams());
    s.expert = moe_layers * static_cast<double>(m.num_experts) * m.ExpertParams() /
               (static_cast<double>(p.ep) * tp);
  }
  return s;
}

struct MemoryPerByte {
  double weights, grads, optimizer_dense, optimizer_expert;
};

// Bytes per parameter (reference.md): bf16/fp8 training keeps bf16 weights, fp32 main grads
// and 12 bytes of fp32 master weights and Adam moments (18); fp16 keeps fp16 grads and, with
// the distributed optimizer, an fp32 grad copy in the shard (4 + 16/d).
MemoryPerByte BytesPerParam(const Workload& w, const ParallelPlan& p) {
  const bool fp16 = w.training.precision == "fp16";
  const bool fp8 = w.training.precision == "fp8";
  MemoryPerByte b{fp8 ? 3.0 : 2.0, fp16 ? 2.0 : 4.0, 12.0, 12.0};
  if (p.distributed_optimizer) {
    const double opt = fp16 ? 16.0 : 12.0;
    const double d = static_cast<double>(p.dp * p.cp);
    b.optimizer_dense = opt / d;
    b.optimizer_expert = opt / std::max(1.0, d / static_cast<double>(p.ep));
  }
  return b;
}

}  // namespace

GpuMemory GpuStageMemory(const Workload& w, const ParallelPlan& p, const ModelConstants& k,
                         double stage_layers, bool first, bool last) {
  const ModelShape& m = w.model;
  const double tp = static_cast<double>(p.tp);
  const double dense_layers =
      first ? std::min(stage_layers, static_cast<double>(m.num_dense_layers)) : 0.0;
  StageParams params = LayerParams(m, p, stage_layers, dense_layers);
  const bool output_separate = !m.tied_embeddings || p.pp > 1;
  if (first) params.dense += m.EmbeddingParams() / tp;
  if (last && output_separate) params.dense += m.EmbeddingParams() / tp;
  const MemoryPerByte b = BytesPerParam(w, p);
  GpuMemory mem;
  const double all = params.dense + params.expert;
  mem.parameters = all * b.weights;
  mem.gradients = all * b.grads;
  mem.optimizer = params.dense * b.optimizer_dense + params.expert * b.optimizer_expert;

  LayerActivationInput in;
  in.s = static_cast<double>(w.training.seq_length) / static_cast<double>(p.cp);
  in.s_kv = static_cast<double>(w.training.seq_length);
  in.b = static_cast<double>(p.mbs);
  in.t = p.tp;
  in.sequence_parallel = p.sequence_parallel;
  in.flash_attention = w.flash_attention;
  in.moe_layer = m.IsMoe() && stage_layers > dense_layers;
  const double none = LayerActivationBytes(m, in);
  double stored = none;
  if (p.recompute == Recompute::kSelective) stored = LayerActivationBytesSelective(m, in);
  double per_micro = stored * stage_layers;
  if (p.recompute == Recompute::kFull) {
    const double r = std::min(stage_layers, static_cast<double>(p.recompute_layers));
    per_micro = r * LayerActivationBytesFull(m, in) + (stage_layers - r) * none;
  }
  // 1F1B: the first stage holds min(m, pp) micro-batches; interleaving adds (pp-1)/vpp.
  double in_flight = 1;
  if (p.pp > 1) {
    const double pp = static_cast<double>(p.pp);
    const double full =
        first ? pp + (p.vpp > 1 ? (pp - 1) / static_cast<double>(p.vpp) : 0.0) : 1.0;
    in_flight = std::min(full, static_cast<double>(p.num_microbatches));
  }
  mem.activations = per_micro * in_flight + none;  // + one layer being recomputed / backpropagated
  if (last) {
    // Logits (bf16) and, unless fused, the fp32 softmax of the cross entropy.
    const double logits = in.s * in.b * static_cast<double>(m.vocab_size) / tp;
    mem.activations += logits * (p.fused_cross_entropy ? 2.0 : 6.0);
  }
  mem.other = k.framework_overhead_gib * kGiB;
  return mem;
}

}  // namespace paratune::internal
