#include "agents/sim/reality.h"

#include <algorithm>
#include <cmath>

namespace paratune::sim {

uint64_t Rng::Next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double Rng::Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

double Rng::Uniform(double lo, double hi) { return lo + (hi - lo) * Uniform(); }

double Rng::Normal() {
  const double u1 = std::max(Uniform(), 1e-12);
  const double u2 = Uniform();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

uint64_t HashCombine(uint64_t a, uint64_t b) {
  Rng r(a ^ (b + 0x9e3779b97f4a7c15ULL + (a << 6) + (a >> 2)));
  return r.Next();
}

uint64_t HashString(const std::string& s) {
  uint64_t h = 1469598103934665603ULL;  // FNV-1a
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

Reality RealityForSeed(uint64_t seed) {
  Rng rng(HashCombine(seed, 0x5eed));
  Reality r;
  r.seed = seed;
  ModelConstants& k = r.constants;
  k = ModelConstants::Defaults();
  k.gemm_max *= rng.Uniform(0.90, 1.04);
  k.gemm_dim_half *= rng.Uniform(0.75, 1.35);
  k.gemm_tokens_half *= rng.Uniform(0.75, 1.35);
  k.attention_factor *= rng.Uniform(0.85, 1.10);
  k.elementwise_bytes_fused *= rng.Uniform(0.8, 1.3);
  k.tpu_compute_factor *= rng.Uniform(0.92, 1.04);
  k.collective_efficiency *= rng.Uniform(0.72, 1.05);
  k.all_to_all_efficiency *= rng.Uniform(0.65, 1.10);
  k.collective_latency_s *= rng.Uniform(0.8, 2.0);
  k.dp_overlap_exposed *= rng.Uniform(0.6, 2.5);
  r.allocator_overhead_gib = rng.Uniform(1.0, 3.5);
  r.activation_factor = rng.Uniform(1.0, 1.08);
  r.shape_spread = rng.Uniform(0.03, 0.08);
  r.per_microbatch_overhead_s = rng.Uniform(0.001, 0.008);
  r.tp_overlap = rng.Uniform(0.0, 0.5);
  r.selective_penalty = rng.Uniform(0.0, 0.07);
  r.full_penalty = rng.Uniform(0.0, 0.06);
  return r;
}

Result<Reality> RealityFor(uint64_t seed, const std::string& kind) {
  if (kind == "perturbed" || kind.empty()) return RealityForSeed(seed);
  if (kind != "structural") {
    return Status::Invalid("--reality: unknown kind \"" + kind + "\" (perturbed, structural)");
  }
  Reality r = RealityForSeed(seed);
  Rng rng(HashCombine(seed, 0x57c7));  // a stream of its own: the perturbed part is unchanged
  r.structural = true;
  // Ranges from the measured H100 set (bench/measurements/h100-hf): a 24-layer model paid about
  // 40 ms per micro-batch, peaks grew faster than linearly with the micro-batch, and the
  // allocator's reserve sat 1-9 GiB above the allocated peak.
  r.layer_floor_s = rng.Uniform(0.0003, 0.0020);
  r.activation_growth = rng.Uniform(0.03, 0.20);
  r.logits_extra_bytes = rng.Uniform(0.0, 6.0);
  r.allocator_overhead_gib += rng.Uniform(0.5, 3.0);
  r.small_tile_penalty = rng.Uniform(0.05, 0.30);
  r.narrow_penalty = rng.Uniform(0.0, 0.25);
  return r;
}

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Kernel efficiency of a structural reality: small micro-batches (few tokens per GEMM) and
// narrow per-device GEMMs (hidden / tp) run below the model's smooth curve.
double ShapeEfficiency(const Workload& w, const ParallelPlan& p, const Reality& r) {
  if (!r.structural || w.IsTpu()) return 1.0;
  const double tokens = static_cast<double>(w.training.seq_length * p.micro_batch) /
                        static_cast<double>(std::max<int64_t>(1, p.cp));
  const double width =
      static_cast<double>(w.model.hidden_size) / static_cast<double>(std::max<int64_t>(1, p.tp));
  return (1.0 - r.small_tile_penalty * 4096.0 / (4096.0 + tokens)) *
         (1.0 - r.narrow_penalty * 1024.0 / (1024.0 + width));
}

// Memory of a structural reality the model's formula misses (GiB): activations growing faster
// than the micro-batch, and logit copies the model does not count.
double ExtraActivationGiB(const Workload& w, const ParallelPlan& p, const Reality& r,
                          double activations_gib) {
  if (!r.structural || w.IsTpu()) return 0.0;
  const double growth =
      r.activation_growth * std::log2(static_cast<double>(std::max<int64_t>(1, p.micro_batch)));
  const double logits = static_cast<double>(w.training.seq_length * p.micro_batch) /
                        static_cast<double>(std::max<int64_t>(1, p.cp)) *
                        static_cast<double>(w.model.vocab_size) /
                        static_cast<double>(std::max<int64_t>(1, p.tp));
  const bool last_stage_peak = p.pp == 1;  // logits live on the last stage only
  return activations_gib * growth + (last_stage_peak ? r.logits_extra_bytes * logits / kGiB : 0.0);
}

// A deterministic efficiency quirk of one kernel shape (tp, mbs, cp / tensor, batch): some shapes
// hit better or worse tiles than the model's smooth curve predicts.
double ShapeQuirk(const Workload& w, const ParallelPlan& p, const Reality& r) {
  uint64_t h = HashCombine(r.seed, 0x51a9e);
  if (w.IsTpu()) {
    h = HashCombine(h, static_cast<uint64_t>(p.ici_tensor * 1000 + p.per_device_batch_size));
    h = HashCombine(h, static_cast<uint64_t>(p.remat));
  } else {
    h = HashCombine(h, static_cast<uint64_t>(p.tp * 1000 + p.mbs * 10 + p.cp));
    h = HashCombine(h, static_cast<uint64_t>(p.pp * 8 + static_cast<int>(p.recompute)));
  }
  Rng rng(h);
  return 1.0 + r.shape_spread * (2.0 * rng.Uniform() - 1.0);
}

// The model's step time plus what it does not know: per-micro-batch launch/sync overhead,
// tensor-parallel overlap, and the real cost of recomputation.
double RealStepTime(const Workload& w, const ParallelPlan& p, const Reality& r, const Estimate& e) {
  if (w.IsTpu()) {
    const double remat = p.remat == Remat::kFull ? r.full_penalty : 0.0;
    return e.step_time_seconds + remat * e.time.compute;
  }
  double step = e.step_time_seconds;
  const double stages = static_cast<double>(p.num_microbatches + p.pipeline_schedules * (p.pp - 1));
  step += stages * r.per_microbatch_overhead_s;
  step += static_cast<double>(p.num_microbatches) *
          static_cast<double>(p.MaxStageLayers(w.model.num_layers)) * r.layer_floor_s;
  step -= r.tp_overlap * e.time.tensor_parallel;
  if (p.recompute == Recompute::kSelective) step += r.selective_penalty * e.time.compute;
  if (p.recompute == Recompute::kFull) step += r.full_penalty * e.time.compute;
  return step;
}

}  // namespace

RealOutcome EvaluateReality(const Workload& w, const ParallelPlan& p, const Reality& r) {
  return EvaluateReality(w, p, r, Degradation{});
}

RealOutcome EvaluateReality(const Workload& w_in, const ParallelPlan& p, const Reality& r,
                            const Degradation& d) {
  // A degraded run sees a copy of the accelerator whose scale-out links are slower; the copy
  // lives for this call only (the Estimate keeps no pointer to it).
  Accelerator slow_links;
  Workload degraded;
  const Workload* wp = &w_in;
  if (d.scale_out != 1.0 && w_in.accel != nullptr) {
    slow_links = *w_in.accel;
    slow_links.scale_out_gbps *= d.scale_out;
    degraded = w_in;
    degraded.accel = &slow_links;
    wp = &degraded;
  }
  const Workload& w = *wp;
  RealOutcome out;
  std::vector<Violation> violations = FindViolations(w, p);
  if (!violations.empty()) {
    out.invalid = true;
    out.violation = violations.front();
    return out;
  }
  Calibration cal;
  cal.compute_efficiency = ShapeQuirk(w, p, r) * ShapeEfficiency(w, p, r);
  if (d.compute != 1.0) cal.compute_efficiency *= d.compute;
  out.estimate = EstimatePlan(w, p, cal, r.constants);
  const Estimate& e = out.estimate;
  out.static_gib = e.memory.parameters_gib + e.memory.gradients_gib + e.memory.optimizer_gib;
  out.activations_gib = e.memory.activations_gib * r.activation_factor;
  out.activations_gib += ExtraActivationGiB(w, p, r, out.activations_gib);
  const double overhead = w.IsTpu() ? 0.35 * r.allocator_overhead_gib : r.allocator_overhead_gib;
  out.peak_gib = out.static_gib + out.activations_gib + e.memory.other_gib + overhead;
  out.capacity_gib = w.accel->hbm_gib;
  out.oom = out.peak_gib > out.capacity_gib;
  out.oom_at_setup = out.static_gib + e.memory.other_gib > out.capacity_gib;
  out.step_time_seconds = RealStepTime(w, p, r, e);
  if (out.oom) return out;
  const double speed = e.step_time_seconds / out.step_time_seconds;
  TrialMetrics& m = out.metrics;
  m.step_time_seconds = out.step_time_seconds;
  m.mfu = e.mfu * speed;
  m.tflops_per_device = e.model_tflops_per_device * speed;
  m.tokens_per_second_per_device = e.tokens_per_second_per_device * speed;
  m.peak_memory_gib = out.peak_gib;
  m.avg_memory_gib = out.peak_gib - 0.45 * out.activations_gib;
  return out;
}

}  // namespace paratune::sim
