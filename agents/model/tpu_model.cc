// The TPU (MaxText) half of EstimatePlan: weights, gradients and Adam states sharded over the
// fsdp x sequence x tensor (x expert) axes, activations by remat policy, FSDP all-gathers and
// gradient reduce-scatters overlapped with compute by XLA, tensor/sequence collectives exposed.
#include <algorithm>
#include <cmath>

#include "agents/model/model_internal.h"

namespace paratune::internal {

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct RematCost {
  double saved_bytes_per_token;  // per layer, bf16, device-resident
  double offloaded_bytes_per_token;
  double recompute_fraction;  // of a layer's forward FLOPs redone in backward
};

RematCost CostOfRemat(const ModelShape& m, Remat r) {
  const double h = static_cast<double>(m.hidden_size);
  const double qkv = static_cast<double>(m.num_attention_heads * m.HeadDim() +
                                         m.num_query_groups * (m.HeadDim() + m.VHeadDim()));
  const double ctx = static_cast<double>(m.num_attention_heads * m.VHeadDim());
  const double f =
      static_cast<double>(m.IsMoe() ? m.moe_top_k * m.moe_ffn_hidden_size : m.ffn_hidden_size);
  const double wi = (m.swiglu ? 2.0 : 1.0) * f;
  const double attn_w = m.AttentionParams();
  const double mlp_w = m.IsMoe() ? m.moe_top_k * m.ExpertParams() : m.DenseMlpParams();
  const double mlp_frac = mlp_w / (attn_w + mlp_w);
  const double wi_frac = mlp_frac * (m.swiglu ? 2.0 / 3.0 : 0.5);
  const double qkv_frac = (1 - mlp_frac) * qkv / (qkv + ctx);
  const double carry = 2.0 * h;
  switch (r) {
    case Remat::kMinimal:
    case Remat::kMinimalFlash:
      return {carry + 2.0 * (qkv + ctx + h + wi + h), 0, 0.03};
    case Remat::kSaveDotWithContextExceptMlp:
      return {carry + 2.0 * (qkv + ctx + h), 0, mlp_frac};
    case Remat::kSaveDotExceptMlpwi:
      return {carry + 2.0 * (qkv + h + h), 0, wi_frac + 0.1 * (1 - mlp_frac)};
    case Remat::kSaveDotExceptMlp:
      return {carry + 2.0 * (qkv + h), 0, mlp_frac + 0.1 * (1 - mlp_frac)};
    case Remat::kSaveQkvProj:
      return {carry + 2.0 * qkv, 0, 1.0 - qkv_frac};
    case Remat::kSaveOutProj:
      return {carry + 2.0 * h, 0, 1.0 - (1 - mlp_frac - qkv_frac)};
    case Remat::kQkvProjOffloaded:
      return {carry, 2.0 * qkv, 1.0 - qkv_frac};
    case Remat::kMinimalOffloaded:
      return {carry, 2.0 * (qkv + ctx + h + wi + h), 0.03};
    case Remat::kFull:
      break;
  }
  return {carry, 0, 1.0};
}

}  // namespace

void EstimateTpu(const Workload& w, const ParallelPlan& p, const Calibration& cal,
                 const ModelConstants& k, Estimate* e) {
  const ModelShape& m = w.model;
  const double seq = static_cast<double>(w.training.seq_length);
  const double tokens = static_cast<double>(p.per_device_batch_size) * seq;  // per chip
  const double L = static_cast<double>(m.num_layers);
  const double tensor = static_cast<double>(p.ici_tensor);
  const double fsdp = static_cast<double>(p.ici_fsdp * p.ici_sequence);
  const double expert = static_cast<double>(p.ici_expert);
  // Parameters per chip: experts also sharded over the expert axis.
  const double expert_params = m.MoeLayers() * m.num_experts * m.ExpertParams();
  const double dense_params = m.TotalParams() - expert_params;
  // Across slices (issue 38): dcnFsdp shards the weights further, dcnPipeline splits the layers.
  const double dcn_fsdp = static_cast<double>(p.dcn_fsdp);
  const double dcn_pp = static_cast<double>(p.dcn_pipeline);
  const double shard =
      (dense_params / (fsdp * tensor * expert) + expert_params / (fsdp * tensor * expert)) /
      (dcn_fsdp * dcn_pp);
  const RematCost remat = CostOfRemat(m, p.remat);
  // Memory: fp32 weights (4) + Adam mu, nu (8) as arguments; fp32 gradients (4), activations,
  // two layers of gathered bf16 weights and the fp32 logits as temporaries.
  e->memory.parameters_gib = 4.0 * shard / kGiB;
  e->memory.optimizer_gib = 8.0 * shard / kGiB;
  e->memory.gradients_gib = 4.0 * shard / kGiB;
  const double layer_weights = (m.TotalParams() - 2 * m.EmbeddingParams()) / L / tensor;
  const double logits = tokens * static_cast<double>(m.vocab_size) / tensor * 4.0;
  const double working = tokens * (2.0 * static_cast<double>(m.hidden_size) * 8.0 +
                                   2.0 * static_cast<double>(m.ffn_hidden_size) * 3.0 / tensor);
  e->memory.activations_gib =
      (L * tokens * remat.saved_bytes_per_token / tensor + working + logits) / kGiB;
  e->memory.other_gib =
      (2.0 * 2.0 * layer_weights) / kGiB + k.tpu_framework_overhead_gib + cal.memory_overhead_gib;
  e->peak_memory_gib = e->memory.Total();
  e->capacity_gib = w.accel->hbm_gib;

  // Compute.
  const double peak = w.accel->bf16_tflops * 1e12;
  const double eff = GemmEfficiency(k, tokens, static_cast<double>(m.hidden_size) / tensor) *
                     cal.compute_efficiency * k.tpu_compute_factor;
  const double model_per_token = ModelFlopsPerToken(m, seq);
  const double fwd_per_token = model_per_token / 3.0;
  const double hardware_per_token =
      model_per_token +
      remat.recompute_fraction * (fwd_per_token - 2.0 * static_cast<double>(m.EmbeddingParams()));
  TimeBreakdown& t = e->time;
  t.compute = tokens * hardware_per_token / (peak * eff);
  // Collectives over ICI (half the bidirectional per-chip bandwidth per axis) and DCN.
  const double bw =
      w.accel->scale_up_gbps / 2.0 * 1e9 * k.collective_efficiency * cal.communication_efficiency;
  const double dcn =
      w.accel->scale_out_gbps * 1e9 * k.collective_efficiency * cal.communication_efficiency;
  auto ring = [](double n) { return n > 1 ? (n - 1) / n : 0.0; };
  const double weights_bf16 = 2.0 * (dense_params + expert_params / expert) / tensor;
  // FSDP: gather weights forward and backward, reduce-scatter fp32 gradients; overlapped.
  const double fsdp_comm = (2.0 * weights_bf16 + 2.0 * weights_bf16) * ring(fsdp) / bw;
  const double data_comm = 2.0 * 4.0 * shard * ring(static_cast<double>(p.ici_data)) / bw;
  const double dcn_comm = 2.0 * 4.0 * shard * ring(static_cast<double>(p.dcn_data)) / dcn;
  // DCN FSDP: the bf16 weights of a slice's shard gathered forward and backward and the fp32
  // gradients reduce-scattered across slices, overlapped like ICI FSDP.
  const double dcn_fsdp_comm = (2.0 + 2.0 + 4.0) * shard * dcn_fsdp * ring(dcn_fsdp) / dcn;
  const double overlappable = fsdp_comm + data_comm + dcn_comm + dcn_fsdp_comm;
  t.data_parallel = std::max(k.dp_overlap_exposed * overlappable, overlappable - 0.9 * t.compute);
  const double h = static_cast<double>(m.hidden_size);
  const double rounds = 4.0 + (remat.recompute_fraction > 0.5 ? 2.0 : 0.0);
  t.tensor_parallel = L * rounds * 2.0 * ring(tensor) * tokens * h * 2.0 / bw;
  const double kv = static_cast<double>(m.num_query_groups * (m.HeadDim() + m.VHeadDim()));
  t.context_parallel =
      L * 3.0 * ring(static_cast<double>(p.ici_sequence)) * tokens * kv * 2.0 / tensor / bw;
  if (m.IsMoe() && p.ici_expert > 1) {
    t.expert_parallel = static_cast<double>(m.MoeLayers()) * rounds * tokens *
                        static_cast<double>(m.moe_top_k) * h * 2.0 * ring(expert) / bw /
                        k.all_to_all_efficiency * k.collective_efficiency;
  }
  // Offloaded remat moves saved tensors to host and back over PCIe (~16 GB/s per chip).
  // Mostly overlapped with compute by XLA's host-offload scheduling.
  const double offload = 2.0 * L * tokens * remat.offloaded_bytes_per_token / 16e9;
  t.pipeline_p2p = std::max(0.1 * offload, offload - 0.8 * t.compute);
  if (p.dcn_pipeline > 1) {
    // Pipeline stages across slices: each chip computes 1/dcnPipeline of the layers for
    // dcnPipeline times the tokens (same FLOPs); GPipe's bubble with as many microbatches as
    // stages (MaxText's num_pipeline_microbatches default, configs/base.yml) adds
    // (stages - 1) / microbatches of the compute; bf16 activations cross DCN forward and back.
    t.pipeline_bubble = t.compute * (dcn_pp - 1.0) / dcn_pp;
    t.pipeline_p2p += 2.0 * tokens * static_cast<double>(m.hidden_size) * 2.0 * ring(dcn_pp) / dcn;
  }
  t.optimizer = shard * 30.0 / (w.accel->hbm_gbps * 1e9 * 0.8);
  e->step_time_seconds = t.compute + t.data_parallel + t.tensor_parallel + t.context_parallel +
                         t.expert_parallel + t.pipeline_p2p + t.pipeline_bubble + t.optimizer;
  e->model_tflops_per_device = tokens * model_per_token / e->step_time_seconds / 1e12;
  e->hardware_tflops_per_device = tokens * hardware_per_token / e->step_time_seconds / 1e12;
  e->tokens_per_second_per_device = tokens / e->step_time_seconds;
}

}  // namespace paratune::internal
