// The per-framework line parsers behind metric_collector.h: each reads one cleaned line (colour
// codes and launcher rank prefixes removed, log_lines.h) into step samples, memory readings and
// the run summary. Every format is cited from the framework source that prints it. The first
// stage of a log's reading (metric_collector.cc): lines -> samples -> one sample per step ->
// derived metrics. Internal to agents/collectors.
#ifndef PARATUNE_AGENTS_COLLECTORS_FRAMEWORK_PARSERS_H_
#define PARATUNE_AGENTS_COLLECTORS_FRAMEWORK_PARSERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agents/collectors/metric_collector.h"
#include "base/status.h"

namespace paratune::collectors::internal {

struct LogMemory {
  double peak_gib = 0;
  double avg_gib = 0;
  int avg_count = 0;
  // The peak a library beneath the framework printed (DeepSpeed's throughput timer, the Hugging
  // Face Trainer's memory tracker): the log's peak only when the framework printed none of its own
  // (ParseLog).
  double library_peak_gib = 0;
};

// The Hugging Face Trainer's memory metrics of one printing (skip_memory_metrics=False), in bytes,
// as far as read: log_metrics prints them one per line, the end-of-run dict all together.
struct TrainerMemoryMetrics {
  std::optional<double> before_init;   // before_init_mem_gpu
  std::optional<double> init_alloc;    // init_mem_gpu_alloc_delta
  std::optional<double> train_alloc;   // train_mem_gpu_alloc_delta (negative when train() freed)
  std::optional<double> train_peaked;  // train_mem_gpu_peaked_delta
};

// A whole-run summary (the Hugging Face Trainer's `train_runtime` ... dict at the end).
struct RunSummary {
  double runtime_seconds = 0;
  double samples_per_second = 0;  // global
  double steps_per_second = 0;
  double tokens_per_second_per_device = 0;  // `train_tokens_per_second` (include_tokens_per_second)
  // How many printers' end-of-run dicts the figures above are the mean of, and the `train_loss`
  // they share (the same run's end, printed by each node's local rank 0).
  int printers = 0;
  std::optional<double> train_loss;
};

struct ParsedLog {
  std::vector<StepSample> samples;  // log order, one per step line read (duplicates included)
  LogMemory memory;
  TrainerMemoryMetrics trainer_memory;
  RunSummary summary;
  int64_t other_lines = 0;  // validation/eval/ramp-up/profiler lines recognised and ignored
  bool nemo_steps = false;  // NeMo's train_step_timing lines (global_step counts from 0)
  // NeMo Automodel's step lines (each one step's own time, steps counted from 0), and whether its
  // `Loading checkpoint from DIR` was read with no step line after it yet.
  bool automodel_steps = false;
  bool automodel_checkpoint_loaded = false;
  // The first step this process trains, when the log says: torchtitan's `Training starts at step
  // N` (N > 1 after a checkpoint load), Megatron's `successfully loaded checkpoint ... at
  // iteration N` (N + 1), MaxText's `restoring from this run's directory step S` (S + 1), NeMo
  // Automodel's first step line after `Loading checkpoint from`; 0: not printed. A resumed process
  // warms up at that step as a fresh one does at its first.
  int64_t first_trained_step = 0;
  // The batch shape the log itself prints (torchtitan's `Trainer is initialized with local batch
  // size N, global batch size G, gradient accumulation steps A, sequence length S`): tokens one
  // data-parallel rank processes per step (local x A x S); 0 unknown.
  double logged_tokens_per_device_step = 0;
  // torchtitan's non-data-parallel size (`Building device mesh with parallelism: pp=P, ...,
  // cp=C, tp=T, ...`: P x C x T): its tps divides a rank's tokens by it, so one step is
  // logged_tokens_per_device_step / this many tokens per device at the printed tps; 0: the log
  // printed no mesh line.
  double logged_non_data_parallel = 0;
  // The last step number read before each validation / evaluation / checkpoint line: the steps
  // right after such a pause run slow for reasons of their own (async checkpoint finalisation,
  // the data loader refilling).
  std::vector<int64_t> pauses;
  // NeMo asynchronous checkpoint saves (framework_parsers.cc TrackAsyncSave): whether one is
  // running, and per save the first and last step number logged while it ran (first > last: none
  // yet). Those steps are not judged by the step-time anomaly checks either.
  bool async_save_pending = false;
  std::vector<std::pair<int64_t, int64_t>> async_save_steps;
  // MaxText: the log shows a profiler session (xprof's `Profiler session started` / `Profiler
  // session tear down`), whose start and stop disturb the steps around them.
  bool profiler_session = false;
  // Samples waiting for the line that numbers them (Megatron-Bridge's rank-0 `Step Time` line).
  bool pending = false;
  StepSample pending_sample;
};

// Parses a whole log with the collector's rules, line by line (each line cleaned first:
// log_lines.h). kInvalidArgument naming the known collectors for an unknown one.
Result<ParsedLog> ParseLog(const std::string& collector, std::string_view log);

}  // namespace paratune::collectors::internal

#endif  // PARATUNE_AGENTS_COLLECTORS_FRAMEWORK_PARSERS_H_
