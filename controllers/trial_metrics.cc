#include "controllers/trial_metrics.h"

#include <algorithm>
#include <map>
#include <optional>

#include "base/utf8.h"
#include "controllers/collectors/log_sources.h"

namespace paratune::controllers {

namespace {

using nlohmann::json;

std::string Describe(const TrialPod& pod) {
  return pod.name + (pod.rank >= 0 ? " (rank " + std::to_string(pod.rank) + ")" : "");
}

// Reads each pod's log at most once.
class LogCache {
 public:
  LogCache(const std::vector<TrialPod>& pods, const PodLogReader& read, size_t max_reads)
      : pods_(pods), read_(read), max_reads_(max_reads) {}
  // Null when the read budget is spent.
  const std::string* Get(size_t i) {
    auto it = logs_.find(i);
    if (it != logs_.end()) return &it->second;
    if (logs_.size() >= max_reads_) return nullptr;
    return &(logs_[i] = read_ ? read_(pods_[i]) : std::string());
  }
  std::string ReadNames() const {
    std::string out;
    for (const auto& [i, log] : logs_) out += (out.empty() ? "" : ", ") + Describe(pods_[i]);
    return out;
  }

 private:
  const std::vector<TrialPod>& pods_;
  const PodLogReader& read_;
  size_t max_reads_;
  std::map<size_t, std::string> logs_;
};

}  // namespace

json MetricsSource::ToJson() const {
  json j = {{"pod", pod}, {"from", from}, {"convention", convention}};
  if (rank >= 0) j["rank"] = rank;
  if (!memory_pod.empty()) j["memoryPod"] = memory_pod;
  return j;
}

Result<TrialMetricsReading> ReadTrialMetrics(const TrialPods& trial, const std::string& collector,
                                             const collectors::CollectorContext& ctx,
                                             const PodLogReader& read_log, size_t max_log_reads,
                                             bool use_termination_messages) {
  const std::vector<TrialPod>& pods = trial.pods;
  const MetricsRank convention = MetricsRankFor(collector);
  // An earlier run's pods (TrialPod::replaced) are not read: their logs are not this run's.
  std::vector<size_t> kept;
  for (size_t i = 0; i < pods.size(); ++i) {
    if (!pods[i].replaced) kept.push_back(i);
  }
  std::vector<int64_t> ranks;
  for (size_t i : kept) ranks.push_back(pods[i].rank);
  std::vector<size_t> order = PodReadOrder(ranks, convention);
  for (size_t& i : order) i = kept[i];
  LogCache logs(pods, read_log, max_log_reads);
  TrialMetricsReading out;
  out.source.convention = MetricsRankName(convention);
  for (size_t i : use_termination_messages ? order : std::vector<size_t>{}) {
    const TrialPod& pod = pods[i];
    auto parsed = collectors::ParseTerminationMessage(pod.termination_message);
    if (!parsed.ok() && parsed.status().code() == StatusCode::kNotFound) continue;
    // Step times: the message's own list, else the log of the rank that prints steps.
    const std::string* log = parsed.ok() ? logs.Get(order.front()) : nullptr;
    auto collected = parsed.ok()
                         ? collectors::CollectTrialMetricsWithStepTimes(
                               collector, pod.termination_message, log != nullptr ? *log : "", ctx)
                         : Result<collectors::CollectedMetrics>(parsed.status());
    if (!collected.ok()) return collected.status().WithPrefix("pod " + pod.name);
    out.collected = std::move(*collected);
    out.source.pod = pod.name;
    out.source.rank = pod.rank;
    out.source.from = "terminationMessage";
    return out;
  }
  // One pass over the logs in read order: the first with step lines is the source, and the
  // first other one with memory lines completes a source that has none.
  std::optional<size_t> source;
  std::optional<size_t> memory_pod;
  collectors::LoggedMemory memory;
  for (size_t i : order) {
    const std::string* log = logs.Get(i);
    if (log == nullptr) break;
    collectors::LogReading reading = collectors::ReadLog(collector, *log, ctx);
    if (!source && reading.collected.ok()) {
      source = i;
      out.collected = std::move(*reading.collected);
      out.log = *log;
    } else if (!source && reading.collected.status().code() == StatusCode::kInvalidArgument) {
      return reading.collected.status();
    } else if (!memory_pod && reading.memory.peak_gib > 0) {
      memory_pod = i;
      memory = reading.memory;
    }
    if (source && (out.collected.metrics.peak_memory_gib > 0 || memory_pod)) break;
  }
  if (source) {
    out.source.pod = pods[*source].name;
    out.source.rank = pods[*source].rank;
    out.source.from = "log";
    TrialMetrics& m = out.collected.metrics;
    if (m.peak_memory_gib <= 0 && memory_pod) {
      m.peak_memory_gib = memory.peak_gib;
      if (m.avg_memory_gib <= 0) m.avg_memory_gib = memory.avg_gib;
      out.source.memory_pod = pods[*memory_pod].name;
    }
    return out;
  }
  if (pods.empty()) return Status::NotFound("the trial has no pods");
  return Status::NotFound("no termination message with metrics, and no " + collector +
                          " step lines in the logs of " +
                          (logs.ReadNames().empty() ? "any pod" : logs.ReadNames()) +
                          " (the framework prints them on the " + out.source.convention + " rank)");
}

std::optional<std::vector<std::string>> BoundedMetricsWarnings(
    const std::vector<std::string>& warnings) {
  if (warnings.empty()) return std::nullopt;
  std::vector<std::string> out;
  for (size_t i = 0; i < warnings.size() && i < kMaxMetricsWarnings; ++i) {
    out.push_back(Utf8Head(warnings[i], kMaxMetricsWarningBytes, "..."));
  }
  return out;
}

}  // namespace paratune::controllers
