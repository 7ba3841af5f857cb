// The simulated cluster's hidden "reality": what a real cluster would measure for a
// configuration. It re-runs the performance model under constants perturbed by a seed (kernel
// and collective efficiencies), adds effects the model does not know (per-shape kernel quirks,
// allocator overhead and fragmentation), and decides whether the run fits. Agents never read
// this; they learn it only through trial results. Pure functions: thread-safe.
#ifndef PARATUNE_AGENTS_SIM_REALITY_H_
#define PARATUNE_AGENTS_SIM_REALITY_H_

#include <cstdint>
#include <string>

#include "agents/core/results.h"
#include "agents/model/parallel_plan.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"
#include "base/status.h"

namespace paratune::sim {

// SplitMix64: a tiny deterministic generator (same seed, same sequence on every platform).
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next();
  double Uniform();  // [0, 1)
  double Uniform(double lo, double hi);
  double Normal();  // standard normal (Box-Muller)

 private:
  uint64_t state_;
};

uint64_t HashCombine(uint64_t a, uint64_t b);
uint64_t HashString(const std::string& s);

struct Reality {
  uint64_t seed = 0;
  ModelConstants constants;           // the perturbed model constants
  double allocator_overhead_gib = 0;  // caching-allocator reserve, NCCL buffers, CUDA context
  double activation_factor = 1;       // fragmentation / kernel workspace on top of activations
  double shape_spread = 0.04;         // amplitude of per-shape efficiency quirks
  // Effects the model does not represent at all:
  double per_microbatch_overhead_s = 0.003;  // launch/sync cost per micro-batch per step
  double tp_overlap = 0.2;          // share of tensor-parallel traffic hidden by comm overlap
  double selective_penalty = 0.03;  // extra compute of selective recompute (flash bwd, etc.)
  double full_penalty = 0.02;       // extra compute of full recompute (re-launch, sync)
  // Structural realities (issue 14: --reality structural) differ from the model in form, not
  // only in constants. All zero for a perturbed reality. GPU workloads only.
  bool structural = false;
  double layer_floor_s = 0;       // eager launch floor per layer per micro-batch (forward+back)
  double activation_growth = 0;   // activations * (1 + growth * log2(mbs)): fragmentation
  double logits_extra_bytes = 0;  // bytes per logit element kept beyond the model (fp32 upcast)
  double small_tile_penalty = 0;  // efficiency lost by micro-batches of few tokens
  double narrow_penalty = 0;      // efficiency lost by narrow per-device GEMMs (hidden / tp)
};

// The reality drawn from `seed` (independent of the workload): the model with perturbed
// constants.
Reality RealityForSeed(uint64_t seed);
// kind "perturbed": RealityForSeed(seed). kind "structural": the same perturbed constants plus
// structural effects drawn from the seed (a launch floor per layer and micro-batch, memory that
// grows faster than the model's activation formula, logits the model does not count, a larger
// framework overhead, kernel efficiency that depends on the micro-batch's tokens and the
// per-device GEMM width). kInvalidArgument naming --reality for another kind.
Result<Reality> RealityFor(uint64_t seed, const std::string& kind);

// What a run of `p` would do on the real cluster, without noise or faults.
struct RealOutcome {
  bool invalid = false;  // the framework refuses the configuration (see `violation`)
  Violation violation;
  bool oom = false;
  bool oom_at_setup = false;  // parameters + optimizer alone exceed memory
  double peak_gib = 0, capacity_gib = 0, static_gib = 0, activations_gib = 0;
  Estimate estimate;  // the model under the reality's constants
  double step_time_seconds = 0;
  TrialMetrics metrics;  // noise-free measurements (0s when the run fails)
};

RealOutcome EvaluateReality(const Workload& w, const ParallelPlan& p, const Reality& r);

// How sick nodes degrade the hardware a run sees (issue 9, node_faults.h). Defaults: healthy.
struct Degradation {
  // Fraction of its clock the slowest device runs at (a throttled GPU or TPU chip). Every kernel's
  // achieved FLOP/s scales by it; HBM-bound elementwise work does not.
  double compute = 1.0;
  // Fraction of the inter-node bandwidth (InfiniBand/RoCE NIC, TPU DCN) the slowest node has.
  // Intra-node links (NVLink, ICI) are untouched.
  double scale_out = 1.0;
  bool healthy() const { return compute == 1.0 && scale_out == 1.0; }
};
// The same run on degraded hardware. A healthy `d` gives exactly EvaluateReality(w, p, r).
RealOutcome EvaluateReality(const Workload& w, const ParallelPlan& p, const Reality& r,
                            const Degradation& d);

}  // namespace paratune::sim

#endif  // PARATUNE_AGENTS_SIM_REALITY_H_
