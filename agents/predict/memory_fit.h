// The per-campaign memory model learned from trials (issue 14, item 2). The model's peak memory
// is split into terms that scale differently across configurations:
//   peak = framework overhead (the model's "other") + fixed
//        + static_scale     * (parameters + gradients + optimizer state)
//        + activation_scale * activations (the model's formula, logits included)
//        + logits_bytes     * logit elements per device (what the loss keeps that the model
//                             does not count, e.g. an fp32 upcast)
// Each successful trial's measured peak is an observation; each out-of-memory failure says the
// configuration needs more than the device holds (or more than the allocation its error text
// names). A ridge fit toward the model (scales 1, nothing extra) pins the terms: two successes
// at different micro-batch sizes fix the slope. Pure functions: thread-safe.
#ifndef PARATUNE_AGENTS_PREDICT_MEMORY_FIT_H_
#define PARATUNE_AGENTS_PREDICT_MEMORY_FIT_H_

#include <optional>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/core/results.h"
#include "agents/predict/planner_model.h"
#include "agents/trials/message_pool.h"

namespace paratune {

// What the learned terms multiply, for one configuration.
struct MemoryFeatures {
  double overhead_gib = 0;     // the rest of the model's peak (framework overhead), kept as is
  double static_gib = 0;       // parameters + gradients + optimizer
  double activations_gib = 0;  // the model's activations (logits included)
  double logit_gelems = 0;     // logit elements per device / 2^30
  double microbatches = 0;     // micro-batches per step per pipeline (for the launch floor)
};

// Features of `c` from its uncalibrated estimate and the workload behind `model` (logits and
// micro-batches are 0 when the model has no workload, e.g. a fake).
MemoryFeatures FeaturesOf(const Estimate& base, const PlannerModel& model, const Config& c);

// The learned peak memory of a configuration.
double LearnedPeakGiB(const MemoryFeatures& f, const CalibrationState& c);
// Standard deviation of that peak from the terms' posterior (0 before any memory observation):
// small near measured configurations, large where the fit extrapolates.
double LearnedPeakSdGiB(const MemoryFeatures& f, const CalibrationState& c);

struct MemoryObservation {
  MemoryFeatures features;
  bool oom = false;
  double peak_gib = 0;   // succeeded: the measured (allocated) peak; 0 when not measured
  double needs_gib = 0;  // oom: a lower bound of what it needs (>= capacity)
  // succeeded with no allocated peak but a device-level reading (nvidia-smi: the allocator's
  // reserve, CUDA context, communication buffers): the peak is at most this. 0: none.
  double at_most_gib = 0;
};

// Fits memory_overhead_gib, memory_static_scale, memory_activation_scale and
// memory_logits_bytes of `c` to `obs` (unchanged priors when `obs` is empty). Every OOM
// observation ends up predicted at or above its `needs_gib`, and every upper-bound observation
// at or below its `at_most_gib`, when the terms can express it; neither pulls the fit otherwise.
void FitMemoryModel(const std::vector<MemoryObservation>& obs, CalibrationState* c);

// The "X GiB is allocated by PyTorch" figure of a torch OOM text (nullopt when absent), and the
// "Tried to allocate Y GiB" request (0 when absent).
std::optional<double> AllocatedFromOomText(const std::string& text, double* tried_gib = nullptr);

// Whether `candidate` needs at least as much memory as `failed` on every axis a person would
// reason about: every parameter equal except a micro-batch at least as large, recomputation no
// heavier (none > selective > full in memory), and sharding no finer (tp, pp, cp, ZeRO/FSDP
// degree no larger, offload not added). True for an identical config.
bool NeedsAtLeastAsMuchMemory(const Config& candidate, const Config& failed);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_PREDICT_MEMORY_FIT_H_
