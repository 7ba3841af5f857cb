// Turns what a finished trial left behind into TrialMetrics (contract section 4): the
// termination-message JSON when there is one, otherwise the training log parsed by the collector
// the campaign names (megatron-lm, megatron-bridge, maxtext, torchtitan, hf-trainer, json; the
// formats and their sources are in framework_parsers.cc). Log collectors read one sample per
// step number whatever the number of ranks printing it, ignore validation lines, drop the
// framework's warm-up steps by step number, and average the rest. Metrics the log lacks are
// derived from the ones it has and the campaign (one definition per objective: model FLOPs,
// never counting recomputation), and each metric's source is recorded. A log goes one way
// through the stages: its lines cleaned (log_lines.h) and parsed into samples by the
// framework's rules (framework_parsers.h), one sample per step with the warm-up dropped (here),
// the missing metrics derived (metric_derivation.h).
// Pure functions: no I/O, thread-safe.
#ifndef PARATUNE_AGENTS_COLLECTORS_METRIC_COLLECTOR_H_
#define PARATUNE_AGENTS_COLLECTORS_METRIC_COLLECTOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/core/results.h"
#include "base/status.h"

namespace paratune::collectors {

// What the logs do not say but the campaign knows; zeros mean "unknown" and leave the derived
// metric at 0.
struct CollectorContext {
  int64_t seq_length = 0;
  int64_t global_batch_size = 0;
  int64_t devices = 0;                // devices in the whole trial
  double peak_tflops_per_device = 0;  // dense peak for the precision, for mfu
  // Model FLOPs of one token of a training step (forward + backward, no recomputation:
  // ModelFlopsPerToken in agents/model/perf_model.h), for TFLOP/s when the log prints none.
  double model_flops_per_token = 0;
  // The trial's `recompute` ("none", "selective", "full"; "" unknown): Megatron-DeepSpeed's
  // TFLOPs count recomputation and are corrected to model FLOPs with it.
  std::string recompute;
};

// One parsed step line. Fields a framework does not print stay 0.
struct StepSample {
  int64_t step = 0;
  double step_time_seconds = 0;
  double tflops_per_device = 0;
  double tokens_per_second_per_device = 0;
  // Tokens/s of the whole job, when that is what the line prints (NeMo Automodel's `tps`): per
  // device over the campaign's devices (metric_collector.cc).
  double tokens_per_second_all_devices = 0;
  double mfu = 0;
  double memory_gib = 0;
  int64_t global_batch_size = 0;
  int64_t rank = -1;     // the rank prefix of the line (torchrun `[rank3]:`), -1 none
  bool numbered = true;  // false: the line prints no step number (numbered in log order)
  int64_t series = 0;    // progress bars: the bar's total (evaluation bars differ)
  bool tflops_counts_recompute = false;  // Megatron-DeepSpeed `TFLOPs:`
  // When the line was printed, in seconds from 1970-01-01 of the clock the log prints
  // (torchtitan's `[titan] YYYY-MM-DD HH:MM:SS,mmm`); 0: the line prints no time.
  double logged_at_seconds = 0;
};

// Where a metric came from (TrialRun status.metricSources, `paratune collect` "sources").
inline constexpr const char* kSourceLog = "log";
inline constexpr const char* kSourceTerminationMessage = "termination-message";
inline constexpr const char* kSourceDerived = "derived";

// What a log reading consisted of (`paratune collect` "steps").
struct StepCounts {
  int64_t read = 0;                  // distinct steps read
  int64_t warmup_dropped = 0;        // of them, warm-up
  int64_t duplicate_rank_lines = 0;  // step lines of a step already read (other ranks)
  int64_t other_lines = 0;           // validation / eval / ramp-up lines ignored
};

// Names accepted in spec.metrics.collector.
const std::vector<std::string>& CollectorNames();

// Parses a termination message `{"metrics": {...}}`. kNotFound when the message is empty or not
// such an object (e.g. a log tail from FallbackToLogsOnError); kInvalidArgument when "metrics"
// is present but malformed.
Result<TrialMetrics> ParseTerminationMessage(std::string_view message);

// Parses a training log with `collector`. kInvalidArgument for an unknown collector; kNotFound
// when the log holds no step line the collector recognises.
Result<TrialMetrics> CollectFromLog(const std::string& collector, std::string_view log,
                                    const CollectorContext& ctx);

// The termination message wins; otherwise the log. kNotFound when neither has metrics.
Result<TrialMetrics> CollectTrialMetrics(const std::string& collector,
                                         std::string_view termination_message, std::string_view log,
                                         const CollectorContext& ctx);

// A trial's metrics plus the time of every logged interval, for drift and spike detection
// (contract section 10: StepTimeDrift, StepTimeSpikes).
struct CollectedMetrics {
  TrialMetrics metrics;
  // TrialMetrics JSON key -> kSourceLog | kSourceTerminationMessage | kSourceDerived, for each
  // metric present (non-zero) in `metrics`.
  std::map<std::string, std::string> sources;
  StepCounts steps;
  std::vector<std::string> warnings;  // what was corrected or could not be derived
  // Why TFLOP/s and MFU were not derived though the log gave a rate (empty otherwise): the
  // campaign's model or batch shape gave more than the accelerator's peak, so it is not the run's;
  // or why MFU was not derived from the TFLOP/s the log printed: they exceed the peak.
  std::string implausible_derivation;
  // Leading entries of step_times that are the framework's warm-up (by step number).
  size_t warmup_intervals = 0;
  // Seconds per step of every logged interval, one per step number in step order, warm-up
  // included, the steps right after a validation / evaluation / checkpoint line left out (for
  // the anomaly checks: their slowness is the pause's) (Megatron-LM's
  // `elapsed time per iteration (ms)`, MaxText's `seconds:`, JSON lines' stepTimeSeconds,
  // torchtitan's tps turned into time when the context gives the batch shape; or the
  // termination message's "stepTimesSeconds" array). Empty when the source carries no time.
  std::vector<double> step_times;
  // The same with the warm-up dropped as SteadyState drops it (what the metrics average).
  std::vector<double> steady_step_times;
};

// At most this many step times are kept (the last ones); a log or message with more keeps
// its tail, so a hostile log cannot grow the result without bound.
inline constexpr size_t kMaxStepTimes = 10000;

// CollectFromLog plus the step times.
Result<CollectedMetrics> CollectLogWithStepTimes(const std::string& collector, std::string_view log,
                                                 const CollectorContext& ctx);

// CollectTrialMetrics plus the step times: the metrics come from the termination message when
// it has them (and its optional "stepTimesSeconds" array of positive numbers; kInvalidArgument
// naming the field when malformed), otherwise from the log; step times come from the message's
// array, else from `log` when it holds step lines (even when the message gave the metrics), else
// from the message read as a log tail.
Result<CollectedMetrics> CollectTrialMetricsWithStepTimes(const std::string& collector,
                                                          std::string_view termination_message,
                                                          std::string_view log,
                                                          const CollectorContext& ctx);

// What a log's memory lines say (Megatron-LM's `[Rank N] ... memory (MB)`, MaxText's
// `Total memory size`, torchtitan's step lines, JSON lines' peak/avgMemoryGiB), even when it has
// no step line: Megatron-LM prints memory on rank 0 and throughput on the last rank. Zeros when
// the log says nothing (or the collector is unknown).
struct LoggedMemory {
  double peak_gib = 0;
  double avg_gib = 0;
};
LoggedMemory MemoryFromLog(const std::string& collector, std::string_view log);

// One reading of a log: its metrics (CollectLogWithStepTimes) and its memory lines
// (MemoryFromLog), from one parse.
struct LogReading {
  Result<CollectedMetrics> collected;
  LoggedMemory memory;
};
LogReading ReadLog(const std::string& collector, std::string_view log, const CollectorContext& ctx);

// The samples that count: drops the warm-up (the first fifth of the steps, at least one when
// there are two or more, and any step numbered 0). For logs without a framework's warm-up rule
// (termination-message step lists); the collectors drop warm-up by step number instead.
std::vector<StepSample> SteadyState(const std::vector<StepSample>& samples);

// Why `objective` is missing from `c` (empty when it is present): which lines the log lacked and
// what the campaign would need for it to be derived.
std::string MissingObjectiveReason(const std::string& collector, const CollectedMetrics& c,
                                   ObjectiveMetric objective, const CollectorContext& ctx);

// Reads the number that follows `label` (skipping spaces, ':' and '='), accepting thousands
// separators ("3,255") and exponents. Returns false when the label is absent or no number follows.
bool NumberAfter(std::string_view line, std::string_view label, double* out);

}  // namespace paratune::collectors

#endif  // PARATUNE_AGENTS_COLLECTORS_METRIC_COLLECTOR_H_
