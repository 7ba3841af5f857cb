#include "agents/model/perf_model.h"

#include <algorithm>

#include "agents/model/interval.h"
#include "agents/model/model_flops.h"
#include "agents/model/model_internal.h"

namespace paratune {

namespace internal {

double GemmEfficiency(const ModelConstants& k, double tokens, double dim) {
  return k.gemm_max * tokens / (tokens + k.gemm_tokens_half) * dim / (dim + k.gemm_dim_half);
}

double AttentionFlopsPerTokenLayer(const ModelShape& m, double seq) {
  const double q = static_cast<double>(m.num_attention_heads * m.HeadDim());
  const double o = static_cast<double>(m.num_attention_heads * m.VHeadDim());
  return 2.0 * seq * (q + o);  // QK^T and AV over the full sequence
}

double ModelFlopsPerToken(const ModelShape& m, double seq) {
  return 3.0 * (m.ForwardMatmulFlopsPerToken() +
                static_cast<double>(m.num_layers) * AttentionFlopsPerTokenLayer(m, seq));
}

}  // namespace internal

double ModelFlopsPerToken(const Workload& w) {
  return internal::ModelFlopsPerToken(w.model, static_cast<double>(w.training.seq_length));
}

namespace {

// The category that costs the most time; memory-capacity when it does not fit.
const char* Bottleneck(const Estimate& e, double gemm_eff, double gemm_max) {
  if (e.peak_memory_gib > e.capacity_gib) return "memory-capacity";
  const TimeBreakdown& t = e.time;
  const double comm = t.tensor_parallel + t.context_parallel + t.data_parallel + t.expert_parallel;
  const double pipeline = t.pipeline_bubble + t.pipeline_p2p;
  if (comm > t.compute && comm >= pipeline) return "communication";
  if (pipeline > t.compute) return "pipeline";
  if (comm > 0.5 * t.compute && comm >= pipeline) return "communication";
  if (pipeline > 0.5 * t.compute) return "pipeline";
  // Compute-dominated, but small GEMMs run far from peak: bound by memory bandwidth.
  return gemm_eff < 0.6 * gemm_max ? "hbm" : "compute";
}

bool SizesPositive(const ParallelPlan& p) {
  return std::min({p.tp, p.pp, p.vpp, p.cp, p.ep, p.mbs, p.ici_data, p.ici_fsdp, p.ici_tensor,
                   p.ici_sequence, p.ici_expert, p.dcn_data, p.dcn_fsdp, p.dcn_pipeline,
                   p.per_device_batch_size}) >= 1;
}

}  // namespace

const ModelConstants& ModelConstants::Defaults() {
  static const ModelConstants kDefaults;
  return kDefaults;
}

Config EffectiveConfig(const Workload& w, const Config& c) {
  return PlanToConfig(w, PlanFromConfig(w, c));
}

std::vector<std::string> CheckConstraints(const Workload& w, const Config& c) {
  std::vector<std::string> out;
  for (auto& v : FindViolations(w, PlanFromConfig(w, c))) out.push_back(std::move(v.sentence));
  return out;
}

Estimate EstimatePlan(const Workload& w, const ParallelPlan& p, const Calibration& cal,
                      const ModelConstants& k) {
  Estimate e;
  std::vector<Violation> violations = FindViolations(w, p);
  for (auto& v : violations) e.violations.push_back(std::move(v.sentence));
  if (!SizesPositive(p)) {
    // Zero or negative sizes make every formula meaningless; report capacity only.
    e.capacity_gib = w.accel->hbm_gib;
    e.fits = false;
    return e;
  }
  double gemm_eff = 0;
  const double seq = static_cast<double>(w.training.seq_length);
  if (w.IsTpu()) {
    internal::EstimateTpu(w, p, cal, k, &e);
    gemm_eff = internal::GemmEfficiency(k, static_cast<double>(p.per_device_batch_size) * seq,
                                        static_cast<double>(w.model.hidden_size) / p.ici_tensor);
  } else {
    internal::EstimateGpuMemory(w, p, cal, k, &e);
    internal::EstimateGpuTime(w, p, cal, k, &e);
    gemm_eff = internal::GemmEfficiency(k, static_cast<double>(p.micro_batch) * seq / p.cp,
                                        static_cast<double>(w.model.hidden_size) / p.tp);
  }
  const double peak = w.accel->bf16_tflops;
  e.mfu = e.model_tflops_per_device / peak;
  e.hfu = e.hardware_tflops_per_device / peak;
  // A configuration that breaks a constraint is still estimated (as if the sizes divided) so
  // agents can see what it would cost, but it never fits.
  e.fits = violations.empty() && e.peak_memory_gib <= e.capacity_gib;
  e.bottleneck = Bottleneck(e, gemm_eff, k.gemm_max);
  return e;
}

Estimate EstimateConfig(const Workload& w, const Config& c, const Calibration& cal) {
  Estimate e = EstimatePlan(w, PlanFromConfig(w, c), cal, ModelConstants::Defaults());
  ApplyInterval(DefaultIntervals(), w, &e);
  return e;
}

}  // namespace paratune
