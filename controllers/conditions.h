// metav1.Condition helpers for the status of TuningCampaign and TrialRun, and the condition
// types and Event reasons the controllers use. Pure functions on wire JSON; thread-safe.
#ifndef PARATUNE_CONTROLLERS_CONDITIONS_H_
#define PARATUNE_CONTROLLERS_CONDITIONS_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace paratune::controllers {

// Condition types of a TuningCampaign.
inline constexpr const char* kSpecValid = "SpecValid";
inline constexpr const char* kProgressing = "Progressing";
inline constexpr const char* kConverged = "Converged";
inline constexpr const char* kDegraded = "Degraded";
// Condition types of a TrialRun.
inline constexpr const char* kJobCreated = "JobCreated";
inline constexpr const char* kCompleted = "Completed";
// A succeeded TrialRun whose log lacked the campaign's objective metric (issue 35).
inline constexpr const char* kObjectiveMissing = "ObjectiveMissing";
// Set on a TuningCampaign with spec.output.configMapName: True once the best configuration is
// published, False (reason OutputConfigMapNotOwned) when the ConfigMap belongs to someone else.
inline constexpr const char* kOutputPublished = "OutputPublished";

// Event reasons: one Event on the campaign for every decision (kubectl describe shows them).
namespace reasons {
inline constexpr const char* kInvalidSpec = "InvalidSpec";
inline constexpr const char* kProposed = "Proposed";
inline constexpr const char* kRejectedByPreflight = "RejectedByPreflight";
inline constexpr const char* kLaunched = "Launched";
// TrialRuns of the campaign its message pool had no record of, taken into it (or not).
inline constexpr const char* kTrialsAdopted = "TrialsAdopted";
inline constexpr const char* kTrialNotAdopted = "TrialNotAdopted";
inline constexpr const char* kTrialSucceeded = "TrialSucceeded";
inline constexpr const char* kTrialFailed = "TrialFailed";
inline constexpr const char* kNewBest = "NewBest";
inline constexpr const char* kConverged = "Converged";
inline constexpr const char* kResumed = "Resumed";
inline constexpr const char* kPublished = "Published";
inline constexpr const char* kJobCreated = "JobCreated";
// Queues (Kueue) and the published ConfigMap (GitOps output).
inline constexpr const char* kQueued = "Queued";
inline constexpr const char* kAdmitted = "Admitted";
inline constexpr const char* kOutputNotOwned = "OutputConfigMapNotOwned";
// A knowledge ConfigMap named by the campaign is missing, or one of its values is bad.
inline constexpr const char* kKnowledgeSkipped = "KnowledgeSkipped";
// Pre-flight of the campaign's baseline.
inline constexpr const char* kBaselineReplaced = "BaselineReplaced";
// Cluster health (contract section 10).
inline constexpr const char* kAnomalyDetected = "AnomalyDetected";
inline constexpr const char* kObjectiveMissing = "ObjectiveMissing";
// What the metric collector corrected or dropped while reading a trial's log.
inline constexpr const char* kMetricsRead = "MetricsRead";
inline constexpr const char* kAvoidingNodes = "AvoidingNodes";
inline constexpr const char* kNodeSuspect = "NodeSuspect";
inline constexpr const char* kNodeCleared = "NodeCleared";
inline constexpr const char* kDiagnosticStarted = "DiagnosticStarted";
inline constexpr const char* kDiagnosticResult = "DiagnosticResult";
inline constexpr const char* kRemediationProposed = "RemediationProposed";
inline constexpr const char* kRemediationApplied = "RemediationApplied";
inline constexpr const char* kRemediationFailed = "RemediationFailed";
inline constexpr const char* kApprovalRefused = "ApprovalRefused";
inline constexpr const char* kApprovalIgnored = "ApprovalIgnored";
}  // namespace reasons

// Sets condition `type` in `conditions` (a JSON array, created when null). lastTransitionTime
// changes only when the status changes; reason, message and observedGeneration always follow.
// Returns true when anything changed.
bool SetCondition(nlohmann::json* conditions, const std::string& type, bool status,
                  const std::string& reason, const std::string& message,
                  int64_t observed_generation, const std::string& now_rfc3339);

// Removes object members whose value is an empty string, recursively (not inside arrays of
// strings). Status and spec fields we write are optional strings: absent reads the same as "",
// and some API server paths refuse "" where the schema says string.
void DropEmptyStrings(nlohmann::json* obj);

// The condition of that type, or nullptr.
const nlohmann::json* FindCondition(const nlohmann::json& conditions, const std::string& type);
// True when the condition exists with status "True".
bool IsConditionTrue(const nlohmann::json& conditions, const std::string& type);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_CONDITIONS_H_
