// The plain result types that cross module lines: what the performance model predicts
// (Estimate), what a trial measured (TrialMetrics), and why it failed (FailureDiagnosis). JSON
// shapes follow contract sections 5 and 6 exactly (camelCase keys).
#ifndef PARATUNE_AGENTS_CORE_RESULTS_H_
#define PARATUNE_AGENTS_CORE_RESULTS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/core/failure_category.h"
#include "base/status.h"

namespace paratune {

struct MemoryBreakdown {
  double parameters_gib = 0, gradients_gib = 0, optimizer_gib = 0, activations_gib = 0,
         other_gib = 0;
  double Total() const {
    return parameters_gib + gradients_gib + optimizer_gib + activations_gib + other_gib;
  }
};

// Where one training step's time goes, in seconds (exposed, i.e. not hidden by overlap).
struct TimeBreakdown {
  double compute = 0;          // GEMMs, attention, elementwise (incl. recompute)
  double tensor_parallel = 0;  // TP/SP collectives on the critical path
  double context_parallel = 0;
  double pipeline_bubble = 0;
  double pipeline_p2p = 0;
  double data_parallel = 0;    // gradient reduce / param gather not overlapped
  double expert_parallel = 0;  // MoE all-to-all
  double optimizer = 0;
};

// The performance and memory model's verdict on one configuration.
struct Estimate {
  bool fits = false;  // no violations and peak memory within capacity
  double peak_memory_gib = 0;
  double capacity_gib = 0;  // usable device memory the verdict compared against
  MemoryBreakdown memory;
  TimeBreakdown time;
  double step_time_seconds = 0;
  double model_tflops_per_device = 0;     // model FLOPs (no recompute) per second per device
  double hardware_tflops_per_device = 0;  // with recompute
  double mfu = 0, hfu = 0;
  double tokens_per_second_per_device = 0;
  // compute | hbm | communication | pipeline | memory-capacity | input
  std::string bottleneck;
  std::vector<std::string> violations;  // broken constraints, each a sentence naming the keys
  // Contract section 14: "fits" | "marginal" | "does-not-fit" and the range the model's residuals
  // on its fit data give for this framework profile (agents/model/interval.h); verdict "" and
  // ranges 0 when no interval was applied (the simulated cluster's reality).
  struct Range {
    double low = 0, high = 0;
  };
  std::string verdict;
  Range step_time_range, peak_memory_range, tokens_range;

  nlohmann::json ToJson() const;  // contract section 6 `estimate` shape (+ "time" breakdown)
};

// What a trial measured (contract section 5 status.metrics). Zero means "not reported".
struct TrialMetrics {
  double mfu = 0, tflops_per_device = 0, tokens_per_second_per_device = 0, step_time_seconds = 0,
         peak_memory_gib = 0, avg_memory_gib = 0;
  // Memory in use on the device as the driver reports it (nvidia-smi "Memory-Usage"): the
  // allocator's reserve plus the CUDA context and communication buffers, so an upper bound of
  // the allocated peak, not the peak itself. 0: not measured. JSON "deviceMemoryUsedGiB",
  // written only when measured.
  double device_memory_used_gib = 0;
  nlohmann::json ToJson() const;
  static Result<TrialMetrics> FromJson(const nlohmann::json& j);
  // The campaign's objective value (0 when the metric is missing).
  double Objective(ObjectiveMetric m) const;
};

struct FailureDiagnosis {
  std::string category;                 // a FailureCategory's wire name (ToString)
  std::vector<std::string> parameters;  // config keys most likely responsible
  std::string summary;     // "tp 4 and numAttentionHeads 14 caused ValueError (Confidence: 95)"
  int confidence = 0;      // 0..100
  bool retryable = false;  // not caused by the parameters
  std::string evidence;    // the log lines the diagnosis rests on
  std::string signature;   // knowledge-base key that matched ("" if none)
  // No signature matched and the known failures decided: their vote (signature
  // kByVotePrefix + the closest case's URL) or their words (kByWordsPrefix + the category).
  // Such a category is a guess: it names the kind of failure, and nothing drastic (ending a
  // campaign) rests on it.
  static constexpr const char* kByVotePrefix = "case:";
  static constexpr const char* kByWordsPrefix = "words:";
  bool ByVote() const { return signature.rfind(kByVotePrefix, 0) == 0; }
  bool ByWordsOnly() const { return signature.rfind(kByWordsPrefix, 0) == 0; }
  bool ByResemblance() const { return ByVote() || ByWordsOnly(); }
  // Out of device memory (CudaOOM, TpuResourceExhausted) or of memory at all (HostOOM too), as
  // the loop learns from it. Not when only words decided: right about half the time on held-out
  // logs, so no memory observation and no rule against configurations like the trial's.
  bool RanOutOfDeviceMemory() const {
    return !ByWordsOnly() &&
           (Is(FailureCategory::kCudaOOM) || Is(FailureCategory::kTpuResourceExhausted));
  }
  bool RanOutOfMemory() const {
    return RanOutOfDeviceMemory() || (!ByWordsOnly() && Is(FailureCategory::kHostOOM));
  }
  // The category; kUnknown when `category` is "" or no category's name.
  FailureCategory Category() const { return FailureCategoryOf(category); }
  bool Is(FailureCategory c) const { return Category() == c; }
  nlohmann::json ToJson() const;
  static Result<FailureDiagnosis> FromJson(const nlohmann::json& j);
};

enum class TrialPhase { kPending, kRunning, kSucceeded, kFailed, kRejected };
const char* TrialPhaseName(TrialPhase p);
Result<TrialPhase> ParseTrialPhase(const std::string& s);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_CORE_RESULTS_H_
