// The TuningCampaign status (contract section 2) and the published best-configuration
// ConfigMap, computed from the agent loop's state. Pure functions; thread-safe.
#ifndef PARATUNE_CONTROLLERS_CAMPAIGN_STATUS_H_
#define PARATUNE_CONTROLLERS_CAMPAIGN_STATUS_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "agents/session/tuning_session.h"

namespace paratune::controllers {

// status.phase of a TuningCampaign (the CRD's enum). The operator writes Running, Succeeded
// and Failed; Pending and Stopped are the contract's too and read back like the others.
enum class CampaignPhase { kPending, kRunning, kSucceeded, kFailed, kStopped };

// The wire name ("Pending", ..., "Stopped").
std::string_view CampaignPhaseName(CampaignPhase phase);
// The phase of a wire name; nullopt for any other string.
std::optional<CampaignPhase> ParseCampaignPhase(std::string_view name);
// The phase a campaign status object holds; nullopt when it has none (or not one of the enum).
std::optional<CampaignPhase> CampaignPhaseIn(const nlohmann::json& status);
// Sets the phase of a campaign status object (made an object when it is not one).
void SetCampaignPhase(nlohmann::json* status, CampaignPhase phase);

// Running while trials are open or more will be proposed; Succeeded once the coordinator stops
// with a best trial; Failed when it stops without one or on too many failures. `message`
// (optional) gets one sentence saying why.
CampaignPhase CampaignPhaseOf(const TuningSession& session, std::string* message = nullptr,
                              std::string* stop_reason = nullptr);

// The whole status object: phase, observedGeneration, iteration, trials, baseline, best,
// lastAnalysis, stopReason, message and the four conditions. Condition transition times are
// kept from the campaign's current status when unchanged.
nlohmann::json BuildCampaignStatus(const nlohmann::json& campaign, const TuningSession& session,
                                   const std::string& now_rfc3339);

// Marks a ConfigMap the operator published for a campaign (value: the campaign's name).
inline constexpr const char* kOutputOfAnnotation = "tuning.paratune.dev/output-of";

// The spec.output.configMapName ConfigMap: one key per parameter ("tp": "2"), plus
// config.json, metrics.json, trial, objective and improvementOverBaseline. Labelled with the
// campaign and annotated kOutputOfAnnotation; owned by the campaign (garbage-collected with
// it) only when spec.output.deleteWithCampaign is true, so by default it outlives the campaign.
nlohmann::json BestConfigMap(const nlohmann::json& campaign, const CampaignSpec& spec,
                             const TuningSession& session, const SessionSummary& summary);

// True when `config_map` was published for `campaign`: annotated kOutputOfAnnotation with its
// name, or (older operators) controlled by it. Anything else is never updated or adopted.
bool IsOutputOf(const nlohmann::json& config_map, const nlohmann::json& campaign);
// Who a ConfigMap we must not touch belongs to, for the condition and Event ("TuningCampaign
// other", "HelmRelease x", "app.kubernetes.io/managed-by=Helm", "field manager kubectl").
std::string DescribeOwner(const nlohmann::json& config_map);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_CAMPAIGN_STATUS_H_
