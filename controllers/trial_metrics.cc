#include "controllers/trial_metrics.h"

#include <map>

#include "controllers/collectors/log_sources.h"
#include "controllers/trial_evidence.h"

namespace paratune::controllers {

namespace {

using nlohmann::json;

std::string NameOf(const json& pod) {
  const json& meta = pod.value("metadata", json::object());
  return meta.is_object() ? meta.value("name", "") : "";
}

std::string Describe(const json& pod) {
  const int64_t rank = PodRank(pod);
  return NameOf(pod) + (rank >= 0 ? " (rank " + std::to_string(rank) + ")" : "");
}

// Reads each pod's log at most once.
class LogCache {
 public:
  LogCache(const std::vector<json>& pods, const PodLogReader& read, size_t max_reads)
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
  const std::vector<json>& pods_;
  const PodLogReader& read_;
  size_t max_reads_;
  std::map<size_t, std::string> logs_;
};

// Fills a missing peak memory from the memory lines of the other pods' logs (within budget).
void CompleteMemory(const std::vector<json>& pods, const std::vector<size_t>& order,
                    const std::string& collector, size_t source, LogCache* logs,
                    TrialMetricsReading* out) {
  TrialMetrics& m = out->collected.metrics;
  if (m.peak_memory_gib > 0) return;
  for (size_t i : order) {
    if (i == source) continue;
    const std::string* log = logs->Get(i);
    if (log == nullptr) return;
    collectors::LoggedMemory mem = collectors::MemoryFromLog(collector, *log);
    if (mem.peak_gib <= 0) continue;
    m.peak_memory_gib = mem.peak_gib;
    if (m.avg_memory_gib <= 0) m.avg_memory_gib = mem.avg_gib;
    out->source.memory_pod = NameOf(pods[i]);
    return;
  }
}

}  // namespace

json MetricsSource::ToJson() const {
  json j = {{"pod", pod}, {"from", from}, {"convention", convention}};
  if (rank >= 0) j["rank"] = rank;
  if (!memory_pod.empty()) j["memoryPod"] = memory_pod;
  return j;
}

Result<TrialMetricsReading> ReadTrialMetrics(const std::vector<json>& pods,
                                             const std::string& collector,
                                             const collectors::CollectorContext& ctx,
                                             const PodLogReader& read_log, size_t max_log_reads,
                                             bool use_termination_messages) {
  const std::vector<size_t> order = PodReadOrder(pods, collector);
  LogCache logs(pods, read_log, max_log_reads);
  TrialMetricsReading out;
  out.source.convention = MetricsRankName(MetricsRankFor(collector));
  for (size_t i : use_termination_messages ? order : std::vector<size_t>{}) {
    const std::string message = TerminationMessageOf(pods[i]);
    auto parsed = collectors::ParseTerminationMessage(message);
    if (!parsed.ok() && parsed.status().code() == StatusCode::kNotFound) continue;
    if (!parsed.ok()) return parsed.status().WithPrefix("pod " + NameOf(pods[i]));
    // Step times: the message's own list, else the log of the rank that prints steps.
    const std::string* log = order.empty() ? nullptr : logs.Get(order.front());
    auto collected = collectors::CollectTrialMetricsWithStepTimes(collector, message,
                                                                  log != nullptr ? *log : "", ctx);
    if (!collected.ok()) return collected.status().WithPrefix("pod " + NameOf(pods[i]));
    out.collected = std::move(*collected);
    out.source.pod = NameOf(pods[i]);
    out.source.rank = PodRank(pods[i]);
    out.source.from = "terminationMessage";
    return out;
  }
  for (size_t i : order) {
    const std::string* log = logs.Get(i);
    if (log == nullptr) break;
    auto collected = collectors::CollectLogWithStepTimes(collector, *log, ctx);
    if (!collected.ok()) {
      if (collected.status().code() == StatusCode::kInvalidArgument) return collected.status();
      continue;
    }
    out.collected = std::move(*collected);
    out.source.pod = NameOf(pods[i]);
    out.source.rank = PodRank(pods[i]);
    out.source.from = "log";
    out.log = *log;
    CompleteMemory(pods, order, collector, i, &logs, &out);
    return out;
  }
  if (pods.empty()) return Status::NotFound("the trial has no pods");
  return Status::NotFound("no termination message with metrics, and no " + collector +
                          " step lines in the logs of " +
                          (logs.ReadNames().empty() ? "any pod" : logs.ReadNames()) +
                          " (the framework prints them on the " + out.source.convention + " rank)");
}

}  // namespace paratune::controllers
