// The TuningCampaign status (contract section 2) and the published best-configuration
// ConfigMap, computed from the agent loop's state. Pure functions; thread-safe.
#ifndef PARATUNE_CONTROLLERS_CAMPAIGN_STATUS_H_
#define PARATUNE_CONTROLLERS_CAMPAIGN_STATUS_H_

#include <cstdint>
#include <map>
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

// status.stopReason: why a campaign ended. The session's reasons (StopReason) plus the
// operator's accelerator-hour budget.
enum class CampaignStopReason {
  kBudgetExhausted,
  kTargetReached,
  kMaxFailedTrials,
  kSearchConverged,  // "Converged" (kConverged names the condition type)
  kSpaceExhausted,
  kClusterCannotRun,
  kAcceleratorHoursExhausted
};
// The wire name ("BudgetExhausted", ..., "AcceleratorHoursExhausted").
std::string_view CampaignStopReasonName(CampaignStopReason reason);
// The reason of a wire name; nullopt for any other string.
std::optional<CampaignStopReason> ParseCampaignStopReason(std::string_view name);
// The campaign's reason for a stop the session decided.
CampaignStopReason CampaignStopReasonOf(StopReason reason);

// status.trials.
struct CampaignTrialCounts {
  int64_t total = 0, running = 0, succeeded = 0, failed = 0, rejected = 0, anomalous = 0,
          ooms_avoided = 0;
  std::optional<int64_t> early_stopped;  // written with the accelerator-hours
};
// status.baseline.
struct CampaignBaseline {
  std::string trial_name;
  double objective = 0;
  nlohmann::json preflight;  // null: none (the baseline was launched)
};
// status.best.
struct CampaignBest {
  std::string trial_name;  // "": no best yet
  double objective = 0;
  nlohmann::json config = nlohmann::json::object();
  nlohmann::json metrics = nlohmann::json::object();
  double improvement_over_baseline = 0;
};
// status.lastAnalysis.
struct CampaignAnalysis {
  std::string bottleneck, health_state, summary;
};
// status.acceleratorHours (finished trials).
struct CampaignAcceleratorHours {
  double total = 0;
  std::map<std::string, double> per_trial;
  double saved_by_early_stopping = 0;
  std::optional<double> max;  // spec.budget.maxAcceleratorHours, when set
};

// A condition a deciding piece asks for (metav1.Condition without its times and generation,
// which the writer adds).
struct CampaignCondition {
  std::string type;
  bool status = false;
  std::string reason, message;
};

// The campaign ends: phase Succeeded when it has a best (Converged=True then), else Failed;
// Progressing=False; stopReason and message say why.
struct CampaignStop {
  CampaignStopReason reason = CampaignStopReason::kBudgetExhausted;
  std::string message;
};

// What the accelerator-hour budget decided (controllers/accelerator_hours.h).
struct AcceleratorHoursDecision {
  CampaignAcceleratorHours hours;    // status.acceleratorHours
  int64_t early_stopped = 0;         // status.trials.earlyStopped (when status.trials is there)
  std::optional<CampaignStop> stop;  // the budget ends the campaign
};

// What node health decided (controllers/node_health/node_health.h).
struct NodeHealthDecision {
  nlohmann::json node_health = nlohmann::json::object();  // status.nodeHealth
  nlohmann::json remediations = nlohmann::json::array();  // status.remediations
  CampaignCondition ledger;                               // the NodeLedger condition
};

// The status of a TuningCampaign (contract section 2), typed. FromJson/ToJson are its one JSON
// mapping; the Apply methods are its one writer: deciding pieces return decisions, the campaign
// reconciler applies them here. A field absent on the wire is absent here (nullopt, null JSON),
// so a status read and written back is unchanged.
struct CampaignStatus {
  std::optional<CampaignPhase> phase;
  std::optional<int64_t> observed_generation;
  std::optional<int64_t> iteration;
  std::string message;
  std::optional<CampaignStopReason> stop_reason;
  std::optional<CampaignTrialCounts> trials;
  std::optional<CampaignBaseline> baseline;
  std::optional<CampaignBest> best;
  std::optional<CampaignAnalysis> last_analysis;
  std::optional<CampaignAcceleratorHours> accelerator_hours;
  nlohmann::json node_health;   // status.nodeHealth (node health's shape); null: absent
  nlohmann::json remediations;  // status.remediations; null: absent
  nlohmann::json conditions;    // metav1.Condition array; null: absent
  // Members this type does not name, or named ones not of their shape (an edited status), as
  // read; written back as they were.
  nlohmann::json other = nlohmann::json::object();

  static CampaignStatus FromJson(const nlohmann::json& status);
  // Empty strings are left out (DropEmptyStrings): absent reads the same as "".
  nlohmann::json ToJson() const;

  bool HasBest() const { return best.has_value() && !best->trial_name.empty(); }

  // Sets one condition (SetCondition: the transition time moves only with its status). True when
  // anything changed.
  bool Apply(const CampaignCondition& c, int64_t generation, const std::string& now);
  // Ends the campaign (CampaignStop).
  void Apply(const CampaignStop& stop, int64_t generation, const std::string& now);
  // status.acceleratorHours and trials.earlyStopped, and the stop when the budget decided one.
  void Apply(const AcceleratorHoursDecision& d, int64_t generation, const std::string& now);
  // status.nodeHealth, status.remediations and the NodeLedger condition.
  void Apply(const NodeHealthDecision& d, int64_t generation, const std::string& now);
  // The spec does not validate: SpecValid=False and Progressing=False (reason InvalidSpec),
  // phase Failed, the message. True when a condition changed (a new refusal to tell about).
  bool ApplyInvalidSpec(const std::string& why, int64_t generation, const std::string& now);
};

// Running while trials are open or more will be proposed; Succeeded once the coordinator stops
// with a best trial; Failed when it stops without one or on too many failures. `message`
// (optional) gets one sentence saying why, `stop_reason` (optional) the reason when it stopped.
CampaignPhase CampaignPhaseOf(const TuningSession& session, std::string* message = nullptr,
                              std::optional<CampaignStopReason>* stop_reason = nullptr);

// The status the session decides: phase, observedGeneration, iteration, trials, baseline, best,
// lastAnalysis, stopReason, message and the four conditions. Of the campaign's current status
// only the conditions are kept (transition times kept when unchanged, other types as they are).
CampaignStatus BuildCampaignStatus(const nlohmann::json& campaign, const TuningSession& session,
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
