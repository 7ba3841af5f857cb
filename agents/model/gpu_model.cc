// The GPU (Megatron-LM / torchtitan) memory half of EstimatePlan (transformers:
// transformers_model.cc). See docs/model.md for the formulas.
#include <algorithm>
#include <cmath>

#include "agents/model/activation_memory.h"
#include "agents/model/model_internal.h"

namespace paratune::internal {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct MemoryPerByte {
  double weights, grads, optimizer_dense, optimizer_expert;
};

// Bytes per parameter (reference.md): bf16/fp8 training keeps bf16 weights, fp32 main grads
// and 12 bytes of fp32 master weights and Adam moments (18); fp16 keeps fp16 grads and, with
// the distributed optimizer, an fp32 grad copy in the shard (4 + 16/d). torchtitan (FSDP2,
// MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)) keeps fp32 sharded parameters,
// fp32 sharded grads and Adam, all divided by dp x cp: 16/d.
MemoryPerByte BytesPerParam(const Workload& w, const ParallelPlan& p) {
  const bool fp16 = w.training.precision == "fp16";
  const bool fp8 = w.training.precision == "fp8";
  const double d = static_cast<double>(p.dp * p.cp);
  const double de = std::max(1.0, d / static_cast<double>(p.ep));
  if (ProfileOf(w) == Profile::kTorchtitan) {
    return {4.0 / d, 4.0 / d, 8.0 / d, 8.0 / de};
  }
  MemoryPerByte b{fp8 ? 3.0 : 2.0, fp16 ? 2.0 : 4.0, 12.0, 12.0};
  if (p.distributed_optimizer) {
    const double opt = fp16 ? 16.0 : 12.0;
    b.optimizer_dense = opt / d;
    b.optimizer_expert = opt / de;
  }
  return b;
}

}  // namespace

Profile ProfileOf(const Workload& w) {
  const std::string& f = w.training.framework;
  if (f == "transformers") return Profile::kTransformers;
  if (f == "torchtitan") return Profile::kTorchtitan;
  return Profile::kMegatron;
}

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

GpuMemory GpuStageMemory(const Workload& w, const ParallelPlan& p, const ModelConstants& k,
                         double stage_layers, bool first, bool last) {
  const Profile profile = ProfileOf(w);
  if (profile == Profile::kTransformers) {
    return TransformersStageMemory(w, p, k, stage_layers, first, last);
  }
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
    // Logits (bf16) and, unless fused, the fp32 softmax of the cross entropy. torchtitan's
    // loss upcasts the logits first (components/loss.py: cross_entropy(pred.float())): bf16
    // logits, their fp32 copy and the fp32 log-softmax, 12 bytes in its backward.
    const double logits = in.s * in.b * static_cast<double>(m.vocab_size) / tp;
    const double unfused = profile == Profile::kTorchtitan ? 12.0 : 6.0;
    mem.activations += logits * (p.fused_cross_entropy ? 2.0 : unfused);
  }
  if (profile == Profile::kTorchtitan) {
    // FSDP2 all-gathers bf16 weights per block: the current and the prefetched block, plus
    // the unsharded bf16 gradients of one block before its reduce-scatter.
    const StageParams one = LayerParams(m, p, 1.0, 0.0);  // an MoE layer when there is one
    mem.parameters += 6.0 * (one.dense + one.expert);
  }
  mem.other = k.framework_overhead_gib * kGiB;
  return mem;
}

}  // namespace paratune::internal
