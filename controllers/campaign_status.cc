#include "controllers/campaign_status.h"

#include <algorithm>
#include <cmath>

#include "agents/engines/warm_start.h"
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

CampaignPhase CampaignPhaseOf(const TuningSession& session, std::string* message,
                              std::string* stop_reason) {
  std::string ignored_msg, ignored_reason;
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
    *stop_reason = "SpaceExhausted";
    *message = "no further configuration is worth a trial";
    return has_best ? CampaignPhase::kSucceeded : CampaignPhase::kFailed;
  }
  *stop_reason = StopReasonName(stop->reason);
  *message = stop->message;
  if (stop->reason == StopReason::kMaxFailedTrials) return CampaignPhase::kFailed;
  return has_best ? CampaignPhase::kSucceeded : CampaignPhase::kFailed;
}

json BuildCampaignStatus(const json& campaign, const TuningSession& session,
                         const std::string& now) {
  const json old = ObjectField(campaign, "status");
  const int64_t generation = campaign["metadata"].value("generation", int64_t{0});
  std::string message, reason;
  const CampaignPhase phase = CampaignPhaseOf(session, &message, &reason);
  const SessionSummary sum = session.Summary();
  json status = {{"observedGeneration", generation},
                 {"iteration", session.pool().LastIteration()},
                 {"message", message},
                 {"stopReason", reason},
                 {"trials",
                  {{"total", sum.counts.total},
                   {"running", OpenTrials(session)},
                   {"succeeded", sum.counts.succeeded},
                   {"failed", sum.counts.failed},
                   {"rejected", sum.counts.rejected},
                   {"anomalous", sum.counts.anomalous},
                   {"oomsAvoided", OomsAvoided(session, old)}}}};
  SetCampaignPhase(&status, phase);
  status["baseline"] = {
      {"trialName", sum.baseline ? sum.baseline->name : ""},
      {"objective", sum.baseline ? RoundTo(session.ObjectiveOf(*sum.baseline), 6) : 0.0}};
  if (auto pre = RejectedBaselineOf(session)) status["baseline"]["preflight"] = pre->ToJson();
  json best = {{"trialName", ""},
               {"objective", 0.0},
               {"config", json::object()},
               {"metrics", json::object()},
               {"improvementOverBaseline", 0.0}};
  if (sum.best) {
    best["trialName"] = sum.best->name;
    best["objective"] = RoundTo(session.ObjectiveOf(*sum.best), 6);
    best["config"] = ConfigToJson(sum.best->config);
    if (sum.best->metrics) best["metrics"] = sum.best->metrics->ToJson();
    best["improvementOverBaseline"] = RoundTo(sum.improvement_over_baseline, 6);
  }
  status["best"] = best;
  status["lastAnalysis"] = {{"bottleneck", sum.last_analysis.bottleneck},
                            {"healthState", sum.last_analysis.health_state},
                            {"summary", sum.last_analysis.summary}};
  status["conditions"] = Conditions(old.value("conditions", json::array()), session, phase, reason,
                                    message, generation, now);
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
