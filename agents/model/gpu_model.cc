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
  // The optimizer step's transient buffers, allocated after the last backward has freed the
  // activations: bytes per parameter of the stage, or a communication bucket of at most
  // kDeepSpeedBucketElements gradients at `bucket_bytes` each, whichever is larger.
  double step_per_param = 0, bucket_bytes = 0;
};

// DeepSpeed's default reduce/all-reduce bucket, elements (runtime/engine.py
// MEMORY_OPT_ALLREDUCE_SIZE; zero/config.py reduce_bucket_size).
constexpr double kDeepSpeedBucketElements = 5e8;

// Megatron-DeepSpeed: DeepSpeed's optimizer wrappers, read from microsoft/DeepSpeed (docs/model.md
// "megatron-deepspeed"). d: the data-parallel degree the wrapper partitions over.
MemoryPerByte DeepSpeedBytesPerParam(const Workload& w, const ParallelPlan& p, double d,
                                     double de) {
  if (w.training.precision != "fp16") {
    // BF16_Optimizer (runtime/bf16_optimizer.py), chosen for bf16 with fp32 gradient
    // accumulation at ZeRO stage 0 and 1 alike: bf16 weights and their .grad, an fp32
    // gradient buffer the size of all bf16 weights (not partitioned), fp32 master weights and
    // Adam's two moments partitioned over data parallel. The step all-reduces the fp32
    // gradients through a flattened bucket.
    return {2.0, 2.0 + 4.0, 12.0 / d, 12.0 / de, 0.0, 4.0};
  }
  if (p.distributed_optimizer) {
    // ZeRO stage 1 (zero/stage_1_and_2.py): fp16 weights and .grad; fp32 master partition and
    // Adam partitioned; the step converts the partition's gradients to fp32 (4/d) after a
    // reduce through an fp16 bucket.
    return {2.0, 2.0, 12.0 / d, 12.0 / de, 4.0 / d, 2.0};
  }
  // FP16_Optimizer (fp16/fused_optimizer.py), ZeRO stage 0: fp16 weights and .grad, fp32 master
  // weights and Adam unpartitioned; the step casts every gradient to fp32 and flattens the
  // copies into one fp32 buffer (8 bytes per parameter for a moment).
  return {2.0, 2.0, 12.0, 12.0, 8.0, 0.0};
}

// Bytes per parameter (reference.md): bf16/fp8 training keeps bf16 weights, fp32 main grads
// and 12 bytes of fp32 master weights and Adam moments (18); fp16 keeps fp16 grads and, with
// the distributed optimizer, an fp32 grad copy in the shard (4 + 16/d). torchtitan (FSDP2,
// MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)) keeps fp32 sharded parameters,
// fp32 sharded grads and Adam, all divided by the shard group, dp x cp: 16/d. With
// dpReplicate r > 1 (HSDP: parallel_dims.py builds the dp_replicate x dp_shard mesh, and
// fully_shard shards over dp_shard x cp only) each replica holds a whole copy: 16 r/d.
MemoryPerByte BytesPerParam(const Workload& w, const ParallelPlan& p) {
  const bool fp16 = w.training.precision == "fp16";
  const bool fp8 = w.training.precision == "fp8";
  const GradientGroups groups = GradientGroupsOf(p);
  const double d = static_cast<double>(groups.dense);
  const double de = static_cast<double>(groups.expert);
  if (ProfileOf(w) == Profile::kTorchtitan) {
    const double r = static_cast<double>(TorchtitanReplicas(p));
    const double shard = d / r;
    const double expert_shard = std::max(1.0, de / r);
    return {4.0 / shard, 4.0 / shard, 8.0 / shard, 8.0 / expert_shard};
  }
  if (ProfileOf(w) == Profile::kDeepSpeed) return DeepSpeedBytesPerParam(w, p, d, de);
  MemoryPerByte b{fp8 ? 3.0 : 2.0, fp16 ? 2.0 : 4.0, 12.0, 12.0};
  if (p.distributed_optimizer) {
    const double opt = fp16 ? 16.0 : 12.0;
    b.optimizer_dense = opt / d;
    b.optimizer_expert = opt / de;
  }
  return b;
}

}  // namespace

double TorchtitanOpSacBytes(const ModelShape& m, const LayerActivationInput& in) {
  // torchtitan's selective op checkpointing (models/llama3/infra/parallelize.py, op SAC) saves
  // the outputs of matmuls, SDPA and reduce-scatters except every second matmul, and recomputes
  // every other op. In a Llama block the matmuls run wq, wk, wv, wo, w1, w3, w2: saved are q,
  // v, w1's and w2's outputs, the SDPA output and the block's input, in bf16.
  const double t = static_cast<double>(in.t);
  const double tsp = in.sequence_parallel ? t : 1.0;
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.num_attention_heads * m.HeadDim());
  const double kv = static_cast<double>(m.num_query_groups * m.HeadDim());
  const double f =
      static_cast<double>(in.moe_layer ? m.moe_top_k * m.moe_ffn_hidden_size : m.ffn_hidden_size);
  return 2.0 * in.s * in.b * (2.0 * h / tsp + (2.0 * q + kv + f) / t);
}

double TorchtitanElementwiseBytes(const ModelShape& m, const ParallelPlan& p, bool moe_layer) {
  // Forward bytes read + written per token per layer by a torchtitan Llama block's non-matmul
  // ops (torchtitan@9dec370, the commit of the llama3_h100_202412 benchmarks:
  // models/llama/model.py, models/norms.py), bf16 activations under FSDP2's param_dtype (no
  // autocast casts, unlike the transformers profile). The routed MoE copies are counted apart.
  const double t = static_cast<double>(p.tp);
  const double tsp = p.sequence_parallel ? t : 1.0;
  const double h = static_cast<double>(m.hidden_size);
  const double q = static_cast<double>(m.num_attention_heads * m.HeadDim());
  const double kv = static_cast<double>(m.num_query_groups * m.HeadDim());
  const bool gqa = m.num_query_groups < m.num_attention_heads;
  const double f =
      static_cast<double>(moe_layer ? m.moe_shared_ffn_hidden_size : m.ffn_hidden_size);
  const double act_eager = m.swiglu ? 10.0 : 6.0, act_fused = m.swiglu ? 6.0 : 4.0;
  if (p.torch_compile) {
    // torch.compile per TransformerBlock (parallelize_llama.py apply_compile): Inductor fuses
    // each chain of pointwise and reduction ops between two matmuls / SDPA into one kernel that
    // reads its inputs and writes its outputs once: attention_norm (4h), the residual add fused
    // with ffn_norm (8h), the block's last add (6h); RoPE with repeat_kv's expansion of k and v
    // to q's width (8q + 4kv; 4q + 4kv without GQA); SDPA's output transpose (4q); SwiGLU's
    // silu(w1 x) * w3 x (6f; GeLU 4f).
    return 18.0 * h / tsp + ((gqa ? 12.0 : 8.0) * q + 4.0 * kv + act_fused * f) / t;
  }
  // Eager, op by op: RMSNorm = x.float(), pow, mean, x * rsqrt, type_as, * weight (36h each,
  // two); two bf16 residual adds (6h each); apply_rotary_emb on q and k = .float(), complex
  // multiply, type_as (20 bytes per element); repeat_kv's expand + reshape copies of k and v
  // (4q + 4kv with GQA); SDPA's output transpose(1, 2).contiguous() (4q); F.silu(w1 x) * w3 x
  // (10f; GeLU 6f).
  return 84.0 * h / tsp + ((gqa ? 28.0 : 24.0) * q + (gqa ? 24.0 : 20.0) * kv + act_eager * f) / t;
}

GradientGroups GradientGroupsOf(const ParallelPlan& p) {
  const int64_t dense = p.dp * p.cp;
  return {dense, std::max<int64_t>(1, dense / std::max<int64_t>(1, p.ep))};
}

int64_t TorchtitanReplicas(const ParallelPlan& p) {
  return p.dp_replicate > 1 && p.dp % p.dp_replicate == 0 ? p.dp_replicate : 1;
}

Profile ProfileOf(const Workload& w) {
  const std::string& f = w.training.framework;
  if (f == "transformers") return Profile::kTransformers;
  if (f == "torchtitan") return Profile::kTorchtitan;
  if (f == "megatron-deepspeed") return Profile::kDeepSpeed;
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
  in.b = static_cast<double>(p.micro_batch);
  in.t = p.tp;
  in.sequence_parallel = p.sequence_parallel;
  in.flash_attention = w.FlashAttention();
  in.moe_layer = m.IsMoe() && stage_layers > dense_layers;
  const double none = LayerActivationBytes(m, in);
  double stored = none;
  if (p.recompute == Recompute::kSelective) {
    stored = profile == Profile::kTorchtitan ? TorchtitanOpSacBytes(m, in)
                                             : LayerActivationBytesSelective(m, in);
  }
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
    in_flight = std::min(full, static_cast<double>(p.MicrobatchesPerSchedule()));
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
    const bool fsdp = GradientGroupsOf(p).dense / TorchtitanReplicas(p) > 1;
    if (p.pp > 1 && fsdp) {
      // Under a pipeline the stage stays gathered for its whole schedule: torchtitan's default
      // reshard_after_forward is `not pp_enabled` (models/llama3/infra/parallelize.py
      // apply_fsdp), and PyTorch's pipeline stage turns off resharding and gradient sync until
      // the schedule's last backward (torch/distributed/pipelining/stage.py
      // backward_maybe_with_nosync), so FSDP2 accumulates the unsharded gradients in the reduce
      // dtype (_fsdp_param.py to_accumulated_grad_if_needed; torchtitan's
      // mixed_precision_reduce default float32): 2 bytes of bf16 weights and 4 of fp32 gradients
      // per parameter of the stage.
      mem.parameters += 2.0 * all;
      mem.gradients += 4.0 * all;
    } else {
      // FSDP2 all-gathers bf16 weights per block: the current and the prefetched block, plus
      // the unsharded bf16 gradients of one block before its reduce-scatter.
      const StageParams one = LayerParams(m, p, 1.0, 0.0);  // an MoE layer when there is one
      mem.parameters += 6.0 * (one.dense + one.expert);
    }
  }
  if (b.step_per_param > 0 || b.bucket_bytes > 0) {
    // The step's buffers outlive no activation: the peak is the larger of the two moments, and
    // whatever the step adds beyond the activations is counted as optimizer memory.
    const double step =
        std::max(all * b.step_per_param, std::min(all, kDeepSpeedBucketElements) * b.bucket_bytes);
    mem.optimizer += std::max(0.0, step - mem.activations);
  }
  mem.other = k.framework_overhead_gib * kGiB;
  return mem;
}

}  // namespace paratune::internal
