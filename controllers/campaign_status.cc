#include "controllers/campaign_status.h"

#include <algorithm>
#include <cmath>

#include "agents/predict/validator.h"
#include "agents/session/baseline_preflight.h"
#include "agents/session/past_optimization.h"
#include "base/json_fields.h"
#include "base/strings.h"
#include "controllers/conditions.h"
#include "controllers/job_renderer.h"
#include "controllers/knowledge_records.h"
#include "operator/kube_client.h"

namespace paratune::controllers {

namespace {

using nlohmann::json;

int64_t OpenTrials(const TuningSession& s) {
  int64_t n = 0;
  for (const auto& t : s.pool().trials()) {
    n += (t.phase == TrialPhase::kPending || t.phase == TrialPhase::kRunning) ? 1 : 0;
  }
  return n;
}

json Conditions(const json& old_conditions, const TuningSession& s, CampaignPhase phase,
                const std::string& reason, const std::string& message, int64_t generation,
                const std::string& now) {
  json c = old_conditions.is_array() ? old_conditions : json::array();
  const SessionSummary sum = s.Summary();
  const bool done = phase != CampaignPhase::kRunning;
  SetCondition(&c, kSpecValid, true, "Valid", "the spec is valid", generation, now);
  SetCondition(&c, kProgressing, !done, done ? reason : "TrialsRunning",
               done ? message
                    : std::to_string(OpenTrials(s)) + " trial(s) running, iteration " +
                          std::to_string(s.pool().LastIteration()),
               generation, now);
  const bool converged = done && sum.best.has_value() && phase == CampaignPhase::kSucceeded;
  SetCondition(&c, kConverged, converged, converged ? reason : "Searching",
               converged ? message : "the search goes on", generation, now);
  const int64_t max_failed = s.spec().budget.max_failed_trials;
  const bool degraded = phase == CampaignPhase::kFailed || sum.counts.failed * 2 >= max_failed;
  SetCondition(&c, kDegraded, degraded, degraded ? "TrialFailures" : "AsExpected",
               std::to_string(sum.counts.failed) + " trial(s) failed (limit " +
                   std::to_string(max_failed) + ")",
               generation, now);
  return c;
}

constexpr const char* kPhase = "phase";

constexpr CampaignPhase kCampaignPhases[] = {CampaignPhase::kPending, CampaignPhase::kRunning,
                                             CampaignPhase::kSucceeded, CampaignPhase::kFailed,
                                             CampaignPhase::kStopped};

// Candidates the pre-flight check refused as predicted to run out of memory (issue 38's
// per-campaign metrics read it as paratune_campaign_ooms_avoided_total). Never below what the
// status said: the pool store keeps only the latest rejections (message_pool_store_compaction).
int64_t OomsAvoided(const TuningSession& session, const json& old_status) {
  int64_t n = 0;
  for (const auto& r : session.pool().rejected()) n += IsMemoryRejection(r.reason) ? 1 : 0;
  const json& trials = old_status.value("trials", json::object());
  const json& old = trials.is_object() ? trials.value("oomsAvoided", json()) : json();
  return old.is_number_integer() ? std::max(n, old.get<int64_t>()) : n;
}

}  // namespace

std::string_view CampaignPhaseName(CampaignPhase phase) {
  switch (phase) {
    case CampaignPhase::kPending:
      return "Pending";
    case CampaignPhase::kRunning:
      return "Running";
    case CampaignPhase::kSucceeded:
      return "Succeeded";
    case CampaignPhase::kFailed:
      return "Failed";
    case CampaignPhase::kStopped:
      return "Stopped";
  }
  return "Pending";
}

std::optional<CampaignPhase> ParseCampaignPhase(std::string_view name) {
  for (CampaignPhase p : kCampaignPhases) {
    if (name == CampaignPhaseName(p)) return p;
  }
  return std::nullopt;
}

std::optional<CampaignPhase> CampaignPhaseIn(const json& status) {
  if (!status.is_object()) return std::nullopt;
  auto it = status.find(kPhase);
  if (it == status.end() || !it->is_string()) return std::nullopt;
  return ParseCampaignPhase(it->get<std::string>());
}

void SetCampaignPhase(json* status, CampaignPhase phase) {
  if (!status->is_object()) *status = json::object();
  (*status)[kPhase] = std::string(CampaignPhaseName(phase));
}

namespace {

constexpr CampaignStopReason kCampaignStopReasons[] = {
    CampaignStopReason::kBudgetExhausted,          CampaignStopReason::kTargetReached,
    CampaignStopReason::kMaxFailedTrials,          CampaignStopReason::kSearchConverged,
    CampaignStopReason::kSpaceExhausted,           CampaignStopReason::kClusterCannotRun,
    CampaignStopReason::kAcceleratorHoursExhausted};

// Reads `j[key]` into `*out` when it is of the type; false otherwise (absent or another shape).
bool ReadNumber(const json& j, const char* key, double* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return false;
  *out = it->get<double>();
  return true;
}
bool ReadString(const json& j, const char* key, std::string* out) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_string()) return false;
  *out = it->get<std::string>();
  return true;
}

std::optional<CampaignTrialCounts> TrialCountsFromJson(const json& j) {
  if (!j.is_object()) return std::nullopt;
  CampaignTrialCounts t;
  for (const auto& [key, value] : j.items()) {
    if (key == "earlyStopped" && value.is_number_integer()) {
      t.early_stopped = value.get<int64_t>();
      continue;
    }
    if (!value.is_number_integer()) return std::nullopt;
    int64_t* field = key == "total"         ? &t.total
                     : key == "running"     ? &t.running
                     : key == "succeeded"   ? &t.succeeded
                     : key == "failed"      ? &t.failed
                     : key == "rejected"    ? &t.rejected
                     : key == "anomalous"   ? &t.anomalous
                     : key == "oomsAvoided" ? &t.ooms_avoided
                                            : nullptr;
    if (field == nullptr) return std::nullopt;
    *field = value.get<int64_t>();
  }
  return t;
}

json ToJson(const CampaignTrialCounts& t) {
  json j = {{"total", t.total},
            {"running", t.running},
            {"succeeded", t.succeeded},
            {"failed", t.failed},
            {"rejected", t.rejected},
            {"anomalous", t.anomalous},
            {"oomsAvoided", t.ooms_avoided}};
  if (t.early_stopped) j["earlyStopped"] = *t.early_stopped;
  return j;
}

// Only the members each section names, of their types; anything else leaves it in `other`.
bool OnlyKeys(const json& j, std::initializer_list<const char*> keys) {
  if (!j.is_object()) return false;
  for (const auto& [key, value] : j.items()) {
    if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; })) {
      return false;
    }
  }
  return true;
}

std::optional<CampaignBaseline> BaselineFromJson(const json& j) {
  if (!OnlyKeys(j, {"trialName", "objective", "preflight"})) return std::nullopt;
  CampaignBaseline b;
  if (j.contains("trialName") && !ReadString(j, "trialName", &b.trial_name)) return std::nullopt;
  if (j.contains("objective") && !ReadNumber(j, "objective", &b.objective)) return std::nullopt;
  if (j.contains("preflight")) b.preflight = j["preflight"];
  return b;
}

std::optional<CampaignBest> BestFromJson(const json& j) {
  if (!OnlyKeys(j, {"trialName", "objective", "config", "metrics", "improvementOverBaseline"})) {
    return std::nullopt;
  }
  CampaignBest b;
  if (j.contains("trialName") && !ReadString(j, "trialName", &b.trial_name)) return std::nullopt;
  if (j.contains("objective") && !ReadNumber(j, "objective", &b.objective)) return std::nullopt;
  if (j.contains("improvementOverBaseline") &&
      !ReadNumber(j, "improvementOverBaseline", &b.improvement_over_baseline)) {
    return std::nullopt;
  }
  if (j.contains("config")) b.config = j["config"];
  if (j.contains("metrics")) b.metrics = j["metrics"];
  return b;
}

std::optional<CampaignAnalysis> AnalysisFromJson(const json& j) {
  if (!OnlyKeys(j, {"bottleneck", "healthState", "summary"})) return std::nullopt;
  CampaignAnalysis a;
  for (const auto& [key, field] :
       {std::pair<const char*, std::string*>{"bottleneck", &a.bottleneck},
        {"healthState", &a.health_state},
        {"summary", &a.summary}}) {
    if (j.contains(key) && !ReadString(j, key, field)) return std::nullopt;
  }
  return a;
}

std::optional<CampaignAcceleratorHours> AcceleratorHoursFromJson(const json& j) {
  if (!OnlyKeys(j, {"total", "perTrial", "savedByEarlyStopping", "max"})) return std::nullopt;
  CampaignAcceleratorHours h;
  if (j.contains("total") && !ReadNumber(j, "total", &h.total)) return std::nullopt;
  if (j.contains("savedByEarlyStopping") &&
      !ReadNumber(j, "savedByEarlyStopping", &h.saved_by_early_stopping)) {
    return std::nullopt;
  }
  double max = 0;
  if (j.contains("max")) {
    if (!ReadNumber(j, "max", &max)) return std::nullopt;
    h.max = max;
  }
  if (j.contains("perTrial")) {
    if (!j["perTrial"].is_object()) return std::nullopt;
    for (const auto& [name, v] : j["perTrial"].items()) {
      if (!v.is_number()) return std::nullopt;
      h.per_trial[name] = v.get<double>();
    }
  }
  return h;
}

}  // namespace

std::string_view CampaignStopReasonName(CampaignStopReason reason) {
  switch (reason) {
    case CampaignStopReason::kBudgetExhausted:
      return "BudgetExhausted";
    case CampaignStopReason::kTargetReached:
      return "TargetReached";
    case CampaignStopReason::kMaxFailedTrials:
      return "MaxFailedTrials";
    case CampaignStopReason::kSearchConverged:
      return "Converged";
    case CampaignStopReason::kSpaceExhausted:
      return "SpaceExhausted";
    case CampaignStopReason::kClusterCannotRun:
      return "ClusterCannotRun";
    case CampaignStopReason::kAcceleratorHoursExhausted:
      return "AcceleratorHoursExhausted";
  }
  return "BudgetExhausted";
}

std::optional<CampaignStopReason> ParseCampaignStopReason(std::string_view name) {
  for (CampaignStopReason r : kCampaignStopReasons) {
    if (name == CampaignStopReasonName(r)) return r;
  }
  return std::nullopt;
}

CampaignStopReason CampaignStopReasonOf(StopReason reason) {
  switch (reason) {
    case StopReason::kBudgetExhausted:
      return CampaignStopReason::kBudgetExhausted;
    case StopReason::kTargetReached:
      return CampaignStopReason::kTargetReached;
    case StopReason::kMaxFailedTrials:
      return CampaignStopReason::kMaxFailedTrials;
    case StopReason::kConverged:
      return CampaignStopReason::kSearchConverged;
    case StopReason::kSpaceExhausted:
      return CampaignStopReason::kSpaceExhausted;
    case StopReason::kClusterCannotRun:
      return CampaignStopReason::kClusterCannotRun;
  }
  return CampaignStopReason::kBudgetExhausted;
}

CampaignStatus CampaignStatus::FromJson(const json& status) {
  CampaignStatus s;
  if (!status.is_object()) return s;
  for (const auto& [key, value] : status.items()) {
    bool read = true;
    if (key == kPhase) {
      s.phase = value.is_string() ? ParseCampaignPhase(value.get<std::string>()) : std::nullopt;
      read = s.phase.has_value();
    } else if (key == "observedGeneration") {
      read = value.is_number_integer();
      if (read) s.observed_generation = value.get<int64_t>();
    } else if (key == "iteration") {
      read = value.is_number_integer();
      if (read) s.iteration = value.get<int64_t>();
    } else if (key == "message") {
      read = value.is_string();
      if (read) s.message = value.get<std::string>();
    } else if (key == "stopReason") {
      s.stop_reason =
          value.is_string() ? ParseCampaignStopReason(value.get<std::string>()) : std::nullopt;
      read = s.stop_reason.has_value();
    } else if (key == "trials") {
      s.trials = TrialCountsFromJson(value);
      read = s.trials.has_value();
    } else if (key == "baseline") {
      s.baseline = BaselineFromJson(value);
      read = s.baseline.has_value();
    } else if (key == "best") {
      s.best = BestFromJson(value);
      read = s.best.has_value();
    } else if (key == "lastAnalysis") {
      s.last_analysis = AnalysisFromJson(value);
      read = s.last_analysis.has_value();
    } else if (key == "acceleratorHours") {
      s.accelerator_hours = AcceleratorHoursFromJson(value);
      read = s.accelerator_hours.has_value();
    } else if (key == "nodeHealth") {
      s.node_health = value;
    } else if (key == "remediations") {
      s.remediations = value;
    } else if (key == "conditions") {
      s.conditions = value;
    } else {
      read = false;
    }
    if (!read) s.other[key] = value;
  }
  return s;
}

json CampaignStatus::ToJson() const {
  json j = other.is_object() ? other : json::object();
  if (phase) j[kPhase] = std::string(CampaignPhaseName(*phase));
  if (observed_generation) j["observedGeneration"] = *observed_generation;
  if (iteration) j["iteration"] = *iteration;
  if (!message.empty()) j["message"] = message;
  if (stop_reason) j["stopReason"] = std::string(CampaignStopReasonName(*stop_reason));
  if (trials) j["trials"] = paratune::controllers::ToJson(*trials);
  if (baseline) {
    j["baseline"] = {{"trialName", baseline->trial_name}, {"objective", baseline->objective}};
    if (!baseline->preflight.is_null()) j["baseline"]["preflight"] = baseline->preflight;
  }
  if (best) {
    j["best"] = {{"trialName", best->trial_name},
                 {"objective", best->objective},
                 {"config", best->config},
                 {"metrics", best->metrics},
                 {"improvementOverBaseline", best->improvement_over_baseline}};
  }
  if (last_analysis) {
    j["lastAnalysis"] = {{"bottleneck", last_analysis->bottleneck},
                         {"healthState", last_analysis->health_state},
                         {"summary", last_analysis->summary}};
  }
  if (accelerator_hours) {
    json& ah = j["acceleratorHours"];
    ah = {{"total", accelerator_hours->total},
          {"perTrial", accelerator_hours->per_trial},
          {"savedByEarlyStopping", accelerator_hours->saved_by_early_stopping}};
    if (accelerator_hours->max) ah["max"] = *accelerator_hours->max;
  }
  if (!node_health.is_null()) j["nodeHealth"] = node_health;
  if (!remediations.is_null()) j["remediations"] = remediations;
  if (!conditions.is_null()) j["conditions"] = conditions;
  DropEmptyStrings(&j);
  return j;
}

bool CampaignStatus::Apply(const CampaignCondition& c, int64_t generation, const std::string& now) {
  return SetCondition(&conditions, c.type, c.status, c.reason, c.message, generation, now);
}

void CampaignStatus::Apply(const CampaignStop& stop, int64_t generation, const std::string& now) {
  const bool has_best = HasBest();
  phase = has_best ? CampaignPhase::kSucceeded : CampaignPhase::kFailed;
  stop_reason = stop.reason;
  message = stop.message;
  const std::string reason(CampaignStopReasonName(stop.reason));
  Apply(CampaignCondition{kProgressing, false, reason, stop.message}, generation, now);
  if (has_best) Apply(CampaignCondition{kConverged, true, reason, stop.message}, generation, now);
}

void CampaignStatus::Apply(const AcceleratorHoursDecision& d, int64_t generation,
                           const std::string& now) {
  accelerator_hours = d.hours;
  if (trials) trials->early_stopped = d.early_stopped;
  if (d.stop) Apply(*d.stop, generation, now);
}

void CampaignStatus::Apply(const NodeHealthDecision& d, int64_t generation,
                           const std::string& now) {
  node_health = d.node_health;
  remediations = d.remediations;
  Apply(d.ledger, generation, now);
}

bool CampaignStatus::ApplyInvalidSpec(const std::string& why, int64_t generation,
                                      const std::string& now) {
  bool changed = Apply(CampaignCondition{kSpecValid, false, "InvalidSpec", why}, generation, now);
  changed |= Apply(
      CampaignCondition{kProgressing, false, "InvalidSpec", "nothing runs until the spec is fixed"},
      generation, now);
  phase = CampaignPhase::kFailed;
  observed_generation = generation;
  message = why;
  return changed;
}

CampaignPhase CampaignPhaseOf(const TuningSession& session, std::string* message,
                              std::optional<CampaignStopReason>* stop_reason) {
  std::string ignored_msg;
  std::optional<CampaignStopReason> ignored_reason;
  if (message == nullptr) message = &ignored_msg;
  if (stop_reason == nullptr) stop_reason = &ignored_reason;
  const int64_t open = OpenTrials(session);
  auto stop = session.ShouldStop();
  if (open > 0) {
    *message = std::to_string(open) + " trial(s) running";
    return CampaignPhase::kRunning;
  }
  const bool has_best = session.Summary().best.has_value();
  if (!stop) {
    if (session.pool().trials().empty()) {
      *message = "waiting for the first proposal";
      return CampaignPhase::kRunning;
    }
    *stop_reason = CampaignStopReason::kSpaceExhausted;
    *message = "no further configuration is worth a trial";
    return has_best ? CampaignPhase::kSucceeded : CampaignPhase::kFailed;
  }
  *stop_reason = CampaignStopReasonOf(stop->reason);
  *message = stop->message;
  if (stop->reason == StopReason::kMaxFailedTrials) return CampaignPhase::kFailed;
  return has_best ? CampaignPhase::kSucceeded : CampaignPhase::kFailed;
}

CampaignStatus BuildCampaignStatus(const json& campaign, const TuningSession& session,
                                   const std::string& now) {
  const json old = ObjectField(campaign, "status");
  const int64_t generation = campaign["metadata"].value("generation", int64_t{0});
  CampaignStatus status;
  const CampaignPhase phase = CampaignPhaseOf(session, &status.message, &status.stop_reason);
  const SessionSummary sum = session.Summary();
  status.phase = phase;
  status.observed_generation = generation;
  status.iteration = session.pool().LastIteration();
  CampaignTrialCounts& trials = status.trials.emplace();
  trials.total = sum.counts.total;
  trials.running = OpenTrials(session);
  trials.succeeded = sum.counts.succeeded;
  trials.failed = sum.counts.failed;
  trials.rejected = sum.counts.rejected;
  trials.anomalous = sum.counts.anomalous;
  trials.ooms_avoided = OomsAvoided(session, old);
  CampaignBaseline& baseline = status.baseline.emplace();
  if (sum.baseline) {
    baseline.trial_name = sum.baseline->name;
    baseline.objective = RoundTo(session.ObjectiveOf(*sum.baseline), 6);
  }
  if (auto pre = session.RejectedBaseline()) baseline.preflight = pre->ToJson();
  CampaignBest& best = status.best.emplace();
  if (sum.best) {
    best.trial_name = sum.best->name;
    best.objective = RoundTo(session.ObjectiveOf(*sum.best), 6);
    best.config = ConfigToJson(sum.best->config);
    if (sum.best->metrics) best.metrics = sum.best->metrics->ToJson();
    best.improvement_over_baseline = RoundTo(sum.improvement_over_baseline, 6);
  }
  status.last_analysis = CampaignAnalysis{
      sum.last_analysis.bottleneck, sum.last_analysis.health_state, sum.last_analysis.summary};
  const std::string reason =
      status.stop_reason ? std::string(CampaignStopReasonName(*status.stop_reason)) : "";
  status.conditions = Conditions(old.value("conditions", json::array()), session, phase, reason,
                                 status.message, generation, now);
  return status;
}

json BestConfigMap(const json& campaign, const CampaignSpec& spec, const TuningSession& session,
                   const SessionSummary& summary) {
  json data = json::object();
  for (const auto& [k, v] : summary.best->config) data[k] = v.ToString();
  data["config.json"] = ConfigToJson(summary.best->config).dump(2);
  if (summary.best->metrics) data["metrics.json"] = summary.best->metrics->ToJson().dump(2);
  data["trial"] = summary.best->name;
  data["objectiveMetric"] = ObjectiveMetricName(spec.objective.metric);
  data["objective"] = std::to_string(RoundTo(session.ObjectiveOf(*summary.best), 6));
  data["improvementOverBaseline"] = std::to_string(RoundTo(summary.improvement_over_baseline, 6));
  // Later campaigns in the namespace warm-start from it (controllers/knowledge_records.h).
  const json past = PastOptimizationOfSession(session);
  if (!past.is_null()) data[kPastOptimizationKey] = past.dump(2);
  json meta = {{"name", spec.output_config_map},
               {"namespace", kube::NamespaceOf(campaign)},
               {"labels", {{kCampaignLabel, kube::NameOf(campaign)}}},
               {"annotations", {{kOutputOfAnnotation, kube::NameOf(campaign)}}}};
  if (spec.output_delete_with_campaign) {
    meta["ownerReferences"] = json::array({kube::MakeControllerRef(campaign)});
  }
  return {{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", meta}, {"data", data}};
}

bool IsOutputOf(const json& config_map, const json& campaign) {
  const json& meta = ObjectField(config_map, "metadata");
  const json& annotations = ObjectField(meta, "annotations");
  const json& of = annotations.value(kOutputOfAnnotation, json());
  if (of.is_string() && of.get<std::string>() == kube::NameOf(campaign)) return true;
  const json& refs = meta.value("ownerReferences", json::array());
  if (!refs.is_array()) return false;
  for (const auto& r : refs) {
    if (r.is_object() && r.value("uid", "") == kube::UidOf(campaign) &&
        r.value("controller", false)) {
      return true;  // published by an older operator, which always set the owner
    }
  }
  return false;
}

std::string DescribeOwner(const json& config_map) {
  const json& meta = ObjectField(config_map, "metadata");
  const json& of = ObjectField(meta, "annotations").value(kOutputOfAnnotation, json());
  if (of.is_string()) return "TuningCampaign " + of.get<std::string>();
  const json& refs = meta.value("ownerReferences", json::array());
  if (refs.is_array()) {
    for (const auto& r : refs) {
      if (r.is_object()) return r.value("kind", "?") + " " + r.value("name", "?");
    }
  }
  const json& labels = ObjectField(meta, "labels");
  for (const char* key : {"app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
                          "argocd.argoproj.io/instance", "kustomize.toolkit.fluxcd.io/name"}) {
    const json& v = labels.value(key, json());
    if (v.is_string()) return std::string(key) + "=" + v.get<std::string>();
  }
  const json& fields = meta.value("managedFields", json::array());
  if (fields.is_array() && !fields.empty() && fields[0].is_object()) {
    return "field manager " + fields[0].value("manager", "?");
  }
  return "someone else (it has no " + std::string(kOutputOfAnnotation) + " annotation)";
}

}  // namespace paratune::controllers
