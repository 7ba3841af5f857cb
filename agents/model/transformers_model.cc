// The Hugging Face transformers profile: eager PyTorch, `torch.autocast(bfloat16)` over fp32
// weights, SDPA attention, the loss of `labels=` (ForCausalLMLoss), gradient_checkpointing =
// one checkpoint per decoder layer. docs/model.md ("Framework profiles") derives each term from
// the code it cites; the constants were fitted on ../shared/measurements/h100-hf.
#include <algorithm>
#include <cmath>

#include "agents/model/model_internal.h"

namespace paratune::internal {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// A decoder layer's widths: hidden, query (heads x head dim), key/value (groups x head dim) and
// the MLP's (the routed experts' for a MoE: top-k x expert width).
struct LayerWidths {
  double h, q, kv, f;
};
LayerWidths WidthsOf(const ModelShape& m) {
  return {static_cast<double>(m.hidden_size),
          static_cast<double>(m.num_attention_heads * m.HeadDim()),
          static_cast<double>(m.num_query_groups * m.HeadDim()),
          static_cast<double>(m.IsMoe() ? m.moe_top_k * m.moe_ffn_hidden_size : m.ffn_hidden_size)};
}

// Bytes a decoder layer keeps for backward per token with no checkpointing. The residual
// stream is fp32 (the fp32 embedding output plus bf16 sublayer outputs promotes to fp32):
// each RMSNorm keeps its fp32 input and normalized output (4h + 4h, twice), autocast keeps one
// bf16 copy of the norm output per projection that reads it (q, k, v: 6h; gate, up: 4h; GeLU's
// single fc1: 2h). Attention keeps bf16 q, k, v, SDPA's output and o_proj's contiguous input
// (6q + 4kv); the SwiGLU MLP keeps gate, silu(gate), up and their product (8f), GeLU fc1's
// output and the GeLU output (4f). Dropout keeps two residual masks and outputs (6h).
double LayerBytesPerToken(const ModelShape& m, const ParallelPlan& p) {
  const auto [h, q, kv, f] = WidthsOf(m);
  const double t = static_cast<double>(p.tp);
  const double replicated = (m.swiglu ? 26.0 : 24.0) * h + (m.dropout ? 6.0 : 0.0) * h;
  return replicated + (6.0 * q + 4.0 * kv + (m.swiglu ? 8.0 : 4.0) * f) / t;
}

struct Phase {
  double cast = 0;         // autocast's bf16 weight copies alive
  double activations = 0;  // saved tensors, checkpoints, logits chain
  double Total() const { return cast + activations; }
};

}  // namespace

GpuMemory TransformersStageMemory(const Workload& w, const ParallelPlan& p, const ModelConstants& k,
                                  double stage_layers, bool first, bool last) {
  const ModelShape& m = w.model;
  const double tp = static_cast<double>(p.tp);
  const StageParams layers = LayerParams(m, p, stage_layers, 0.0);
  const double layer_params = layers.dense + layers.expert;
  double params = layer_params;
  if (first) params += m.EmbeddingParams() / tp;
  const double output = last ? m.EmbeddingParams() / tp : 0.0;  // lm_head (tied or not)
  if (last && (!m.tied_embeddings || p.pp > 1)) params += output;
  GpuMemory mem;
  // fp32 weights, fp32 grads (accumulated across micro-batches), AdamW's two fp32 moments.
  mem.parameters = 4.0 * params;
  mem.gradients = 4.0 * params;
  const double d = static_cast<double>(p.dp * p.cp);
  mem.optimizer = 8.0 * params / (p.distributed_optimizer ? d : 1.0);

  const double sb = static_cast<double>(w.training.seq_length) / static_cast<double>(p.cp) *
                    static_cast<double>(p.mbs);
  const double act = LayerBytesPerToken(m, p) * sb;
  const double ckpt = 4.0 * sb * static_cast<double>(m.hidden_size);  // fp32 layer input
  const double logits = last ? sb * static_cast<double>(m.vocab_size) / tp : 0.0;
  // autocast caches bf16 casts of every weight a matmul reads (2 bytes per matmul parameter);
  // linear layers save them for backward, so they live until their layer's backward.
  const double cast_layers = 2.0 * layer_params;
  const double cast_out = 2.0 * output;
  const bool full = p.recompute == Recompute::kFull;
  const double r = full ? std::min(stage_layers, static_cast<double>(p.recompute_layers)) : 0.0;
  const double stored = r * ckpt + (stage_layers - r) * act;
  // End of forward: bf16 logits, their fp32 upcast (loss_utils.py: logits.float()) and the
  // fp32 log-softmax (10 bytes per logit); the cache still holds every layer's casts.
  Phase fwd{cast_layers + cast_out, stored + 10.0 * logits};
  // Loss backward: log-softmax output, its incoming and outgoing fp32 grads (12 bytes); the
  // checkpointed layers' casts are gone (the cache is freed when autocast exits).
  const double kept_casts = stage_layers > 0 ? cast_layers * (stage_layers - r) / stage_layers : 0;
  Phase bwd{kept_casts + cast_out, stored + 12.0 * logits};
  Phase peak = fwd.Total() > bwd.Total() ? fwd : bwd;
  if (r > 0) {
    // One checkpointed layer recomputed: its activations, its casts, fp32 grads in flight.
    const double one_cast = cast_layers / std::max(1.0, stage_layers);
    Phase layer{kept_casts + cast_out + one_cast,
                stored + act + 8.0 * sb * static_cast<double>(m.hidden_size)};
    if (layer.Total() > peak.Total()) peak = layer;
  }
  mem.parameters += peak.cast;
  mem.activations = peak.activations;
  mem.other = k.transformers_overhead_gib * kGiB;
  return mem;
}

double TransformersAllocatorReserveBytes(const Workload& w, const ParallelPlan& p) {
  // PyTorch's caching allocator splits freed blocks for later, smaller tensors; a fresh
  // fp32-logits-sized block then needs a new segment. Measured reserved - allocated on H100:
  // 0.5-1.0 x the fp32 logits of one micro-batch.
  const double sb = static_cast<double>(w.training.seq_length) / static_cast<double>(p.cp) *
                    static_cast<double>(p.mbs);
  return 4.0 * sb * static_cast<double>(w.model.vocab_size) / static_cast<double>(p.tp);
}

double TransformersElementwiseBytes(const ModelShape& m, const ParallelPlan& p) {
  // Counted op by op (forward, per token, bytes read + written): two RMSNorms over the fp32
  // stream (pow, mean, rsqrt-mul, weight-mul: 28h each), five autocast input casts (6h each,
  // 18h + 12h), two mixed-precision residual adds (10h each); RoPE on fp32-promoted q and k
  // (~30 bytes per element) plus SDPA's bf16 casts and the output transpose (45q + 40kv); the
  // SwiGLU silu and product (10f) or GeLU (6f); dropout masks and scaling (8h).
  const auto [h, q, kv, f] = WidthsOf(m);
  const double t = static_cast<double>(p.tp);
  return (106.0 + (m.dropout ? 8.0 : 0.0)) * h + (45.0 * q + 40.0 * kv) / t +
         (m.swiglu ? 10.0 : 6.0) * f / t;
}

double TransformersHostSeconds(const ParallelPlan& p, const ModelConstants& k, double layers) {
  const double factor =
      p.recompute == Recompute::kFull ? k.transformers_host_recompute_factor : 1.0;
  return layers * k.transformers_host_layer_s * factor;
}

}  // namespace paratune::internal
