#include "agents/collectors/metric_collector.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "agents/collectors/framework_parsers.h"
#include "agents/collectors/metric_derivation.h"

namespace paratune::collectors {

namespace {

using internal::ParsedLog;

// Longer "steps" (115 days) are garbage, not measurements: dropped from step times.
constexpr double kMaxStepSeconds = 1e7;

// The mean of the positive values (a running mean: no overflow to inf on huge logged numbers).
double Mean(const std::vector<StepSample>& samples, double StepSample::*field) {
  double mean = 0;
  int n = 0;
  for (const auto& s : samples) {
    if (s.*field > 0) {
      ++n;
      mean += (s.*field - mean) / n;
    }
  }
  return mean;
}

// The mean of the positive values of `field` over `group` (0 when none).
double GroupMean(const std::vector<StepSample>& group, double StepSample::*field) {
  double sum = 0;
  int n = 0;
  for (const auto& s : group) {
    if (s.*field > 0 && std::isfinite(s.*field)) {
      sum += s.*field / static_cast<double>(group.size());  // scaled: no overflow to inf
      ++n;
    }
  }
  return n == 0 ? 0 : sum * static_cast<double>(group.size()) / n;
}

// One sample per (series, step): unnumbered samples are numbered in log order; the lines of one
// step printed by several ranks (every rank under torchrun) are averaged into one; a progress
// bar's samples keep only the series (bar total) with the most steps (the training bar, not the
// evaluation bars). Sorted by step.
std::vector<StepSample> OnePerStep(const std::vector<StepSample>& samples, StepCounts* counts) {
  std::map<int64_t, int64_t> per_series;
  for (const auto& s : samples) ++per_series[s.series];
  int64_t series = 0, most = -1;
  for (const auto& [k, n] : per_series) {
    if (n > most) series = k, most = n;
  }
  std::map<int64_t, std::vector<StepSample>> by_step;
  int64_t unnumbered = 0;
  for (StepSample s : samples) {
    if (s.series != series) {
      ++counts->other_lines;
      continue;
    }
    if (!s.numbered) s.step = ++unnumbered;
    std::vector<StepSample>& group = by_step[s.step];
    // A progress bar redrawn at the same step (tqdm's closing redraw after the Trainer's final
    // dict, `1689/1689 [05:06<00:00, 5.50it/s]` after `5.99it/s`) replaces that rank's earlier
    // drawing: the bar's latest figure, not a second rank's.
    if (s.series > 0) {
      auto same_rank = std::find_if(group.begin(), group.end(),
                                    [&s](const StepSample& g) { return g.rank == s.rank; });
      if (same_rank != group.end()) {
        *same_rank = s;
        continue;
      }
    }
    if (!group.empty()) ++counts->duplicate_rank_lines;
    group.push_back(s);
  }
  std::vector<StepSample> out;
  out.reserve(by_step.size());
  for (auto& [step, group] : by_step) {
    StepSample s = group.front();
    for (double StepSample::*f :
         {&StepSample::step_time_seconds, &StepSample::tflops_per_device,
          &StepSample::tokens_per_second_per_device, &StepSample::tokens_per_second_all_devices,
          &StepSample::mfu, &StepSample::logged_at_seconds}) {
      s.*f = GroupMean(group, f);
    }
    for (const auto& g : group) s.memory_gib = std::max(s.memory_gib, g.memory_gib);
    out.push_back(s);
  }
  return out;
}

// The log interval: the smallest gap between two logged steps (0: fewer than two).
int64_t LogInterval(const std::vector<int64_t>& steps) {
  int64_t interval = 0;
  for (size_t i = 1; i < steps.size(); ++i) {
    const int64_t gap = steps[i] - steps[i - 1];
    if (gap > 0 && (interval == 0 || gap < interval)) interval = gap;
  }
  return interval;
}

// The last step number that is the framework's warm-up (steps numbered up to it are dropped;
// INT64_MIN: none), from the step numbers read (`steps`, ascending, distinct), so an excerpt
// that starts mid-run drops nothing. Megatron-LM (and Megatron-Bridge's iteration lines):
// iteration 1, or the first logged interval when the log interval is known from two lines (it
// includes initialisation); NeMo's global_step 0 and 1; MaxText's steps 0 and 1 (step 0
// compiles; step 1 is timed before the asynchronous dispatch of step 0 has finished, a far too
// short "step"); torchtitan's step 1 (it compiles when torch.compile is on), or the step a resumed
// run starts at (`Training starts at step 3201`: the first interval after it ran at 2,516 tps where
// the rest ran 3,329-3,338 in a resumed 2026 run); the Hugging Face progress bar's first tenth
// (its rate is a moving average over the steps so far); JSON lines: step 0 and the first step
// logged; NeMo Automodel's first step line when it is the run's first (numbered at most the log's
// step spacing). A process resumed from a checkpoint (ParsedLog::first_trained_step) warms up as a
// fresh one does, counted from its first step: Megatron's interval timer starts just before the
// training loop (megatron/training/training.py train(), `interval-time`), and since 2026-01
// (c40b6ea) it logs its first iteration on its own to show the initialisation overhead
// (`is_first_iteration`), so the first logged interval after the load holds it; MaxText compiles
// its first step and mis-times the next whatever their numbers.
int64_t LastWarmupStep(const std::string& collector, const ParsedLog& parsed,
                       const std::vector<int64_t>& steps) {
  constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
  if (steps.empty()) return kNone;
  const int64_t first = parsed.first_trained_step;  // 0: not printed
  if (collector == "maxtext") return first > 0 ? first + 1 : 1;
  if (collector == "torchtitan") return std::max<int64_t>(1, first);
  if (collector == "hf-trainer") {
    return steps.front() <= 1 ? std::max<int64_t>(2, steps.back() / 10) : kNone;
  }
  if (collector == "json") return steps.front() <= 1 ? 1 : 0;
  if (parsed.automodel_steps) {
    // NeMo Automodel: the process's first step line (steps counted from 0, or before 2025-08 in
    // micro-batches, so `step 4` under 4 accumulation steps), the time since the loop began.
    if (first > 0) return first;
    return steps.front() <= std::max<int64_t>(1, LogInterval(steps)) ? steps.front() : kNone;
  }
  if (parsed.nemo_steps) return 1;
  // Megatron: the first logged interval (of the resumed process: iterations first..).
  return std::max<int64_t>(0, first - 1) + std::max<int64_t>(1, LogInterval(steps));
}

// Whether the log holds the start of training: a step of the framework's warm-up, or, when a
// quote begins after it, the first step after the warm-up. Megatron-LM's iteration line and
// torchtitan's step line average over the log interval (the time since the last line), so there
// the first logged interval after the warm-up still holds the first steps after initialisation
// (a quote that begins at Megatron-LM's iteration 2 of log interval 1: 1348.7 ms, then 548 and
// 560 ms); NeMo's train_step_timing, MaxText's step line are one step's own time. Then the
// leading steady steps may still be warming up (StillWarmingUp); a log that begins later is
// mid-run and drops nothing. Not for the Hugging Face bar nor JSON lines, whose first steps
// LastWarmupStep already judges.
bool HoldsTrainingStart(const std::string& collector, const ParsedLog& parsed,
                        const std::vector<int64_t>& steps, int64_t last_warmup) {
  if (steps.empty()) return false;
  if (steps.front() <= last_warmup) return true;
  if (collector == "hf-trainer" || collector == "json") return false;
  const bool interval_means =
      collector == "torchtitan" || collector == "megatron-lm" ||
      (collector == "megatron-bridge" && !parsed.nemo_steps && !parsed.automodel_steps);
  const int64_t span = interval_means ? std::max<int64_t>(1, LogInterval(steps)) : 1;
  return steps.front() <= last_warmup + span;
}

// Steps within this many of a validation / evaluation / checkpoint line are not judged by the
// step-time anomaly checks: their time carries the pause's aftermath (NeMo's async checkpoint
// finalisation runs 2-4x slower steps for four or five steps). Nor are the steps logged while a
// NeMo asynchronous checkpoint save was still running, however many (ParsedLog).
constexpr int64_t kStepsAfterPause = 5;

bool AfterPause(const ParsedLog& parsed, int64_t step) {
  for (int64_t p : parsed.pauses) {
    if (step > p && step <= p + kStepsAfterPause) return true;
  }
  for (const auto& [first, last] : parsed.async_save_steps) {
    if (step >= first && step <= last) return true;
  }
  return false;
}

// 1 / tokens per second, or seconds per step: larger is slower, comparable within one log. The
// printed rate comes first: a framework that prints it prints it on every step line, while step
// times read from timestamps (StepTimesFromTimestamps) miss the first step of a log.
double Slowness(const StepSample& s) {
  if (s.tokens_per_second_per_device > 0) return 1.0 / s.tokens_per_second_per_device;
  if (s.tokens_per_second_all_devices > 0) return 1.0 / s.tokens_per_second_all_devices;
  return s.step_time_seconds > 0 ? s.step_time_seconds : 0;
}

// The upper median of `v` (its middle element once sorted; 0 when empty).
double UpperMedian(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The slowness of the steady steps from `from` on.
std::vector<double> SlownessFrom(const std::vector<StepSample>& steady, size_t from) {
  std::vector<double> out;
  for (size_t i = from; i < steady.size(); ++i) out.push_back(Slowness(steady[i]));
  return out;
}

// How many leading steady steps (after the framework's warm-up, when the log holds it) are still
// warm-up. The first interval may still hold the first steps after compilation: warm-up too when
// it is over 10% slower than the median of the later ones (torchtitan's step 10 of log_freq 10
// after step 1, or step 2 still ramping). MaxText times a step on the host between two
// dispatches (JAX's asynchronous dispatch), so its dispatch artefact, a step far shorter than the
// rest, is not always step 1: in its docs' 10-step run step 1 took 0.323 s, step 2 1.022 s, step 3
// 0.699 s, then 1.011-1.012 s (getting_started/Understanding_Logs_and_Metrics.md at e23ae165). Of
// its first three steady steps, those up to the last one more than 10% shorter than the median of
// the steps after them are warm-up too, when three steady steps remain (a slow one alone is a
// real step). NeMo's train_step_timing is a running mean over recent steps (a committed NeMo 1.x
// A4 pod log prints 44.85 s for step 0, then 24.77, 18.06, 14.72, 12.71, then 4.68-4.71 s: step
// 0 averaged with the ~4.7 s steps after it until it leaves a five-step window), so there each
// leading value still over 10% above the median of the later ones is warm-up (at most half the
// steps; at least two later steps remain, as steady.size() >= 3).
size_t StillWarmingUp(const std::string& collector, bool running_mean,
                      const std::vector<StepSample>& steady) {
  if (steady.size() < 3) return 0;
  const size_t most = running_mean ? steady.size() / 2 : 1;
  size_t slow = 0;
  while (slow < most) {
    const double median = UpperMedian(SlownessFrom(steady, slow + 1));
    if (median <= 0 || Slowness(steady[slow]) <= 1.1 * median) break;
    ++slow;
  }
  if (slow > 0) return slow;
  constexpr size_t kFirst = 3;
  if (collector != "maxtext" || steady.size() < kFirst + 3) return 0;
  const double later = UpperMedian(SlownessFrom(steady, kFirst));
  size_t drop = 0;
  for (size_t i = 0; i < kFirst; ++i) {
    if (Slowness(steady[i]) < 0.9 * later) drop = i + 1;
  }
  return drop;
}

// MaxText hides the steps at a profiler's start and stop itself (metric_logger.py
// _is_profiler_boundary_step: skip, skip + 1, skip + profiler_steps and the one after it, printed
// as `completed profiler ... step`); versions that print them as plain steps show 1.3 s, 0.03 s,
// 14.3 s and 0.03 s where the steps around run 0.58 s (an xprof window of a 2026 Gemma 4 run). In
// a MaxText log with a profiler session, steps more than 1.5x or under half the median are those
// boundary steps: left out, neither averaged nor judged. Returns how many were left out.
int64_t DropProfilerBoundarySteps(std::vector<StepSample>* steps) {
  std::vector<double> times;
  for (const auto& s : *steps) {
    if (s.step_time_seconds > 0) times.push_back(s.step_time_seconds);
  }
  if (times.size() < 3) return 0;
  const double median = UpperMedian(std::move(times));
  const size_t before = steps->size();
  steps->erase(
      std::remove_if(steps->begin(), steps->end(),
                     [median](const StepSample& s) {
                       return s.step_time_seconds > 1.5 * median ||
                              (s.step_time_seconds > 0 && s.step_time_seconds < 0.5 * median);
                     }),
      steps->end());
  return static_cast<int64_t>(before - steps->size());
}

// NeMo's train_step_timing can print a step far too long followed by a negative one (a timer
// read across two steps: 13.75 s then -12.71 s where the steps around run 0.45-0.54 s, a committed
// NeMo 24.09 log): the two together took their sum. Such a pair is taken as two steps of half the
// sum each (dropped when the sum is not positive); per rank, in log order.
std::vector<StepSample> WithNegativeTimesMerged(std::vector<StepSample> samples) {
  for (size_t i = 0; i < samples.size(); ++i) {
    if (samples[i].step_time_seconds >= 0) continue;
    for (size_t j = i; j-- > 0;) {
      if (samples[j].rank != samples[i].rank) continue;
      const double sum = samples[j].step_time_seconds + samples[i].step_time_seconds;
      samples[j].step_time_seconds = samples[i].step_time_seconds = sum > 0 ? sum / 2 : 0;
      break;
    }
    if (samples[i].step_time_seconds < 0) samples[i].step_time_seconds = 0;
  }
  return samples;
}

// The time of a sample (logged, or from tokens/s and the batch shape); 0 when unknown.
double StepTimeOf(const StepSample& s, const CollectorContext& ctx) {
  double t = s.step_time_seconds;
  if (t <= 0 && s.tokens_per_second_per_device > 0 && ctx.devices > 0 && ctx.seq_length > 0) {
    const double gbs = s.global_batch_size > 0 ? static_cast<double>(s.global_batch_size)
                                               : static_cast<double>(ctx.global_batch_size);
    t = gbs * static_cast<double>(ctx.seq_length) / static_cast<double>(ctx.devices) /
        s.tokens_per_second_per_device;
  }
  return t > 0 && t <= kMaxStepSeconds ? t : 0;
}

std::vector<double> LastStepTimes(std::vector<double> v) {
  if (v.size() > kMaxStepTimes) {
    v.erase(v.begin(), v.end() - static_cast<std::ptrdiff_t>(kMaxStepTimes));
  }
  return v;
}

TrialMetrics MeansOf(const ParsedLog& parsed, const std::vector<StepSample>& all,
                     const std::vector<StepSample>& steady) {
  TrialMetrics m;
  m.step_time_seconds = Mean(steady, &StepSample::step_time_seconds);
  m.tflops_per_device = Mean(steady, &StepSample::tflops_per_device);
  m.tokens_per_second_per_device = Mean(steady, &StepSample::tokens_per_second_per_device);
  m.mfu = Mean(steady, &StepSample::mfu);
  const double step_memory = Mean(steady, &StepSample::memory_gib);
  for (const auto& s : all) m.peak_memory_gib = std::max(m.peak_memory_gib, s.memory_gib);
  m.peak_memory_gib = std::max(m.peak_memory_gib, parsed.memory.peak_gib);
  m.avg_memory_gib =
      parsed.memory.avg_count > 0 ? parsed.memory.avg_gib / parsed.memory.avg_count : step_memory;
  return m;
}

// The Hugging Face Trainer's end-of-run summary as one sample, when no progress bar was read.
std::optional<StepSample> SummarySample(const ParsedLog& parsed, const CollectorContext& ctx) {
  const internal::RunSummary& s = parsed.summary;
  StepSample out;
  if (s.steps_per_second > 0) out.step_time_seconds = 1.0 / s.steps_per_second;
  out.tokens_per_second_per_device = s.tokens_per_second_per_device;
  if (out.tokens_per_second_per_device <= 0 && s.samples_per_second > 0 && ctx.devices > 0 &&
      ctx.seq_length > 0) {
    out.tokens_per_second_per_device =
        s.samples_per_second * static_cast<double>(ctx.seq_length) / ctx.devices;
  }
  if (out.step_time_seconds <= 0 && out.tokens_per_second_per_device <= 0) return std::nullopt;
  out.step = 1;
  return out;
}

// Whether the context gives a step's tokens per device (global batch x sequence / devices).
bool HasBatchShape(const CollectorContext& ctx) {
  return ctx.seq_length > 0 && ctx.devices > 0 && ctx.global_batch_size > 0;
}

// The campaign's context, completed from the batch shape the log prints when the campaign
// does not say it (a log read without a campaign: `paratune collect` with a bare campaign).
CollectorContext WithLoggedShape(const CollectorContext& campaign, const ParsedLog& parsed) {
  CollectorContext ctx = campaign;
  if (!HasBatchShape(ctx) && parsed.logged_tokens_per_device_step > 0) {
    ctx.seq_length = 1;
    ctx.devices = 1;
    ctx.global_batch_size = static_cast<int64_t>(std::llround(
        parsed.logged_tokens_per_device_step / std::max(1.0, parsed.logged_non_data_parallel)));
  }
  return ctx;
}

// torchtitan prints no step time: it follows from tps and the tokens of a step on a device,
// which needs the mesh (tps is divided by tp x cp x pp). Without the campaign's batch shape and
// without the log's mesh line that is a guess, so each step's time is read from the clock the
// logger prints on consecutive step lines instead (the seconds between them over the steps
// between them: a wall-clock step, log_freq > 1 included). The first step read has no earlier
// line and keeps none.
void StepTimesFromTimestamps(std::vector<StepSample>* steps) {
  for (size_t i = 1; i < steps->size(); ++i) {
    const StepSample& before = (*steps)[i - 1];
    StepSample& s = (*steps)[i];
    if (s.logged_at_seconds <= 0 || before.logged_at_seconds <= 0 || s.step <= before.step) {
      continue;
    }
    const double t = (s.logged_at_seconds - before.logged_at_seconds) /
                     static_cast<double>(s.step - before.step);
    if (t > 0 && t <= kMaxStepSeconds) s.step_time_seconds = t;
  }
}

// The steps of a parsed log: one sample per step, the warm-up dropped, their means and step
// times; then what the log lacks, derived (metric_derivation.h).
Result<CollectedMetrics> CollectSteps(const std::string& collector, const ParsedLog& parsed,
                                      const CollectorContext& campaign) {
  const CollectorContext ctx = WithLoggedShape(campaign, parsed);
  CollectedMetrics out;
  out.steps.other_lines = parsed.other_lines;
  std::vector<StepSample> steps = OnePerStep(WithNegativeTimesMerged(parsed.samples), &out.steps);
  // A whole job's tokens/s (NeMo Automodel's tps) over the campaign's devices is the per-device
  // figure; Automodel's own `/gpu` leaves tensor and pipeline parallelism out, so it stands in
  // only when the campaign does not say how many devices.
  const bool whole_job_rate = std::any_of(steps.begin(), steps.end(), [](const StepSample& s) {
    return s.tokens_per_second_all_devices > 0;
  });
  if (whole_job_rate && ctx.devices > 0) {
    for (StepSample& s : steps) {
      if (s.tokens_per_second_all_devices > 0) {
        s.tokens_per_second_per_device =
            s.tokens_per_second_all_devices / static_cast<double>(ctx.devices);
      }
    }
  } else if (whole_job_rate && std::any_of(steps.begin(), steps.end(), [](const StepSample& s) {
               return s.tokens_per_second_per_device > 0;
             })) {
    out.warnings.push_back(
        "tokens/s per device is the log's per-GPU figure (NeMo Automodel's `/gpu`: the whole "
        "job's tokens/s over the data- and context-parallel ranks), per device only when tp and "
        "pp are 1; the campaign's device count (spec.hardware) makes it the whole job's over "
        "its devices");
  }
  if (collector == "torchtitan" && !HasBatchShape(campaign) &&
      parsed.logged_non_data_parallel <= 0) {
    StepTimesFromTimestamps(&steps);
  }
  if (collector == "maxtext" && parsed.profiler_session) {
    if (const int64_t dropped = DropProfilerBoundarySteps(&steps); dropped > 0) {
      out.steps.other_lines += dropped;
      out.warnings.push_back(std::to_string(dropped) +
                             " steps at the profiler's start and stop were left out (MaxText's "
                             "profiler boundary steps)");
    }
  }
  if (steps.empty()) {
    if (auto s = SummarySample(parsed, ctx)) steps.push_back(*s);
  }
  if (steps.empty()) return Status::NotFound("log: no " + collector + " step lines");
  std::vector<int64_t> numbers;
  for (const auto& s : steps) numbers.push_back(s.step);
  int64_t last_warmup = LastWarmupStep(collector, parsed, numbers);
  std::vector<StepSample> steady;
  for (const auto& s : steps) {
    if (s.step > last_warmup) steady.push_back(s);
  }
  if (HoldsTrainingStart(collector, parsed, numbers, last_warmup)) {
    if (const size_t drop = StillWarmingUp(collector, parsed.nemo_steps, steady); drop > 0) {
      last_warmup = steady[drop - 1].step;
      steady.erase(steady.begin(), steady.begin() + static_cast<std::ptrdiff_t>(drop));
    }
  }
  if (steady.empty()) {
    // A log of warm-up only still says something: its last step, marked as such.
    steady.push_back(steps.back());
    out.warnings.push_back("only warm-up steps were logged: the figures are step " +
                           std::to_string(steps.back().step) + "'s, warm-up included");
  }
  out.steps.read = static_cast<int64_t>(steps.size());
  out.steps.warmup_dropped = static_cast<int64_t>(steps.size() - steady.size());
  if (parsed.first_trained_step > 1 && out.steps.warmup_dropped > 0) {
    out.warnings.push_back("the log resumes from a checkpoint at step " +
                           std::to_string(parsed.first_trained_step) + ": the steps up to " +
                           std::to_string(last_warmup) +
                           " are that process's warm-up and were dropped");
  }
  out.metrics = MeansOf(parsed, steps, steady);
  // A tqdm bar's rate is already a moving average (tqdm's default smoothing 0.3, which the
  // Trainer's ProgressCallback keeps): its latest update is the bar's own estimate of the current
  // step time, and a mean of successive averages would weigh the older steps again.
  if (collector == "hf-trainer" && steady.back().series > 0 &&
      steady.back().step_time_seconds > 0) {
    out.metrics.step_time_seconds = steady.back().step_time_seconds;
  }
  // The Trainer prints tokens/s per device only in its end-of-run summary
  // (include_tokens_per_second): a whole-run figure, start-up and evaluation included, read when
  // the log prints no other.
  if (collector == "hf-trainer" && out.metrics.tokens_per_second_per_device <= 0 &&
      parsed.summary.tokens_per_second_per_device > 0) {
    out.metrics.tokens_per_second_per_device = parsed.summary.tokens_per_second_per_device;
    out.warnings.push_back(
        "tokens/s per device is the Trainer's end-of-run train_tokens_per_second, an average "
        "over the whole run (start-up and evaluation included)");
  }
  for (const auto& s : steps) {
    const double t = StepTimeOf(s, ctx);
    if (t <= 0 || AfterPause(parsed, s.step)) continue;
    out.step_times.push_back(t);
    if (s.step <= last_warmup) ++out.warmup_intervals;
  }
  for (const auto& s : steady) {
    const double t = StepTimeOf(s, ctx);
    if (t > 0) out.steady_step_times.push_back(t);
  }
  const size_t before = out.step_times.size();
  out.step_times = LastStepTimes(std::move(out.step_times));
  const size_t cut = before - out.step_times.size();
  out.warmup_intervals = cut >= out.warmup_intervals ? 0 : out.warmup_intervals - cut;
  out.steady_step_times = LastStepTimes(std::move(out.steady_step_times));
  const bool counts_recompute = std::any_of(
      steady.begin(), steady.end(), [](const StepSample& s) { return s.tflops_counts_recompute; });
  internal::MarkSources(out.metrics, kSourceLog, &out.sources);
  const bool logged_time = out.metrics.step_time_seconds > 0;
  internal::DeriveMissing(ctx, steady.back().global_batch_size, counts_recompute, &out);
  // A step time derived from tokens/s is the mean of the steps' own times (total time / steps),
  // not the batch over the mean tokens/s, which a slow step would barely move.
  if (!logged_time && out.metrics.step_time_seconds > 0 && !out.steady_step_times.empty() &&
      out.steady_step_times.size() == steady.size()) {
    double sum = 0;
    for (double t : out.steady_step_times) sum += t;
    out.metrics.step_time_seconds = sum / static_cast<double>(out.steady_step_times.size());
  }
  return out;
}

// What the memory lines of a parsed log say (its step lines' memory included).
LoggedMemory MemoryOf(const ParsedLog& parsed) {
  LoggedMemory out;
  out.peak_gib = parsed.memory.peak_gib;
  out.avg_gib = parsed.memory.avg_count > 0 ? parsed.memory.avg_gib / parsed.memory.avg_count : 0;
  for (const auto& s : parsed.samples) out.peak_gib = std::max(out.peak_gib, s.memory_gib);
  if (!std::isfinite(out.peak_gib)) out.peak_gib = 0;
  if (!std::isfinite(out.avg_gib)) out.avg_gib = 0;
  return out;
}

// The optional "stepTimesSeconds" array of a termination message; empty when absent.
Result<std::vector<double>> MessageStepTimes(std::string_view message) {
  size_t brace = message.find('{');
  if (brace == std::string_view::npos) return std::vector<double>{};
  nlohmann::json j = nlohmann::json::parse(message.substr(brace), nullptr, false);
  if (!j.is_object() || !j.contains("stepTimesSeconds")) return std::vector<double>{};
  const nlohmann::json& a = j["stepTimesSeconds"];
  if (!a.is_array()) {
    return Status::Invalid("termination message: stepTimesSeconds: want an array of seconds");
  }
  std::vector<double> out;
  for (const auto& v : a) {
    if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > 1e7) {
      return Status::Invalid(
          "termination message: stepTimesSeconds: every entry must be a number of seconds in "
          "(0, 1e7]");
    }
    out.push_back(v.get<double>());
  }
  if (out.size() > kMaxStepTimes) {
    out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(kMaxStepTimes));
  }
  return out;
}

}  // namespace

const std::vector<std::string>& CollectorNames() {
  static const std::vector<std::string> kNames = {"megatron-lm", "megatron-bridge", "maxtext",
                                                  "torchtitan",  "hf-trainer",      "json"};
  return kNames;
}

std::vector<StepSample> SteadyState(const std::vector<StepSample>& samples) {
  std::vector<StepSample> nonzero;
  for (const auto& s : samples) {
    if (s.step != 0 || samples.size() == 1) nonzero.push_back(s);
  }
  if (nonzero.size() < 2) return nonzero.empty() ? samples : nonzero;
  size_t skip = std::max<size_t>(1, nonzero.size() / 5);
  return {nonzero.begin() + static_cast<std::ptrdiff_t>(skip), nonzero.end()};
}

Result<TrialMetrics> ParseTerminationMessage(std::string_view message) {
  size_t brace = message.find('{');
  if (brace == std::string_view::npos) return Status::NotFound("termination message: no JSON");
  nlohmann::json j = nlohmann::json::parse(message.substr(brace), nullptr, false);
  if (!j.is_object() || !j.contains("metrics")) {
    return Status::NotFound("termination message: no metrics object");
  }
  auto m = TrialMetrics::FromJson(j["metrics"]);
  if (!m.ok()) return m.status().WithPrefix("termination message");
  return m;
}

LogReading ReadLog(const std::string& collector, std::string_view log,
                   const CollectorContext& ctx) {
  auto parsed = internal::ParseLog(collector, log);
  if (!parsed.ok()) return {parsed.status(), {}};
  const LoggedMemory memory = MemoryOf(*parsed);
  return {CollectSteps(collector, *parsed, ctx), memory};
}

Result<CollectedMetrics> CollectLogWithStepTimes(const std::string& collector, std::string_view log,
                                                 const CollectorContext& ctx) {
  return ReadLog(collector, log, ctx).collected;
}

Result<CollectedMetrics> CollectTrialMetricsWithStepTimes(const std::string& collector,
                                                          std::string_view termination_message,
                                                          std::string_view log,
                                                          const CollectorContext& ctx) {
  auto from_message = ParseTerminationMessage(termination_message);
  auto listed = MessageStepTimes(termination_message);
  if (!from_message.ok() && from_message.status().code() != StatusCode::kNotFound) {
    return from_message.status();
  }
  if (from_message.ok() && !listed.ok()) return listed.status();
  // The log: the metrics' source when the message has none (a FallbackToLogsOnError message is
  // the log tail: parsed too when there is no full log), else the step times' when the message
  // lists none.
  Result<CollectedMetrics> from_log = Status::NotFound("log: not read");
  if (!from_message.ok() || listed->empty()) {
    from_log = CollectLogWithStepTimes(
        collector, !from_message.ok() && log.empty() ? termination_message : log, ctx);
  }
  if (!from_message.ok()) return from_log;
  CollectedMetrics out;
  out.metrics = *from_message;
  if (!listed->empty()) {
    // No step numbers: drop the first fifth (at least one of two or more) as SteadyState does.
    const size_t skip = listed->size() < 2 ? 0 : std::max<size_t>(1, listed->size() / 5);
    out.steady_step_times.assign(listed->begin() + static_cast<std::ptrdiff_t>(skip),
                                 listed->end());
    out.warmup_intervals = skip;
    out.step_times = std::move(*listed);
  } else if (from_log.ok()) {
    out.step_times = std::move(from_log->step_times);
    out.steady_step_times = std::move(from_log->steady_step_times);
    out.warmup_intervals = from_log->warmup_intervals;
    out.steps = from_log->steps;
  }
  internal::MarkSources(out.metrics, kSourceTerminationMessage, &out.sources);
  internal::DeriveMissing(ctx, 0, false, &out);
  return out;
}

LoggedMemory MemoryFromLog(const std::string& collector, std::string_view log) {
  auto parsed = internal::ParseLog(collector, log);
  return parsed.ok() ? MemoryOf(*parsed) : LoggedMemory{};
}

Result<TrialMetrics> CollectFromLog(const std::string& collector, std::string_view log,
                                    const CollectorContext& ctx) {
  auto collected = CollectLogWithStepTimes(collector, log, ctx);
  if (!collected.ok()) return collected.status();
  return collected->metrics;
}

Result<TrialMetrics> CollectTrialMetrics(const std::string& collector,
                                         std::string_view termination_message, std::string_view log,
                                         const CollectorContext& ctx) {
  auto collected = CollectTrialMetricsWithStepTimes(collector, termination_message, log, ctx);
  if (!collected.ok()) return collected.status();
  return collected->metrics;
}

}  // namespace paratune::collectors
