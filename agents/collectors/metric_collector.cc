#include "agents/collectors/metric_collector.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>

namespace paratune::collectors {

namespace {

constexpr double kMiBPerGiB = 1024.0;
// Longer "steps" (115 days) are garbage, not measurements: dropped from step times.
constexpr double kMaxStepSeconds = 1e7;

// What a log says beyond its step lines.
struct LogMemory {
  double peak_gib = 0;
  double avg_gib = 0;
  int avg_count = 0;
};

struct ParsedLog {
  std::vector<StepSample> samples;
  LogMemory memory;
};

using LineParser = std::function<void(std::string_view, ParsedLog*)>;

// A logged count as an integer; values outside int64 (a garbled "iteration 1e300") give 0, which
// the collectors treat as "not printed" (converting them would be undefined behaviour).
int64_t ToCount(double v) { return (v > -9.0e18 && v < 9.0e18) ? static_cast<int64_t>(v) : 0; }

void ForEachLine(std::string_view log, const std::function<void(std::string_view)>& fn) {
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    fn(log.substr(start, end - start));
    start = end + 1;
  }
}

void AddMemory(double avg_gib, double peak_gib, LogMemory* m) {
  if (peak_gib > 0) m->peak_gib = std::max(m->peak_gib, peak_gib);
  if (avg_gib > 0) {
    m->avg_gib += avg_gib;
    ++m->avg_count;
  }
}

// ` iteration 10/ 100 | ... | elapsed time per iteration (ms): 9100.2 | throughput per GPU
// (TFLOP/s/GPU): 412.3 | ... | global batch size: 512 |` and the `[Rank 0] ... memory (MB)` line.
// Megatron-DeepSpeed prints the same line in seconds with its own FLOP figure: `elapsed time per
// iteration (s): 120.96 | ... | TFLOPs: 136.20 |` (bigscience-workshop/Megatron-DeepSpeed
// megatron/training.py training_log).
void ParseMegatronLine(std::string_view line, ParsedLog* out) {
  double v = 0;
  if (line.find("memory (MB)") != std::string_view::npos) {
    double alloc = 0, max_alloc = 0;
    NumberAfter(line, "| allocated:", &alloc);
    NumberAfter(line, "max allocated:", &max_alloc);
    AddMemory(alloc / kMiBPerGiB, max_alloc / kMiBPerGiB, &out->memory);
    return;
  }
  StepSample s;
  if (NumberAfter(line, "elapsed time per iteration (ms)", &v)) {
    s.step_time_seconds = v / 1000.0;
  } else if (NumberAfter(line, "elapsed time per iteration (s)", &v)) {
    s.step_time_seconds = v;
  } else {
    return;
  }
  if (NumberAfter(line, "iteration", &v)) s.step = ToCount(v);
  if (NumberAfter(line, "throughput per GPU (TFLOP/s/GPU)", &v) ||
      NumberAfter(line, "TFLOPs", &v)) {
    s.tflops_per_device = v;
  }
  if (NumberAfter(line, "global batch size", &v)) s.global_batch_size = ToCount(v);
  out->samples.push_back(s);
}

// `completed step: 5, seconds: 2.517, TFLOP/s/device: 120.634, Tokens/s/device: 3255.461, ...`
// and `Total memory size: 15.8 GB, ...`. MaxText's "GB" there is binary: its
// print_compiled_memory_stats divides bytes by 1024**3 (MaxText/max_utils.py,
// AI-Hypercomputer/maxtext@65cafbd), so the figure is GiB as printed.
void ParseMaxTextLine(std::string_view line, ParsedLog* out) {
  double v = 0;
  if (NumberAfter(line, "Total memory size", &v)) {
    AddMemory(v, v, &out->memory);
    return;
  }
  if (!NumberAfter(line, "completed step", &v)) return;
  StepSample s;
  s.step = ToCount(v);
  if (NumberAfter(line, "seconds", &v)) s.step_time_seconds = v;
  if (NumberAfter(line, "TFLOP/s/device", &v)) s.tflops_per_device = v;
  if (NumberAfter(line, "Tokens/s/device", &v)) s.tokens_per_second_per_device = v;
  out->samples.push_back(s);
}

// `step: 10  loss:  7.1234  memory: 61.23GiB(77.51%)  tps: 3,255  tflops: 412.30  mfu: 41.69%`
void ParseTorchtitanLine(std::string_view line, ParsedLog* out) {
  double v = 0;
  if (!NumberAfter(line, "step:", &v) || !NumberAfter(line, "tps:", &v)) return;
  StepSample s;
  NumberAfter(line, "step:", &v);
  s.step = ToCount(v);
  if (NumberAfter(line, "tps:", &v)) s.tokens_per_second_per_device = v;
  if (NumberAfter(line, "tflops:", &v)) s.tflops_per_device = v;
  if (NumberAfter(line, "mfu:", &v)) s.mfu = v / 100.0;
  if (NumberAfter(line, "memory:", &v)) s.memory_gib = v;
  out->samples.push_back(s);
}

// One JSON object per line with TrialMetrics keys and optionally "step".
void ParseJsonLine(std::string_view line, ParsedLog* out) {
  size_t brace = line.find('{');
  if (brace == std::string_view::npos) return;
  nlohmann::json j = nlohmann::json::parse(line.substr(brace), nullptr, false);
  if (!j.is_object()) return;
  auto num = [&j](const char* k) {
    return j.contains(k) && j[k].is_number() ? j[k].get<double>() : 0.0;
  };
  StepSample s;
  s.step = ToCount(num("step"));
  s.mfu = num("mfu");
  s.tflops_per_device = num("tflopsPerDevice");
  s.tokens_per_second_per_device = num("tokensPerSecondPerDevice");
  s.step_time_seconds = num("stepTimeSeconds");
  AddMemory(num("avgMemoryGiB"), num("peakMemoryGiB"), &out->memory);
  if (s.mfu > 0 || s.tflops_per_device > 0 || s.tokens_per_second_per_device > 0 ||
      s.step_time_seconds > 0) {
    out->samples.push_back(s);
  }
}

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

// Metrics go into status JSON, where inf and NaN would become null: a value the arithmetic
// pushed out of range (a garbled log) is dropped to 0 ("not measured").
void DropNonFinite(TrialMetrics* m) {
  for (double* v : {&m->mfu, &m->tflops_per_device, &m->tokens_per_second_per_device,
                    &m->step_time_seconds, &m->peak_memory_gib, &m->avg_memory_gib}) {
    if (!std::isfinite(*v)) *v = 0;
  }
}

// Fills metrics the log did not print from the ones it did and the campaign's shape.
void DeriveMissing(const CollectorContext& ctx, int64_t logged_gbs, TrialMetrics* m) {
  const double gbs =
      logged_gbs > 0 ? static_cast<double>(logged_gbs) : static_cast<double>(ctx.global_batch_size);
  const double tokens_per_device =
      ctx.devices > 0 ? gbs * static_cast<double>(ctx.seq_length) / ctx.devices : 0.0;
  if (m->tokens_per_second_per_device == 0 && m->step_time_seconds > 0) {
    m->tokens_per_second_per_device = tokens_per_device / m->step_time_seconds;
  }
  if (m->step_time_seconds == 0 && m->tokens_per_second_per_device > 0) {
    m->step_time_seconds = tokens_per_device / m->tokens_per_second_per_device;
  }
  if (ctx.peak_tflops_per_device > 0) {
    if (m->mfu == 0) m->mfu = m->tflops_per_device / ctx.peak_tflops_per_device;
    if (m->tflops_per_device == 0) m->tflops_per_device = m->mfu * ctx.peak_tflops_per_device;
  }
}

}  // namespace

const std::vector<std::string>& CollectorNames() {
  static const std::vector<std::string> kNames = {"megatron-lm", "maxtext", "torchtitan", "json"};
  return kNames;
}

bool NumberAfter(std::string_view line, std::string_view label, double* out) {
  size_t pos = line.find(label);
  if (pos == std::string_view::npos) return false;
  pos += label.size();
  while (pos < line.size() &&
         (line[pos] == ' ' || line[pos] == ':' || line[pos] == '=' || line[pos] == '\t')) {
    ++pos;
  }
  std::string digits;
  while (pos < line.size() && digits.size() < 64) {
    char c = line[pos];
    bool numeric = (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' ||
                   c == 'E' || c == ',';
    if (!numeric) break;
    if (c != ',') digits.push_back(c);
    ++pos;
  }
  if (digits.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(digits.c_str(), &end);
  if (end == digits.c_str() || !std::isfinite(v)) return false;
  *out = v;
  return true;
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

namespace {

Result<ParsedLog> ParseLines(const std::string& collector, std::string_view log) {
  LineParser parser;
  if (collector == "megatron-lm") parser = ParseMegatronLine;
  if (collector == "maxtext") parser = ParseMaxTextLine;
  if (collector == "torchtitan") parser = ParseTorchtitanLine;
  if (collector == "json") parser = ParseJsonLine;
  if (!parser) {
    return Status::Invalid("spec.metrics.collector: unknown collector \"" + collector +
                           "\" (known: megatron-lm, maxtext, torchtitan, json)");
  }
  ParsedLog parsed;
  ForEachLine(log, [&](std::string_view line) { parser(line, &parsed); });
  return parsed;
}

Result<ParsedLog> ParseLog(const std::string& collector, std::string_view log) {
  auto parsed = ParseLines(collector, log);
  if (!parsed.ok()) return parsed.status();
  if (parsed->samples.empty()) {
    return Status::NotFound("log: no " + collector + " step lines");
  }
  return parsed;
}

TrialMetrics MetricsOf(const ParsedLog& parsed, const std::vector<StepSample>& steady,
                       const CollectorContext& ctx) {
  TrialMetrics m;
  m.step_time_seconds = Mean(steady, &StepSample::step_time_seconds);
  m.tflops_per_device = Mean(steady, &StepSample::tflops_per_device);
  m.tokens_per_second_per_device = Mean(steady, &StepSample::tokens_per_second_per_device);
  m.mfu = Mean(steady, &StepSample::mfu);
  double step_memory = Mean(steady, &StepSample::memory_gib);
  for (const auto& s : parsed.samples)
    m.peak_memory_gib = std::max(m.peak_memory_gib, s.memory_gib);
  m.peak_memory_gib = std::max(m.peak_memory_gib, parsed.memory.peak_gib);
  m.avg_memory_gib =
      parsed.memory.avg_count > 0 ? parsed.memory.avg_gib / parsed.memory.avg_count : step_memory;
  DeriveMissing(ctx, steady.back().global_batch_size, &m);
  DropNonFinite(&m);
  return m;
}

// The time of each sample that has one (logged, or derived from tokens/s and the batch shape),
// the last kMaxStepTimes of them.
std::vector<double> StepTimesOf(const std::vector<StepSample>& samples,
                                const CollectorContext& ctx) {
  std::vector<double> out;
  for (const auto& s : samples) {
    double t = s.step_time_seconds;
    if (t <= 0 && s.tokens_per_second_per_device > 0 && ctx.devices > 0 && ctx.seq_length > 0) {
      const double gbs = s.global_batch_size > 0 ? static_cast<double>(s.global_batch_size)
                                                 : static_cast<double>(ctx.global_batch_size);
      t = gbs * static_cast<double>(ctx.seq_length) / static_cast<double>(ctx.devices) /
          s.tokens_per_second_per_device;
    }
    if (t > 0 && t <= kMaxStepSeconds) out.push_back(t);
  }
  if (out.size() > kMaxStepTimes) {
    out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(kMaxStepTimes));
  }
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
    if (!v.is_number() || !(v.get<double>() > 0) || v.get<double>() > kMaxStepSeconds) {
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

Result<CollectedMetrics> CollectLogWithStepTimes(const std::string& collector, std::string_view log,
                                                 const CollectorContext& ctx) {
  auto parsed = ParseLog(collector, log);
  if (!parsed.ok()) return parsed.status();
  std::vector<StepSample> steady = SteadyState(parsed->samples);
  CollectedMetrics out;
  out.metrics = MetricsOf(*parsed, steady, ctx);
  out.step_times = StepTimesOf(parsed->samples, ctx);
  out.steady_step_times = StepTimesOf(steady, ctx);
  return out;
}

LoggedMemory MemoryFromLog(const std::string& collector, std::string_view log) {
  LoggedMemory out;
  auto parsed = ParseLines(collector, log);
  if (!parsed.ok()) return out;
  out.peak_gib = parsed->memory.peak_gib;
  out.avg_gib =
      parsed->memory.avg_count > 0 ? parsed->memory.avg_gib / parsed->memory.avg_count : 0;
  for (const auto& s : parsed->samples) out.peak_gib = std::max(out.peak_gib, s.memory_gib);
  if (!std::isfinite(out.peak_gib)) out.peak_gib = 0;
  if (!std::isfinite(out.avg_gib)) out.avg_gib = 0;
  return out;
}

Result<TrialMetrics> CollectFromLog(const std::string& collector, std::string_view log,
                                    const CollectorContext& ctx) {
  auto collected = CollectLogWithStepTimes(collector, log, ctx);
  if (!collected.ok()) return collected.status();
  return collected->metrics;
}

Result<CollectedMetrics> CollectTrialMetricsWithStepTimes(const std::string& collector,
                                                          std::string_view termination_message,
                                                          std::string_view log,
                                                          const CollectorContext& ctx) {
  auto from_message = ParseTerminationMessage(termination_message);
  if (!from_message.ok() && from_message.status().code() != StatusCode::kNotFound) {
    return from_message.status();
  }
  if (!from_message.ok()) {
    // A FallbackToLogsOnError message is the log tail: parse it too when there is no full log.
    return CollectLogWithStepTimes(collector, log.empty() ? termination_message : log, ctx);
  }
  CollectedMetrics out;
  out.metrics = *from_message;
  auto listed = MessageStepTimes(termination_message);
  if (!listed.ok()) return listed.status();
  if (!listed->empty()) {
    // No step numbers: drop the first fifth (at least one of two or more) as SteadyState does.
    const size_t skip = listed->size() < 2 ? 0 : std::max<size_t>(1, listed->size() / 5);
    out.steady_step_times.assign(listed->begin() + static_cast<std::ptrdiff_t>(skip),
                                 listed->end());
    out.step_times = std::move(*listed);
    return out;
  }
  auto from_log = CollectLogWithStepTimes(collector, log, ctx);
  if (from_log.ok()) {
    out.step_times = std::move(from_log->step_times);
    out.steady_step_times = std::move(from_log->steady_step_times);
  }
  return out;
}

Result<TrialMetrics> CollectTrialMetrics(const std::string& collector,
                                         std::string_view termination_message, std::string_view log,
                                         const CollectorContext& ctx) {
  auto from_message = ParseTerminationMessage(termination_message);
  if (from_message.ok()) return from_message;
  if (from_message.status().code() != StatusCode::kNotFound) return from_message;
  // A FallbackToLogsOnError message is the log tail: parse it too when there is no full log.
  std::string_view text = log.empty() ? termination_message : log;
  return CollectFromLog(collector, text, ctx);
}

}  // namespace paratune::collectors
