// The per-framework line parsers behind metric_collector.h: each reads one cleaned line (colour
// codes and launcher rank prefixes removed, log_lines.h) into step samples, memory readings and
// the run summary. Every format is cited from the framework source that prints it. Internal to
// agents/collectors.
#ifndef PARATUNE_AGENTS_COLLECTORS_FRAMEWORK_PARSERS_H_
#define PARATUNE_AGENTS_COLLECTORS_FRAMEWORK_PARSERS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "agents/collectors/metric_collector.h"

namespace paratune::collectors::internal {

struct LogMemory {
  double peak_gib = 0;
  double avg_gib = 0;
  int avg_count = 0;
};

// A whole-run summary (the Hugging Face Trainer's `train_runtime` ... dict at the end).
struct RunSummary {
  double runtime_seconds = 0;
  double samples_per_second = 0;  // global
  double steps_per_second = 0;
  double tokens_per_second_per_device = 0;  // `train_tokens_per_second` (include_tokens_per_second)
};

struct ParsedLog {
  std::vector<StepSample> samples;  // log order, one per step line read (duplicates included)
  LogMemory memory;
  RunSummary summary;
  int64_t other_lines = 0;  // validation/eval/ramp-up/profiler lines recognised and ignored
  bool nemo_steps = false;  // NeMo's train_step_timing lines (global_step counts from 0)
  // The batch shape the log itself prints (torchtitan's `Trainer is initialized with local batch
  // size N, global batch size G, gradient accumulation steps A, sequence length S`): tokens one
  // data-parallel rank processes per step (local x A x S); 0 unknown.
  double logged_tokens_per_device_step = 0;
  // torchtitan's non-data-parallel size (`Building device mesh with parallelism: pp=P, ...,
  // cp=C, tp=T, ...`: P x C x T): its tps divides a rank's tokens by it, so one step is
  // logged_tokens_per_device_step / this many tokens per device at the printed tps.
  double logged_non_data_parallel = 1;
  // The last step number read before each validation / evaluation / checkpoint line: the steps
  // right after such a pause run slow for reasons of their own (async checkpoint finalisation,
  // the data loader refilling).
  std::vector<int64_t> pauses;
  // Samples waiting for the line that numbers them (Megatron-Bridge's rank-0 `Step Time` line).
  bool pending = false;
  StepSample pending_sample;
};

// Parses `line` (already cleaned) of the rank `rank` (-1 unknown) with the collector's rules.
// False for an unknown collector.
bool ParseLine(const std::string& collector, std::string_view line, int64_t rank, ParsedLog* out);
// Ends the log: flushes a pending sample.
void FinishLog(ParsedLog* out);

// The last step number that is the framework's warm-up (steps numbered up to it are dropped;
// INT64_MIN: none), from the step numbers read (`steps`, ascending, distinct), so an excerpt
// that starts mid-run drops nothing. Megatron-LM (and Megatron-Bridge's iteration lines):
// iteration 1, or the first logged interval when the log interval is known from two lines (it
// includes initialisation); NeMo's global_step 0 and 1; MaxText's steps 0 and 1 (step 0
// compiles; step 1 is timed before the asynchronous dispatch of step 0 has finished, a far too
// short "step"); torchtitan's step 1 (it compiles when torch.compile is on); the Hugging Face
// progress bar's first tenth (its rate is a moving average over the steps so far); JSON lines:
// step 0 and the first step logged.
int64_t LastWarmupStep(const std::string& collector, const ParsedLog& parsed,
                       const std::vector<int64_t>& steps);

}  // namespace paratune::collectors::internal

#endif  // PARATUNE_AGENTS_COLLECTORS_FRAMEWORK_PARSERS_H_
