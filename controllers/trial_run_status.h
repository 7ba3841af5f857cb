// The TrialRun status (contract section 5) as a typed struct with one JSON mapping. Every
// reader and writer of a TrialRun's status in controllers/ goes through TrialRunStatusFromJson
// and ToJson: build the typed status, change typed fields, serialize once. The wire format is
// the contract's; this mapping does not change it. Pure functions; thread-safe.
#ifndef PARATUNE_CONTROLLERS_TRIAL_RUN_STATUS_H_
#define PARATUNE_CONTROLLERS_TRIAL_RUN_STATUS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace paratune::controllers {

// status.phase of a TrialRun (the CRD's enum). Named TrialRunPhase, not TrialPhase: the agent
// loop's paratune::TrialPhase (agents/core/results.h, the message pool's trial record) is a
// different set (no EarlyStopped) and is used next to this one in the campaign reconciler.
enum class TrialRunPhase { kPending, kRunning, kSucceeded, kFailed, kRejected, kEarlyStopped };

// The wire name ("Pending", ..., "EarlyStopped").
std::string_view TrialRunPhaseName(TrialRunPhase phase);
// The phase of a wire name; nullopt for any other string (exact, case-sensitive).
std::optional<TrialRunPhase> ParseTrialRunPhase(std::string_view name);
// True for the phases a trial never leaves: Succeeded, Failed, Rejected, EarlyStopped.
bool IsTerminal(TrialRunPhase phase);

// The status of one TrialRun. Scalars are typed; an absent optional is a key absent on the
// wire. The sub-objects stay JSON as their writers' own types serialize them (null: absent),
// because each already has one mapping of its own or is a free-form list.
struct TrialRunStatus {
  // Absent until the trial reconciler first writes the status (a TrialRun just created by the
  // campaign reconciler): neither open nor terminal; readers treat it as not started.
  std::optional<TrialRunPhase> phase;
  std::optional<std::string> job_name;
  std::optional<double> accelerator_hours;  // devices x wall time of its pods, set when it ends
  std::optional<std::vector<std::string>> node_names;
  std::optional<std::string> start_time;       // RFC 3339, earliest pod start
  std::optional<std::string> completion_time;  // RFC 3339
  std::optional<std::string> admission_time;   // RFC 3339, queued trials: Kueue's admission
  std::optional<int64_t> queue_seconds;        // queued trials: seconds suspended, >= 0
  // Queued trials: times the workload was suspended again after an admission (Kueue evicts an
  // admitted workload that way: preemption, PodsReadyTimeout, ...); absent: never.
  std::optional<int64_t> evictions;
  std::optional<double> objective;  // the campaign's objective metric, measured

  nlohmann::json metrics;         // TrialMetrics::ToJson (agents/core/results.h)
  nlohmann::json metrics_source;  // MetricsSource::ToJson (trial_metrics.h)
  // {metric: "log" | "termination-message" | "derived"} (CollectedMetrics::sources)
  nlohmann::json metric_sources;
  // What the collector corrected or dropped while reading the metrics (CollectedMetrics::
  // warnings, the first kMaxMetricsWarnings, each bounded): kept with the trial, where the
  // MetricsRead Events that say the same expire.
  std::optional<std::vector<std::string>> metrics_warnings;
  nlohmann::json early_stop;  // EarlyStopDecision::ToJson + bestTrial (early_stopping.h)
  nlohmann::json failure;     // FailureDiagnosis::ToJson (evidence bounded)
  nlohmann::json anomaly;     // health::Anomaly::ToJson
  nlohmann::json observed;    // {podReason, exitCode, terminationMessage, logTail, events}
  nlohmann::json conditions;  // metav1.Condition list (conditions.h)

  // Every key this struct does not know (and a known key whose value is null), written back
  // unchanged by ToJson: a round trip never loses a field another writer put there.
  nlohmann::json extra = nlohmann::json::object();
};

// Reads a status object. Null reads as the empty status (no phase). Errors name the field:
// "status.phase: unknown TrialRun phase ..." for a phase outside the enum, "status.<key>:
// must be ..." for a known key of the wrong JSON type, "status: must be an object" otherwise.
Result<TrialRunStatus> TrialRunStatusFromJson(const nlohmann::json& status);
// TrialRunStatusFromJson of a TrialRun object's "status" (absent: the empty status).
Result<TrialRunStatus> TrialRunStatusOf(const nlohmann::json& trial_run);

// The wire form: `extra`, then every present typed field and non-null sub-object over it.
// Keys and values are exactly what the controllers wrote key by key before this type existed.
nlohmann::json ToJson(const TrialRunStatus& status);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_TRIAL_RUN_STATUS_H_
