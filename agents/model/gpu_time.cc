// Step time of a GPU configuration (Megatron-LM 1F1B schedule) and the memory verdict across
// pipeline stages. docs/model.md derives each term.
#include <algorithm>
#include <cmath>
#include <vector>

#include "agents/model/model_internal.h"

namespace paratune::internal {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
// FlashAttention-2 vs cuDNN / FlashAttention-3 on Hopper (see CostOfLayer).
constexpr double kFlash2Factor = 0.6;

struct Bandwidths {
  double tp, cp, ep, dp, pp;  // bytes/s achieved by each group's collectives
  double dp_expert;           // the expert gradient group's (GradientGroupsOf)
};

Bandwidths GroupBandwidths(const Workload& w, const ParallelPlan& p, const Calibration& cal,
                           const ModelConstants& k) {
  const double eff = k.collective_efficiency * cal.communication_efficiency;
  const double up = w.accel->scale_up_gbps / 2.0 * 1e9 * eff;
  const double out = w.accel->scale_out_gbps * 1e9 * eff;
  const int64_t dpn = w.DevicesPerNode();
  const bool one_node = w.devices <= dpn;
  auto pick = [&](int64_t span) { return (one_node || span <= dpn) ? up : out; };
  Bandwidths b;
  b.tp = pick(p.tp);
  b.cp = pick(p.tp * p.cp);
  b.ep = pick(p.tp * p.cp * p.ep) * k.all_to_all_efficiency / k.collective_efficiency;
  // A ring collective (reduce-scatter, all-gather, all-reduce) over a group with g members in
  // each node runs g rings side by side, each leaving the node through a different member's NIC
  // and joined inside it over NVLink (NCCL: "multi-NIC aggregation works well when GPUs are
  // connected through NVLink (because we can use NVLink to split the operations in N parts then
  // balance the traffic onto the N NICs)", NVIDIA/nccl#601): g NICs' worth across nodes, up to
  // NVLink's. Megatron-LM's rank order (tp-cp-ep-dp-pp) and torchtitan's FSDP mesh (dp_shard x
  // cp inside tp) give the gradient group a stride of tp, the expert gradient group tp x ep.
  auto ring_group = [&](int64_t size, int64_t stride) {
    if (one_node || size * stride <= dpn) return up;
    const int64_t per_node = std::clamp<int64_t>(dpn / std::max<int64_t>(1, stride), 1, size);
    return std::min(up, out * static_cast<double>(per_node));
  };
  const GradientGroups groups = GradientGroupsOf(p);
  b.dp = ring_group(groups.dense, p.tp);
  b.dp_expert = ring_group(groups.expert, p.tp * p.ep);
  b.pp = (one_node || w.devices / p.pp < dpn) ? up : out;
  return b;
}

// Expected number of distinct groups (ranks or nodes; `groups` equal blocks of consecutive
// experts) that one token's top-k experts fall in. Random routing: each group is missed with
// probability C(E - E/g, k) / C(E, k). Contiguous (AutoModel's FakeBalancedGate, token t takes
// experts t k .. t k + k - 1 mod E): averaged over the start offsets t k mod E.
double DistinctExpertGroups(int64_t experts, int64_t top_k, int64_t groups, bool contiguous) {
  if (experts <= 0 || top_k <= 0 || groups <= 1) return 1.0;
  const int64_t per = std::max<int64_t>(1, experts / groups);
  if (contiguous) {
    double sum = 0;
    int64_t n = 0;
    int64_t start = 0;
    do {
      std::vector<bool> hit(static_cast<size_t>(groups), false);
      int64_t distinct = 0;
      for (int64_t i = 0; i < top_k; ++i) {
        const int64_t g = std::min(groups - 1, ((start + i) % experts) / per);
        if (!hit[static_cast<size_t>(g)]) {
          hit[static_cast<size_t>(g)] = true;
          ++distinct;
        }
      }
      sum += static_cast<double>(distinct);
      ++n;
      start = (start + top_k) % experts;
    } while (start != 0 && n < experts);
    return sum / static_cast<double>(n);
  }
  double miss = 1.0;
  for (int64_t i = 0; i < top_k; ++i) {
    miss *=
        std::max(0.0, static_cast<double>(experts - per - i)) / static_cast<double>(experts - i);
  }
  return static_cast<double>(groups) * (1.0 - miss);
}

// One micro-batch on one stage: time by category.
struct MicroTime {
  double compute = 0, fwd = 0, bwd = 0, tp = 0, cp = 0, ep = 0;
  double Total() const { return compute + tp + cp + ep; }
};

struct LayerCost {
  double fwd = 0;        // forward compute of one layer, s
  double gemm = 0;       // of which the GEMMs (what overlapped TP collectives hide behind)
  double selective = 0;  // what selective recomputation re-runs, s
  double attention_bwd_extra = 0;  // flash attention's backward beyond 2x its forward, s
  double attention = 0;            // of which attention scores (recomputed under selective)
  double tp = 0, cp = 0, ep = 0;   // per collective round trip, see below
};

// The stack's matmul rate against the fused Megatron-LM / Transformer Engine stack the GEMM
// constants were fitted on (docs/model.md, "Framework profiles").
double StackKernelFactor(const Workload& w, const ModelConstants& k) {
  switch (ProfileOf(w)) {
    case Profile::kTransformers:
      return k.transformers_gemm_factor;
    case Profile::kTorchtitan:
      return k.torchtitan_kernel_factor;
    default:
      return 1.0;
  }
}

// A GEMM's achieved efficiency at `rows` x `width` on this device and stack.
double StackGemmEfficiency(const Workload& w, const Calibration& cal, const ModelConstants& k,
                           double rows, double width) {
  return GemmEfficiency(k, rows, width) * cal.compute_efficiency * w.accel->kernel_efficiency *
         StackKernelFactor(w, k);
}

LayerCost CostOfLayer(const Workload& w, const ParallelPlan& p, const Calibration& cal,
                      const ModelConstants& k, const Bandwidths& bw, bool moe) {
  const ModelShape& m = w.model;
  const double tp = static_cast<double>(p.tp);
  const double seq = static_cast<double>(w.training.seq_length);
  const double tokens = static_cast<double>(p.micro_batch) * seq / static_cast<double>(p.cp);
  const double h = static_cast<double>(m.hidden_size);
  const bool fp8 = w.training.precision == "fp8" && w.accel->fp8_tflops > 0;
  const double peak16 = w.accel->bf16_tflops * 1e12;
  const bool eager = ProfileOf(w) == Profile::kTransformers;
  // A GEMM's achieved efficiency at `rows` x `width` on this device and stack, and the FLOP/s a
  // GEMM of that efficiency reaches in the run's precision.
  auto efficiency = [&](double rows, double width) {
    return StackGemmEfficiency(w, cal, k, rows, width);
  };
  auto rate_at = [&](double e) {
    return fp8 ? w.accel->fp8_tflops * 1e12 * e * k.fp8_gemm_factor : peak16 * e;
  };
  const double eff = efficiency(tokens, h / tp);
  const double gemm_rate = rate_at(eff);
  const double mlp =
      moe ? m.SharedExpertParams() + m.RouterParams() : m.DenseMlpParams();  // at `eff`
  const double gemm = 2.0 * tokens * (m.AttentionParams() - 2.0 * h + mlp) / tp;
  // Routed experts run as grouped GEMMs whose shape is each expert's, not the layer's: a rank's
  // E / ep experts share its tokens x k routed copies (balanced routing: tokens x k x ep / E rows
  // each), and the narrowest dimension is the expert's hidden size f_moe / tp (Megatron-core's
  // expert tensor parallelism defaults to tp), often far below h: Qwen3-30B-A3B's 768 against
  // h 2048, DeepSeek-V3's 2048 against 7168. Same efficiency curve as every GEMM (GemmEfficiency).
  double expert_time = 0;
  if (moe) {
    const double kk = static_cast<double>(m.moe_top_k);
    const double rows =
        tokens * kk * static_cast<double>(p.ep) / static_cast<double>(m.num_experts);
    const double width = std::min(h, static_cast<double>(m.moe_ffn_hidden_size)) / tp;
    expert_time = 2.0 * tokens * kk * m.ExpertParams() / tp / rate_at(efficiency(rows, width));
  }
  const double attn_flops = AttentionFlopsPerTokenLayer(m, seq) * tokens / tp;
  const double hbm = w.accel->hbm_gbps * 1e9;
  LayerCost c;
  const double a = static_cast<double>(m.num_attention_heads);
  if (w.FlashAttention()) {
    // FlashAttention-2 runs on Hopper at about 0.6 of cuDNN's / FlashAttention-3's rate (Shah et
    // al., FlashAttention-3, 2024, Figs. 5-6: FA2 ~330-370 vs cuDNN ~580-620 TFLOP/s forward,
    // ~300 vs ~500 backward, head dim 128). Hopper and later (fp8-capable) only: FA2 does not use
    // their new instructions; on A100 it reaches the rate the model assumes. FA2 is
    // `attention: flash2` (Transformer Engine before v1.8, whose DotProductAttention ranks
    // "FlashAttention > FusedAttention (cuDNN)" when flash-attn is installed; TE v1.8 gives cuDNN
    // preference on Hopper), and the torchtitan profile's own `flash` (PyTorch SDPA's flash
    // backend) unless its layers are Transformer Engine's. The transformers profile's fitted
    // constants already hold its SDPA rate.
    const bool fa2 =
        !eager && (w.training.attention == "flash2" ||
                   (w.training.attention == "flash" && ProfileOf(w) == Profile::kTorchtitan &&
                    !w.TransformerEngineKernels()));
    const double sdpa = fa2 && w.accel->fp8_tflops > 0 ? kFlash2Factor : 1.0;
    // Each head's tiles are the same whatever tp is (tp only splits the heads), so the kernel's
    // efficiency is that of the unsharded width, not h / tp as for the sharded GEMMs.
    const double attn_eff = efficiency(tokens, h);
    c.attention = 0.5 * attn_flops / (peak16 * attn_eff * k.attention_factor * sdpa);
  } else {
    // Unfused: score GEMMs plus softmax/dropout passes over the s x s scores.
    c.attention = attn_flops / (peak16 * eff * k.unfused_attention_factor) +
                  8.0 * a * seq * tokens / tp / hbm;
  }
  // Fused elementwise kernels (Transformer Engine, MaxText/XLA) move fewer bytes than eager
  // PyTorch's op-by-op norms, activations and residual adds (the transformers profile's count).
  // torchtitan's own blocks are counted from its code, eager or compiled
  // (TorchtitanElementwiseBytes); with Transformer Engine's kernels (AutoModel) as fused.
  double elem = (w.FlashAttention() ? k.elementwise_bytes_fused : k.elementwise_bytes) * tokens *
                h / (p.sequence_parallel ? tp : 1.0) / hbm;
  if (eager) {
    elem = k.transformers_elementwise_factor * TransformersElementwiseBytes(m, p) * tokens / hbm;
  } else if (ProfileOf(w) == Profile::kTorchtitan && !w.TransformerEngineKernels()) {
    elem = TorchtitanElementwiseBytes(m, p, moe) * tokens / hbm;
  }
  if (moe) {
    // The routed copies' own traffic, which no fused dense kernel covers: permuting a token into
    // its k expert slots (read h, write k h), the experts' SwiGLU / GeLU over k f_moe activations
    // and the weighted unpermute-and-sum back (read k h, write h), bf16 (Megatron-LM
    // core/transformer/moe/moe_utils.py permute / unpermute; NeMo AutoModel the same per rank).
    const double kk = static_cast<double>(m.moe_top_k);
    const double f = static_cast<double>(m.moe_ffn_hidden_size);
    const double act = m.swiglu ? 6.0 : 4.0;
    elem += tokens * (4.0 * h + 4.0 * kk * h + act * kk * f) / tp / hbm;
  }
  c.gemm = gemm / gemm_rate + expert_time;
  c.fwd = c.gemm + c.attention + elem;
  // Flash attention's backward recomputes the scores: five matmuls against the forward's two
  // (Dao, FlashAttention-2, 2023, sec. 3.1.2), 2.5x the forward instead of 2x.
  if (w.FlashAttention()) c.attention_bwd_extra = 0.5 * c.attention;
  c.selective = c.attention;  // Megatron-LM: the attention core (Korthikanti et al.)
  if (ProfileOf(w) == Profile::kTorchtitan) {
    // torchtitan's op SAC (gpu_model.cc TorchtitanOpSacBytes): every second matmul (wk, wo,
    // w3) and every non-matmul op run again in the backward.
    const double q = static_cast<double>(m.num_attention_heads * m.HeadDim());
    const double kv = static_cast<double>(m.num_query_groups * m.HeadDim());
    const double f = moe ? static_cast<double>(m.moe_top_k * m.moe_ffn_hidden_size)
                         : static_cast<double>(m.ffn_hidden_size);
    c.selective = 2.0 * tokens * h * (kv + q + f) / tp / gemm_rate + elem;
  }
  const double lat = k.collective_latency_s;
  if (p.tp > 1) {
    c.tp = 2.0 * (tp - 1) / tp * tokens * h * 2.0 / bw.tp + 2.0 * lat;  // one all-reduce
  }
  if (p.cp > 1) {
    const double cp = static_cast<double>(p.cp);
    const double kv = static_cast<double>(m.num_query_groups * (m.HeadDim() + m.VHeadDim()));
    c.cp = (cp - 1) * (tokens * kv * 2.0 / tp / bw.cp + lat);  // one ring pass of K and V
  }
  if (moe && p.ep > 1) {
    const double ep = static_cast<double>(p.ep);
    // Megatron-LM's all-to-all dispatcher sends one copy of a token per routed expert.
    double copies = static_cast<double>(m.moe_top_k) * (ep - 1) / ep;
    double rate = bw.ep;
    if (w.DeepEp()) {
      // DeepEP: one copy per destination rank, and across nodes one per destination node over
      // RDMA (forwarded over NVLink inside it), at about the link's rate (collective efficiency
      // instead of the all-to-all's).
      const int64_t dpn = w.DevicesPerNode();
      const int64_t span = p.tp * p.cp * p.ep;  // ranks an EP group's members spread over
      const int64_t nodes = span > dpn && w.devices > dpn ? (span + dpn - 1) / dpn : 1;
      const double link = bw.ep * k.collective_efficiency / k.all_to_all_efficiency;
      if (nodes > 1) {
        const double n = static_cast<double>(nodes);
        copies = DistinctExpertGroups(m.num_experts, m.moe_top_k, nodes, w.ContiguousMoeRouting()) *
                 (n - 1) / n;
      } else {
        copies = DistinctExpertGroups(m.num_experts, m.moe_top_k, p.ep, w.ContiguousMoeRouting()) *
                 (ep - 1) / ep;
      }
      rate = link;
    }
    c.ep = tokens * copies * h * 2.0 / rate + lat;
  }
  return c;
}

// Adds `n` layers of one kind to a micro-batch's time; `recomputed` of them run forward twice.
void AddLayers(const LayerCost& c, double n, double recomputed, const ParallelPlan& p,
               const ModelConstants& k, MicroTime* t) {
  if (n <= 0) return;
  double extra = 0;
  if (p.recompute == Recompute::kFull) extra = recomputed * c.fwd;
  if (p.recompute == Recompute::kSelective) extra = n * c.selective;
  extra += n * c.attention_bwd_extra;
  t->fwd += n * c.fwd;
  t->bwd += 2.0 * n * c.fwd + extra;
  t->compute += 3.0 * n * c.fwd + extra;
  // TP: 2 all-reduces forward, 2 backward, 2 more in a recomputed forward.
  const bool full = p.recompute == Recompute::kFull;
  double tp = (4.0 * n + 2.0 * recomputed * full) * c.tp;
  if (p.tp_comm_overlap) {
    // Megatron-LM --tp-comm-overlap (Transformer Engine userbuffers: the sequence-parallel
    // all-gather / reduce-scatter split into chunks pipelined with the GEMMs that consume or
    // produce them) and torchtitan AsyncTP (torch._inductor micro-pipelined TP): the TP time
    // hides behind the layer's GEMMs (forward, twice that backward, once more recomputed),
    // except the share that stays exposed (first and last chunk).
    const double gemms = (3.0 * n + recomputed * full) * c.gemm;
    tp = std::max(k.dp_overlap_exposed * tp, tp - gemms);
  }
  t->tp += tp;
  // CP: K/V ring forward, K/V + dK/dV backward; exposed beyond the attention it overlaps.
  const double cp_exposed = std::max(0.0, 3.0 * c.cp - 3.0 * c.attention) + 0.1 * 3.0 * c.cp;
  t->cp += n * (c.cp > 0 ? cp_exposed : 0.0);
  // EP: dispatch + combine all-to-all forward and backward (and in a recomputed forward).
  t->ep += (4.0 * n + 2.0 * recomputed * (p.recompute == Recompute::kFull)) * c.ep;
}

MicroTime StageMicroTime(const Workload& w, const ParallelPlan& p, const Calibration& cal,
                         const ModelConstants& k, const Bandwidths& bw, double layers, bool first,
                         bool last) {
  const ModelShape& m = w.model;
  MicroTime t;
  const double dense =
      m.IsMoe() ? (first ? std::min(layers, double(m.num_dense_layers)) : 0.0) : layers;
  const double moe = layers - dense;
  const double recomputed = std::min(layers, static_cast<double>(p.recompute_layers));
  const double rec_dense = layers > 0 ? recomputed * dense / layers : 0;
  AddLayers(CostOfLayer(w, p, cal, k, bw, false), dense, rec_dense, p, k, &t);
  if (moe > 0) {
    AddLayers(CostOfLayer(w, p, cal, k, bw, true), moe, recomputed - rec_dense, p, k, &t);
  }
  if (last) {
    const double tp = static_cast<double>(p.tp);
    const double tokens =
        static_cast<double>(p.micro_batch * w.training.seq_length) / static_cast<double>(p.cp);
    const double v = static_cast<double>(m.vocab_size);
    const bool eager = ProfileOf(w) == Profile::kTransformers;
    const double eff =
        StackGemmEfficiency(w, cal, k, tokens, static_cast<double>(m.hidden_size) / tp);
    const double logits = 2.0 * tokens * v * static_cast<double>(m.hidden_size) / tp /
                          (w.accel->bf16_tflops * 1e12 * eff);
    const double ce_bytes =
        eager ? 0.5 * k.transformers_ce_bytes : (p.fused_cross_entropy ? 4.0 : 12.0);
    const double ce = tokens * v / tp * ce_bytes / (w.accel->hbm_gbps * 1e9);
    t.fwd += logits + ce;
    t.bwd += 2.0 * logits + ce;
    t.compute += 3.0 * logits + 2.0 * ce;
  }
  if (ProfileOf(w) == Profile::kTransformers) {
    // Per micro-batch weight traffic: autocast re-casts every fp32 weight to bf16 (again in a
    // checkpointed recomputation) and each bf16 weight grad is cast to fp32 and accumulated.
    StageParams sp = LayerParams(m, p, layers, 0.0);
    const double params = sp.dense + sp.expert + (first || last ? m.EmbeddingParams() / p.tp : 0);
    const double bytes =
        k.transformers_weight_bytes + (p.recompute == Recompute::kFull ? 6.0 : 0.0);
    t.compute += bytes * params / (w.accel->hbm_gbps * 1e9);
  }
  return t;
}

// Exposed data-parallel time: gradient reduce(-scatter) and, with the distributed optimizer,
// the parameter all-gather, each hidden behind the backward/forward of the last micro-batches
// when overlapped.
double DataParallelTime(const Workload& w, const ParallelPlan& p, const ModelConstants& k,
                        const Bandwidths& bw, const MicroTime& micro, double* optimizer) {
  const ModelShape& m = w.model;
  const double tp = static_cast<double>(p.tp);
  const double layers = static_cast<double>(p.MaxStageLayers(m.num_layers));
  const double moe_frac = m.IsMoe() ? static_cast<double>(m.MoeLayers()) / m.num_layers : 0.0;
  double dense = layers * (m.AttentionParams() + (1 - moe_frac) * m.DenseMlpParams()) / tp +
                 m.EmbeddingParams() / tp;
  dense += layers * moe_frac * (m.SharedExpertParams() / tp + m.RouterParams());
  const double expert = layers * moe_frac * static_cast<double>(m.num_experts) * m.ExpertParams() /
                        (tp * static_cast<double>(p.ep));
  const GradientGroups groups = GradientGroupsOf(p);
  const double d = static_cast<double>(groups.dense);
  const double de = static_cast<double>(groups.expert);
  const double grad_bytes = w.training.precision == "fp16" ? 2.0 : 4.0;
  auto ring = [](double n) { return n > 1 ? (n - 1) / n : 0.0; };
  // Seconds per byte of each parameter's gradient: the dense and the expert group's ring share,
  // each at its own bandwidth.
  const double ring_seconds = dense * ring(d) / bw.dp + expert * ring(de) / bw.dp_expert;
  double reduce = 0, gather = 0;
  // torchtitan's FSDP2 always shards: bf16 all-gathers before the forward and again before the
  // backward (reshard_after_forward), fp32 reduce-scatter of the grads, both prefetched/overlapped.
  const bool fsdp = ProfileOf(w) == Profile::kTorchtitan;
  // DeepSpeed's BF16_Optimizer (Megatron-DeepSpeed, bf16) partitions the fp32 master weights at
  // ZeRO 0 and 1 alike, but all-reduces the whole fp32 gradient buffer once the pipeline has
  // drained (runtime/pipe/engine.py _bf16_reduce_grads), then all-gathers the updated bf16
  // partitions (bf16_optimizer.py update_lp_params): neither overlaps the backward.
  const bool ds_bf16 = ProfileOf(w) == Profile::kDeepSpeed && w.training.precision != "fp16";
  if (fsdp) {
    // Under a pipeline one all-gather per schedule (reshard_after_forward off, gpu_model.cc).
    reduce = 4.0 * ring_seconds;
    gather = (p.pp > 1 ? 1.0 : 2.0) * 2.0 * ring_seconds;
  } else if (ds_bf16) {
    reduce = 2.0 * 4.0 * ring_seconds;
    gather = 2.0 * ring_seconds;
  } else if (p.distributed_optimizer) {
    reduce = grad_bytes * ring_seconds;
    gather = 2.0 * ring_seconds;
  } else {
    reduce = 2.0 * grad_bytes * ring_seconds;
  }
  const double window =
      std::min<double>(static_cast<double>(p.MicrobatchesPerSchedule()), static_cast<double>(p.pp));
  const double exposed_reduce =
      (p.overlap_grad_reduce && !ds_bf16) || fsdp
          ? std::max(k.dp_overlap_exposed * reduce, reduce - window * micro.bwd)
          : reduce;
  const double exposed_gather =
      (p.overlap_param_gather && !ds_bf16) || fsdp
          ? std::max(k.dp_overlap_exposed * gather,
                     gather - window * (micro.fwd + (fsdp ? micro.bwd : 0.0)))
          : gather;
  const bool sharded = p.distributed_optimizer || fsdp || ds_bf16;
  const double shard = sharded ? dense / d + expert / de : dense + expert;
  *optimizer = shard * 30.0 / (w.accel->hbm_gbps * 1e9 * 0.8);  // fp32 Adam, memory-bound
  // Each pipeline schedule gathers and reduces again (torchtitan: one per accumulation step).
  return static_cast<double>(p.pipeline_schedules) * (exposed_reduce + exposed_gather);
}

}  // namespace

void EstimateGpuMemory(const Workload& w, const ParallelPlan& p, const Calibration& cal,
                       const ModelConstants& k, Estimate* e) {
  const int64_t layers = w.model.num_layers;
  GpuMemory peak =
      GpuStageMemory(w, p, k, static_cast<double>(p.FirstStageLayers(layers)), true, p.pp == 1);
  if (p.pp > 1) {
    GpuMemory last =
        GpuStageMemory(w, p, k, static_cast<double>(p.LastStageLayers(layers)), false, true);
    if (last.Total() > peak.Total()) peak = last;
  }
  e->memory.parameters_gib = peak.parameters / kGiB;
  e->memory.gradients_gib = peak.gradients / kGiB;
  e->memory.optimizer_gib = peak.optimizer / kGiB;
  e->memory.activations_gib = peak.activations / kGiB;
  e->memory.other_gib = peak.other / kGiB + cal.memory_overhead_gib;
  e->peak_memory_gib = e->memory.Total();
  e->capacity_gib = w.accel->hbm_gib;
  if (ProfileOf(w) == Profile::kTransformers) {
    // What torch's allocator can still hand out: the device minus the CUDA context and the
    // free block it cannot reuse for the fp32 logits (sweep.py measures allocated bytes).
    e->capacity_gib -= k.cuda_context_gib + TransformersAllocatorReserveBytes(w, p) / kGiB;
  }
}

void EstimateGpuTime(const Workload& w, const ParallelPlan& p, const Calibration& cal,
                     const ModelConstants& k, Estimate* e) {
  const Bandwidths bw = GroupBandwidths(w, p, cal, k);
  const int64_t layers = w.model.num_layers;
  MicroTime micro = StageMicroTime(
      w, p, cal, k, bw, static_cast<double>(p.FirstStageLayers(layers)), true, p.pp == 1);
  if (p.pp > 1) {
    MicroTime last = StageMicroTime(w, p, cal, k, bw,
                                    static_cast<double>(p.LastStageLayers(layers)), false, true);
    if (last.Total() > micro.Total()) micro = last;
    if (p.pp > 2) {
      MicroTime mid = StageMicroTime(
          w, p, cal, k, bw, static_cast<double>(p.MiddleStageLayers(layers)), false, false);
      if (mid.Total() > micro.Total()) micro = mid;
    }
  }
  if (ProfileOf(w) == Profile::kTransformers) {
    // Eager PyTorch: the host issues every op; the GPU time hides behind it only partly.
    const double host =
        TransformersHostSeconds(p, k, static_cast<double>(p.MaxStageLayers(layers)));
    const double n = k.transformers_host_overlap_norm;
    micro.compute = std::pow(std::pow(micro.compute, n) + std::pow(host, n), 1.0 / n);
  }
  const double m = static_cast<double>(p.num_microbatches);
  TimeBreakdown& t = e->time;
  t.compute = m * micro.compute;
  t.tensor_parallel = m * micro.tp;
  t.context_parallel = m * micro.cp;
  t.expert_parallel = m * micro.ep;
  if (p.pp > 1) {
    // One fill and drain per pipeline schedule: once per step under Megatron-LM, once per
    // gradient-accumulation step under torchtitan (ParallelPlan::pipeline_schedules).
    t.pipeline_bubble = static_cast<double>(p.pipeline_schedules) * static_cast<double>(p.pp - 1) /
                        static_cast<double>(p.vpp) * micro.Total();
    const double tokens =
        static_cast<double>(p.micro_batch * w.training.seq_length) / static_cast<double>(p.cp);
    const double bytes = tokens * static_cast<double>(w.model.hidden_size) * 2.0 /
                         (p.sequence_parallel ? static_cast<double>(p.tp) : 1.0);
    t.pipeline_p2p =
        0.3 * m * 2.0 * static_cast<double>(p.vpp) * (bytes / bw.pp + k.collective_latency_s);
  }
  t.data_parallel = DataParallelTime(w, p, k, bw, micro, &t.optimizer);
  e->step_time_seconds = t.compute + t.tensor_parallel + t.context_parallel + t.expert_parallel +
                         t.pipeline_bubble + t.pipeline_p2p + t.data_parallel + t.optimizer;
  // FLOPs of the step (whole job), then per device per second.
  const ModelShape& mo = w.model;
  const double seq = static_cast<double>(w.training.seq_length);
  const double tokens = static_cast<double>(p.micro_batch * p.dp) * m * seq;
  const double model = tokens * ModelFlopsPerToken(mo, seq);
  const double layer_fwd =
      (mo.ForwardMatmulFlopsPerToken() - 2.0 * mo.EmbeddingParams()) +
      static_cast<double>(mo.num_layers) * AttentionFlopsPerTokenLayer(mo, seq);
  double hardware = model;
  if (p.recompute == Recompute::kFull) {
    const double frac = std::min(1.0, static_cast<double>(p.recompute_layers) /
                                          std::max<double>(1, p.MaxStageLayers(mo.num_layers)));
    hardware += tokens * layer_fwd * frac;
  } else if (p.recompute == Recompute::kSelective) {
    hardware += tokens * static_cast<double>(mo.num_layers) * AttentionFlopsPerTokenLayer(mo, seq);
  }
  const double denom = e->step_time_seconds * static_cast<double>(w.devices);
  e->model_tflops_per_device = model / denom / 1e12;
  e->hardware_tflops_per_device = hardware / denom / 1e12;
  e->tokens_per_second_per_device = tokens / denom;
}

}  // namespace paratune::internal
