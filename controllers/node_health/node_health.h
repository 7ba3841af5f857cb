// CampaignHealth: the cluster-health half of a TuningCampaign reconcile (contract section 10).
// Called by TuningCampaignReconciler after the session ingested the finished trials:
//   Observe     writes the anomalies the session found (SlowerThanPredicted) into the TrialRun's
//               status.anomaly; records every finished trial in the node ledger (idempotent, so
//               the ConfigMap is written once per trial); clears a suspect whose approved cordon
//               a person has since undone (uncordoned); lists the suspects among the nodes this
//               campaign used (status.nodeHealth.suspectNodes, a NodeSuspect Warning Event once
//               per suspicion, NodeCleared when one ends).
//   Diagnose    runs the whitelisted checks of each suspect (controllers/diagnostic_jobs) as
//               Jobs with deterministic names, interprets them when done, records the verdicts
//               (status.nodeHealth.diagnostics, ledger RecordDiagnostic); all passing clears the
//               suspicion. One Job per suspect node and check in the cluster, not one per
//               campaign that used the node: the first campaign to diagnose it claims the check
//               (DiagnosticClaims); the others wait for its verdict and take it from the ledger.
//   Remediate   proposes CordonNode for each suspect and RetryTrial for each anomalous trial
//               (status.remediations + RemediationProposed naming the kubectl command). A
//               CordonNode runs only once a ConfigMap ClusterApprovalName(id) exists in the
//               operator's namespace (RBAC: cluster administrators; one found missing is
//               asked for again after approval_recheck, ClusterApprovals); a RetryTrial once its id
//               is in the annotation tuning.paratune.dev/approve with
//               tuning.paratune.dev/approved-by. State lives in status, so an applied remediation
//               is never applied twice, even across restarts.
// Thread-safe for different campaigns (the Controller serializes one campaign's reconciles).
#ifndef PARATUNE_CONTROLLERS_NODE_HEALTH_NODE_HEALTH_H_
#define PARATUNE_CONTROLLERS_NODE_HEALTH_NODE_HEALTH_H_

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agents/health/diagnostic_checks.h"
#include "agents/health/node_ledger.h"
#include "agents/session/tuning_session.h"
#include "base/time_source.h"
#include "controllers/campaign_status.h"
#include "controllers/node_health/diagnostic_jobs.h"
#include "controllers/node_health/node_ledger_store.h"
#include "operator/kube_client.h"
#include "operator/object_reader.h"

namespace paratune::controllers {

inline constexpr const char* kApproveAnnotation = "tuning.paratune.dev/approve";
inline constexpr const char* kApprovedByAnnotation = "tuning.paratune.dev/approved-by";

// The states of a status.nodeHealth.diagnostics entry and of a status.remediations entry; the
// TuningCampaign CRD's enums list exactly these (ControllersCrdTest writes each through a real
// API server: a state the schema lacks makes every status write of the campaign fail).
inline constexpr const char* kDiagnosticStates[] = {"Running", "Passed", "Failed", "Inconclusive"};
inline constexpr const char* kRemediationStates[] = {"Proposed", "Applied", "Failed", "Obsolete"};

struct CampaignHealthOptions {
  std::string diagnostics = "nvidia";  // off | nvidia | simulated (operator --diagnostics)
  std::string paratune_image = "paratune/paratune:latest";  // simulated checks' image
  // Whether an approved CordonNode patches the Node (--node-remediation). False: the approval
  // is answered with a Failed remediation saying the administrator cordons it by hand.
  bool cordon = false;
  // How long a cordon approval found missing counts as missing (ClusterApprovals).
  Millis approval_recheck{10000};
  TimeSource* clock = nullptr;  // null: the real clock
};

// The cluster administrators' approvals of cordons: ConfigMap ClusterApprovalName(id) in the
// operator's namespace. Every campaign that proposes cordoning a node asks for the same
// ConfigMap on each reconcile; one found missing counts as missing for `recheck` (one GET per
// interval, not one per campaign reconcile: issue 17). Thread-safe.
class ClusterApprovals {
 public:
  // Borrows client and clock.
  ClusterApprovals(kube::KubeClient* client, std::string ns, Millis recheck, TimeSource* clock);
  // Who approved `remediation` (a CordonNode with id and proposedAt): "configmap NS/NAME
  // (approvedBy)", or "" when nobody has (yet); errors are transient.
  Result<std::string> Find(const kube::Json& remediation);

 private:
  kube::KubeClient* client_;
  const std::string ns_;
  const Millis recheck_;
  TimeSource* clock_;
  std::mutex mu_;
  std::map<std::string, SteadyTime> missing_since_;  // name -> when found missing; guarded by mu_
  static constexpr size_t kMaxMissing = 4096;
};

// Which campaign runs each diagnostic check of each suspect node (issue 17: at 200 campaigns a
// suspect node that most of them had used got a GEMM check from each). A claim holds while it
// is young (`grace`: its Job may not be in the cache yet) or its Job is in the cache and the
// claim is younger than `lifetime` (a check's Job ends by its activeDeadlineSeconds, and the
// claimant records the verdict when it does); otherwise the next campaign that needs the check
// takes it over. Kept in this process only: the operator is one leader, and after a restart a
// campaign whose own check Job still exists goes on reading it (at most one more Job per
// check). Thread-safe.
class DiagnosticClaims {
 public:
  static constexpr Millis kGrace{30000};
  static constexpr Millis kLifetime{(kDiagnosticDeadlineSeconds + 300) * 1000};

  // Borrows both; `jobs` may be null (then a claim holds for `grace` only).
  DiagnosticClaims(const kube::ObjectReader* jobs, TimeSource* clock);

  // True when campaign `uid` is to run `check` on `node` itself, as Job `job`: nobody holds
  // the check, or it holds it already, or the holder's claim lapsed (recorded as `uid`'s).
  bool Claim(const std::string& uid, const std::string& node, const std::string& check,
             const kube::ObjectKey& job);
  // Ends `uid`'s claim of (node, check) (its verdict is recorded, or its create failed).
  void Release(const std::string& uid, const std::string& node, const std::string& check);
  // Ends every claim on `node` (its suspicion ended).
  void ReleaseNode(const std::string& node);
  size_t size() const;

 private:
  struct Held {
    std::string uid;
    kube::ObjectKey job;
    SteadyTime since;
  };
  static constexpr size_t kMaxClaims = 4096;
  const kube::ObjectReader* jobs_;
  TimeSource* clock_;
  mutable std::mutex mu_;
  std::map<std::string, Held> held_;  // "node|check"; guarded by mu_
};

// One campaign reconcile's view, filled by the campaign reconciler; Observe/Diagnose/Remediate
// fill the outputs. Pointers are borrowed for the call.
struct HealthContext {
  const kube::Json* campaign = nullptr;
  const CampaignSpec* spec = nullptr;
  TuningSession* session = nullptr;
  std::map<std::string, kube::Json>* trial_runs = nullptr;  // by name, owned by the campaign
  std::string now;
  // Outputs.
  health::NodeLedger ledger;                      // as stored after Observe
  std::vector<std::string> suspects;              // ledger suspects among the campaign's nodes
  kube::Json node_health = kube::Json::object();  // status.nodeHealth
  kube::Json remediations = kube::Json::array();  // status.remediations
  bool pool_changed = false;                      // an approved RetryTrial was queued
  // The NodeLedger condition: False when the ledger could not be read or written (tuning goes
  // on without it); reason Stored, Compacted, ReadFailed or WriteFailed.
  bool ledger_ok = true;
  std::string ledger_reason = "Stored";
  std::string ledger_message;
  // The outputs as the campaign status takes them (CampaignStatus::Apply).
  NodeHealthDecision Decision() const;
};

// type ("Normal"/"Warning"), reason, message: one Event on the campaign.
using HealthEmit = std::function<void(const std::string&, const std::string&, const std::string&)>;

class CampaignHealth {
 public:
  // Borrows everything; `jobs`/`pods` may be null (then no diagnostics run).
  CampaignHealth(kube::KubeClient* client, NodeLedgerStore* ledger, kube::ObjectReader* jobs,
                 kube::ObjectReader* pods, CampaignHealthOptions opts);

  Status Observe(HealthContext& ctx, const HealthEmit& emit);
  Status Diagnose(HealthContext& ctx, const HealthEmit& emit);
  Status Remediate(HealthContext& ctx, const HealthEmit& emit);

  const CampaignHealthOptions& options() const { return opts_; }

 private:
  Status WriteBackAnomalies(HealthContext& ctx, const HealthEmit& emit);
  std::vector<std::string> UncordonedSuspects(const HealthContext& ctx,
                                              const health::NodeLedger& ledger);
  void ListSuspects(HealthContext& ctx, const HealthEmit& emit);
  void LedgerProblem(HealthContext& ctx, const HealthEmit& emit, const std::string& reason,
                     const std::string& message);
  Result<kube::Json> DiagnoseCheck(HealthContext& ctx, const std::string& node,
                                   const std::string& check, const kube::Json& previous,
                                   std::vector<health::CheckResult>* results,
                                   const HealthEmit& emit);
  Status ApplyApproved(HealthContext& ctx, const HealthEmit& emit);
  Status Apply(HealthContext& ctx, kube::Json& remediation, const std::string& by,
               const HealthEmit& emit);
  // Emits once per (campaign uid, key) for this process's lifetime, remembering at most
  // kMaxEmitted keys (the oldest are forgotten: such an Event may then be emitted again).
  void EmitOnce(const HealthContext& ctx, const std::string& key, const HealthEmit& emit,
                const std::string& type, const std::string& reason, const std::string& message);

  kube::KubeClient* client_;
  NodeLedgerStore* ledger_;
  kube::ObjectReader* jobs_;
  kube::ObjectReader* pods_;
  CampaignHealthOptions opts_;
  ClusterApprovals approvals_;
  DiagnosticClaims claims_;
  std::mutex mu_;
  std::set<std::string> emitted_;       // guarded by mu_
  std::deque<std::string> emit_order_;  // guarded by mu_; oldest first, for the bound below
  static constexpr size_t kMaxEmitted = 4096;
};

// Every node named in the TrialRuns' status.nodeNames, sorted.
std::vector<std::string> NodesUsed(const std::map<std::string, kube::Json>& trial_runs);
// The ledger observation of a finished TrialRun (nullopt: not finished, or no node to blame).
std::optional<health::TrialObservation> ObservationOf(const std::string& campaign_key,
                                                      const kube::Json& trial_run);
// The kubectl command that approves remediation `id` of the campaign (RetryTrial).
std::string ApproveCommand(const kube::Json& campaign, const std::string& id);
// The ConfigMap in the operator's namespace whose existence approves a cluster-wide
// remediation (CordonNode) `id`: "paratune-approve-<id>", shortened with a hash when too long.
std::string ClusterApprovalName(const std::string& id);
// The kubectl command a cluster administrator runs to approve it.
std::string ClusterApproveCommand(const std::string& operator_ns, const std::string& id);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_NODE_HEALTH_NODE_HEALTH_H_
