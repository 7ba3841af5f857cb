// Reading a finished (or running) trial's metrics from the pods the framework logs on (issue 13,
// item 1): a termination message from any pod wins; otherwise the logs are read in
// PodReadOrder (the framework's metrics rank first, then every other pod) until one holds step
// lines the campaign's collector recognises. Megatron-LM prints memory on data-parallel rank 0
// and throughput on the last rank, so a log with step lines but no memory line is completed
// from the memory lines of the first other log that has them, in the same pass over the logs.
// Reads the typed pods (trial_evidence.h), never their JSON. Log I/O is injected; thread-safe
// when the reader is.
#ifndef PARATUNE_CONTROLLERS_TRIAL_METRICS_H_
#define PARATUNE_CONTROLLERS_TRIAL_METRICS_H_

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agents/collectors/metric_collector.h"
#include "base/status.h"
#include "controllers/trial_evidence.h"

namespace paratune::controllers {

// Where the metrics were read: TrialRun status.metricsSource.
struct MetricsSource {
  std::string pod;
  int64_t rank = -1;       // the pod's completion index, -1 for a single-pod Job
  std::string from;        // "terminationMessage" or "log"
  std::string convention;  // the collector's metrics rank: "first", "last" or "any"
  std::string memory_pod;  // the pod whose memory lines were used, when another one

  nlohmann::json ToJson() const;
};

struct TrialMetricsReading {
  collectors::CollectedMetrics collected;
  MetricsSource source;
  std::string log;  // the log of the source pod ("" when not read)
};

// Returns the (bounded) log of one pod; "" when it cannot be read.
using PodLogReader = std::function<std::string(const TrialPod& pod)>;

// Reads the metrics. `max_log_reads` bounds the number of pod logs read (the framework's pod
// first). kNotFound (naming the pods whose logs were read) when no source has metrics;
// kInvalidArgument when a termination message carries a malformed "metrics" object.
// `use_termination_messages` false: logs only (a running trial has none).
Result<TrialMetricsReading> ReadTrialMetrics(const TrialPods& pods, const std::string& collector,
                                             const collectors::CollectorContext& ctx,
                                             const PodLogReader& read_log, size_t max_log_reads,
                                             bool use_termination_messages = true);

// What the collector corrected or dropped while reading (CollectedMetrics::warnings) as a
// TrialRun keeps it: the first kMaxMetricsWarnings, each at most kMaxMetricsWarningBytes (UTF-8
// safe, "..." where cut); nullopt when there is none. The same lines are the MetricsRead Events.
inline constexpr size_t kMaxMetricsWarnings = 4;
inline constexpr size_t kMaxMetricsWarningBytes = 1000;
std::optional<std::vector<std::string>> BoundedMetricsWarnings(
    const std::vector<std::string>& warnings);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_TRIAL_METRICS_H_
