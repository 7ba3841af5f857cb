// Turns what a finished trial left behind into TrialMetrics (contract section 4): the
// termination-message JSON when there is one, otherwise the training log parsed by the collector
// the campaign names (megatron-lm, maxtext, torchtitan, json). Log collectors average the
// steady-state steps and skip warm-up (the first steps include compilation, NCCL set-up and
// allocator growth). Pure functions: no I/O, thread-safe.
#ifndef PARATUNE_AGENTS_COLLECTORS_METRIC_COLLECTOR_H_
#define PARATUNE_AGENTS_COLLECTORS_METRIC_COLLECTOR_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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
};

// One parsed step line. Fields a framework does not print stay 0.
struct StepSample {
  int64_t step = 0;
  double step_time_seconds = 0;
  double tflops_per_device = 0;
  double tokens_per_second_per_device = 0;
  double mfu = 0;
  double memory_gib = 0;
  int64_t global_batch_size = 0;
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
  // Seconds per step of every logged interval, in log order, warm-up included (Megatron-LM's
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

// The samples that count: drops the warm-up (the first fifth of the steps, at least one when
// there are two or more, and any step numbered 0).
std::vector<StepSample> SteadyState(const std::vector<StepSample>& samples);

// Reads the number that follows `label` (skipping spaces, ':' and '='), accepting thousands
// separators ("3,255") and exponents. Returns false when the label is absent or no number follows.
bool NumberAfter(std::string_view line, std::string_view label, double* out);

}  // namespace paratune::collectors

#endif  // PARATUNE_AGENTS_COLLECTORS_METRIC_COLLECTOR_H_
