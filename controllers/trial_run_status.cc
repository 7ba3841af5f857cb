#include "controllers/trial_run_status.h"

#include <algorithm>
#include <array>
#include <limits>

#include "base/json_fields.h"

namespace paratune::controllers {

namespace {

using nlohmann::json;

constexpr std::array<TrialRunPhase, 6> kPhases = {
    TrialRunPhase::kPending, TrialRunPhase::kRunning,  TrialRunPhase::kSucceeded,
    TrialRunPhase::kFailed,  TrialRunPhase::kRejected, TrialRunPhase::kEarlyStopped};

// The status keys of contract section 5 this mapping types; everything else goes to `extra`.
constexpr const char* kPhase = "phase";
constexpr const char* kJobName = "jobName";
constexpr const char* kAcceleratorHours = "acceleratorHours";
constexpr const char* kNodeNames = "nodeNames";
constexpr const char* kStartTime = "startTime";
constexpr const char* kCompletionTime = "completionTime";
constexpr const char* kAdmissionTime = "admissionTime";
constexpr const char* kQueueSeconds = "queueSeconds";
constexpr const char* kEvictions = "evictions";
constexpr const char* kObjective = "objective";
constexpr const char* kMetrics = "metrics";
constexpr const char* kMetricsSource = "metricsSource";
constexpr const char* kMetricSources = "metricSources";
constexpr const char* kMetricsWarnings = "metricsWarnings";
constexpr const char* kEarlyStop = "earlyStop";
constexpr const char* kFailure = "failure";
constexpr const char* kAnomaly = "anomaly";
constexpr const char* kObserved = "observed";
constexpr const char* kConditions = "conditions";

constexpr std::array<const char*, 19> kKnownKeys = {
    kPhase,          kJobName,       kAcceleratorHours, kNodeNames,       kStartTime,
    kCompletionTime, kAdmissionTime, kQueueSeconds,     kEvictions,       kObjective,
    kMetrics,        kMetricsSource, kMetricSources,    kMetricsWarnings, kEarlyStop,
    kFailure,        kAnomaly,       kObserved,         kConditions};

bool IsKnownKey(const std::string& key) {
  return std::any_of(kKnownKeys.begin(), kKnownKeys.end(), [&](const char* k) { return key == k; });
}

std::string PhaseList() {
  std::string list;
  for (TrialRunPhase p : kPhases)
    list += (list.empty() ? "" : " | ") + std::string(TrialRunPhaseName(p));
  return list;
}

Status ReadPhase(const JsonFields& f, std::optional<TrialRunPhase>* out) {
  if (!f.Has(kPhase)) return Status::Ok();
  std::string name;
  PARATUNE_RETURN_IF_ERROR(f.ReadString(kPhase, &name));
  *out = ParseTrialRunPhase(name);
  if (!*out) {
    return Status::Invalid(f.Path(kPhase) + ": unknown TrialRun phase \"" + TextExcerpt(name) +
                           "\" (known: " + PhaseList() + ")");
  }
  return Status::Ok();
}

Status ReadOptional(const JsonFields& f, const char* key, std::optional<std::string>* out) {
  if (!f.Has(key)) return Status::Ok();
  std::string v;
  PARATUNE_RETURN_IF_ERROR(f.ReadString(key, &v));
  *out = std::move(v);
  return Status::Ok();
}

Status ReadOptional(const JsonFields& f, const char* key, std::optional<double>* out) {
  if (!f.Has(key)) return Status::Ok();
  double v = 0;
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble(key, std::numeric_limits<double>::lowest(),
                                        std::numeric_limits<double>::max(), &v));
  *out = v;
  return Status::Ok();
}

Status ReadOptional(const JsonFields& f, const char* key,
                    std::optional<std::vector<std::string>>* out) {
  if (!f.Has(key)) return Status::Ok();
  std::vector<std::string> v;
  PARATUNE_RETURN_IF_ERROR(f.ReadStringList(key, &v));
  *out = std::move(v);
  return Status::Ok();
}

// A sub-object (or, for conditions, a list) kept as JSON: only its type is checked.
Status ReadSubtree(const JsonFields& f, const char* key, json::value_t type, json* out) {
  if (!f.Has(key)) return Status::Ok();
  const json& v = f.Get(key);
  if (v.type() != type) {
    return Status::Invalid(f.Path(key) + ": must be " +
                           (type == json::value_t::array ? "a list" : "an object") + ", got " +
                           JsonExcerpt(v));
  }
  *out = v;
  return Status::Ok();
}

template <typename T>
void Put(json* out, const char* key, const std::optional<T>& value) {
  if (value) (*out)[key] = *value;
}

void Put(json* out, const char* key, const json& value) {
  if (!value.is_null()) (*out)[key] = value;
}

}  // namespace

std::string_view TrialRunPhaseName(TrialRunPhase phase) {
  switch (phase) {
    case TrialRunPhase::kPending:
      return "Pending";
    case TrialRunPhase::kRunning:
      return "Running";
    case TrialRunPhase::kSucceeded:
      return "Succeeded";
    case TrialRunPhase::kFailed:
      return "Failed";
    case TrialRunPhase::kRejected:
      return "Rejected";
    case TrialRunPhase::kEarlyStopped:
      return "EarlyStopped";
  }
  return "Pending";
}

std::optional<TrialRunPhase> ParseTrialRunPhase(std::string_view name) {
  for (TrialRunPhase p : kPhases) {
    if (name == TrialRunPhaseName(p)) return p;
  }
  return std::nullopt;
}

bool IsTerminal(TrialRunPhase phase) {
  return phase == TrialRunPhase::kSucceeded || phase == TrialRunPhase::kFailed ||
         phase == TrialRunPhase::kRejected || phase == TrialRunPhase::kEarlyStopped;
}

Result<TrialRunStatus> TrialRunStatusFromJson(const json& status) {
  TrialRunStatus out;
  if (status.is_null()) return out;
  if (!status.is_object()) {
    return Status::Invalid("status: must be an object, got " + JsonExcerpt(status));
  }
  const JsonFields f(status, "status");
  PARATUNE_RETURN_IF_ERROR(ReadPhase(f, &out.phase));
  PARATUNE_RETURN_IF_ERROR(ReadOptional(f, kJobName, &out.job_name));
  PARATUNE_RETURN_IF_ERROR(ReadOptional(f, kAcceleratorHours, &out.accelerator_hours));
  PARATUNE_RETURN_IF_ERROR(ReadOptional(f, kNodeNames, &out.node_names));
  PARATUNE_RETURN_IF_ERROR(ReadOptional(f, kStartTime, &out.start_time));
  PARATUNE_RETURN_IF_ERROR(ReadOptional(f, kCompletionTime, &out.completion_time));
  PARATUNE_RETURN_IF_ERROR(ReadOptional(f, kAdmissionTime, &out.admission_time));
  PARATUNE_RETURN_IF_ERROR(
      f.ReadOptionalInt(kQueueSeconds, 0, std::numeric_limits<int64_t>::max(), &out.queue_seconds));
  PARATUNE_RETURN_IF_ERROR(
      f.ReadOptionalInt(kEvictions, 0, std::numeric_limits<int64_t>::max(), &out.evictions));
  PARATUNE_RETURN_IF_ERROR(ReadOptional(f, kObjective, &out.objective));
  const auto object = json::value_t::object;
  PARATUNE_RETURN_IF_ERROR(ReadSubtree(f, kMetrics, object, &out.metrics));
  PARATUNE_RETURN_IF_ERROR(ReadSubtree(f, kMetricsSource, object, &out.metrics_source));
  PARATUNE_RETURN_IF_ERROR(ReadSubtree(f, kMetricSources, object, &out.metric_sources));
  PARATUNE_RETURN_IF_ERROR(ReadOptional(f, kMetricsWarnings, &out.metrics_warnings));
  PARATUNE_RETURN_IF_ERROR(ReadSubtree(f, kEarlyStop, object, &out.early_stop));
  PARATUNE_RETURN_IF_ERROR(ReadSubtree(f, kFailure, object, &out.failure));
  PARATUNE_RETURN_IF_ERROR(ReadSubtree(f, kAnomaly, object, &out.anomaly));
  PARATUNE_RETURN_IF_ERROR(ReadSubtree(f, kObserved, object, &out.observed));
  PARATUNE_RETURN_IF_ERROR(ReadSubtree(f, kConditions, json::value_t::array, &out.conditions));
  for (const auto& [key, value] : status.items()) {
    if (!IsKnownKey(key) || value.is_null()) out.extra[key] = value;
  }
  return out;
}

Result<TrialRunStatus> TrialRunStatusOf(const json& trial_run) {
  if (!trial_run.is_object() || !trial_run.contains("status")) return TrialRunStatus{};
  return TrialRunStatusFromJson(trial_run["status"]);
}

json ToJson(const TrialRunStatus& s) {
  json out = s.extra.is_object() ? s.extra : json::object();
  if (s.phase) out[kPhase] = std::string(TrialRunPhaseName(*s.phase));
  Put(&out, kJobName, s.job_name);
  Put(&out, kAcceleratorHours, s.accelerator_hours);
  Put(&out, kNodeNames, s.node_names);
  Put(&out, kStartTime, s.start_time);
  Put(&out, kCompletionTime, s.completion_time);
  Put(&out, kAdmissionTime, s.admission_time);
  Put(&out, kQueueSeconds, s.queue_seconds);
  Put(&out, kEvictions, s.evictions);
  Put(&out, kObjective, s.objective);
  Put(&out, kMetrics, s.metrics);
  Put(&out, kMetricsSource, s.metrics_source);
  Put(&out, kMetricSources, s.metric_sources);
  Put(&out, kMetricsWarnings, s.metrics_warnings);
  Put(&out, kEarlyStop, s.early_stop);
  Put(&out, kFailure, s.failure);
  Put(&out, kAnomaly, s.anomaly);
  Put(&out, kObserved, s.observed);
  Put(&out, kConditions, s.conditions);
  return out;
}

}  // namespace paratune::controllers
