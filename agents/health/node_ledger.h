// The node ledger (api.md section 10): which nodes ran which trials, and how suspicious each node
// is across trials and campaigns. NodeFault / CollectiveTimeout failures and anomalies add weight
// to the nodes that ran the trial (shared among them); healthy trials take weight away. A node
// whose score reaches the threshold becomes suspect until its diagnostics pass or it is cleared.
// Persisted as the `nodes.json` key of the ConfigMap paratune-node-health.
//
// Thread-safety: none; the owner serializes calls. Value type (copyable).
#ifndef PARATUNE_AGENTS_HEALTH_NODE_LEDGER_H_
#define PARATUNE_AGENTS_HEALTH_NODE_LEDGER_H_

#include <cstddef>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "agents/health/anomaly.h"
#include "base/status.h"

namespace paratune::health {

// One finished trial as the ledger sees it.
struct TrialObservation {
  std::string campaign, trial;
  std::vector<std::string> nodes;
  std::string failure_category;     // "" on success; else a FailureDiagnosis category
  double failure_confidence = 100;  // 0..100, the diagnosis' confidence
  std::optional<Anomaly> anomaly;   // on a succeeded but anomalous trial
};

// kind: NodeFault | CollectiveTimeout | <AnomalyKind name> | Healthy | DiagnosticFailed |
// DiagnosticPassed | Cleared.
struct NodeEvidence {
  std::string time, campaign, trial, kind, detail;
  double weight = 0;  // what it added to (or, negative, took from) the score
};

struct NodeRecord {
  std::string name;
  double score = 0;
  bool suspect = false;
  std::string suspect_since;            // RFC 3339, "" when not suspect
  std::vector<NodeEvidence> evidence;   // newest last, bounded by LedgerOptions::max_evidence
  std::set<std::string> checks_passed;  // diagnostic checks passed since it became suspect
  std::set<std::string> checks_failed;  // diagnostic checks failing (latest verdict per check)
  // Net adverse weight per campaign (kept when LedgerOptions::min_campaigns > 1).
  std::map<std::string, double> campaigns;
};

// What NodeLedger::Compact did to fit the ledger in its byte budget.
struct CompactionReport {
  size_t bytes_before = 0, bytes = 0;  // serialized size (nodes.json)
  size_t evicted_nodes = 0;            // forgotten nodes: stale healthy ones first
  size_t trimmed_evidence = 0;         // evidence items dropped from kept nodes
  size_t forgotten_trials = 0;         // idempotency keys dropped
  bool fits = true;                    // false: still over the budget (nothing may be written)
  bool changed() const { return evicted_nodes + trimmed_evidence + forgotten_trials > 0; }
};

// "t004 StepTimeDrift" for each adverse evidence item, newest last (status.nodeHealth reasons).
std::vector<std::string> SuspectReasons(const NodeRecord& r, size_t max_reasons = 5);

struct LedgerOptions {
  // Weights and threshold were chosen with bench/health_attribution_bench.cc (threshold 2 named
  // the faulty node exactly in 75% of tuning runs vs 65% at 3, with no false alarm on fault-free
  // runs): one anomaly on a 1-node trial is enough to suspect its node (diagnostics then decide),
  // one node error alone is not (infrastructure faults strike healthy nodes too), a node error
  // plus any other adverse evidence is.
  double suspect_threshold = 2.0;
  // Weights of one trial's evidence before it is shared among the trial's nodes.
  double node_fault_weight = 1.5;           // x diagnosis confidence / 100
  double collective_timeout_weight = 0.75;  // x confidence / 100; implicates the fabric too
  double anomaly_weight = 2.0;              // SlowerThanPredicted / StepTimeDrift / Spikes
  double healthy_credit = 0.5;              // taken from every node of a healthy trial
  double min_score = 0;                     // a long healthy past cannot hide a new fault
  size_t max_evidence = 20;
  size_t max_remembered_trials = 4000;  // idempotency memory (oldest forgotten first)
  // Evidence from how many campaigns it takes to make a node suspect: each campaign's net
  // adverse weight counts at most suspect_threshold / min_campaigns, so with 2 one campaign
  // (one tenant pinning trials to a node) cannot condemn a node alone; a failed diagnostic
  // check still does. 1: every campaign's evidence counts in full (the CLI's simulations).
  int min_campaigns = 1;
  size_t max_campaigns_per_node = 32;  // the smallest contributions are forgotten beyond this
  // The checks whose passing clears a suspicion that no failed check supports.
  std::vector<std::string> clearing_checks = {"gpu-clocks", "ecc-xid", "gemm", "hbm-bandwidth",
                                              "nccl-allreduce"};
};

class NodeLedger {
 public:
  explicit NodeLedger(LedgerOptions o = {});
  // The `nodes.json` of ConfigMap paratune-node-health (as written by ToJson). Errors name the
  // field ("nodes[2].score: must be a number").
  static Result<NodeLedger> FromJson(const nlohmann::json& j, LedgerOptions o = {});
  nlohmann::json ToJson() const;

  // Idempotent per (campaign, trial): a second call for the same trial changes nothing.
  // Returns the nodes that became suspect by this call.
  std::vector<std::string> RecordTrial(const TrialObservation& obs, const std::string& now_rfc3339);
  // A diagnostic check's verdict on a node: a failed check makes/keeps it suspect; all
  // clearing checks of a suspicion passing (and none failing) clears it. Returns true if the
  // suspect state changed.
  bool RecordDiagnostic(const std::string& node, const std::string& check, bool passed,
                        const std::string& summary, const std::string& now);
  // Ends a suspicion and resets the score (e.g. uncordoned after remediation). Unknown nodes
  // are remembered as cleared.
  void Clear(const std::string& node, const std::string& reason, const std::string& now);

  // Shrinks the ledger until its nodes.json is at most `max_bytes`: evicts healthy nodes
  // (not suspect, score at the floor, no failing check) that were seen least recently, then
  // trims the evidence of the others (healthy to 2 items, suspects to 5), then forgets the
  // oldest trial keys down to 500, then evicts the lowest-scored non-suspects. Suspects are
  // never evicted. The report says what went and whether it fits.
  CompactionReport Compact(size_t max_bytes);
  size_t size() const { return nodes_.size(); }

  std::vector<NodeRecord> Suspects() const;  // by name
  bool IsSuspect(const std::string& node) const;
  const NodeRecord* Find(const std::string& node) const;  // null when never seen
  std::vector<std::string> SuspectNames() const;
  const LedgerOptions& options() const { return options_; }

 private:
  NodeRecord& Node(const std::string& name);
  void AddEvidence(NodeRecord& r, NodeEvidence e);
  void MarkSuspect(NodeRecord& r, const std::string& now);
  bool Remember(const std::string& key);
  // Adds `share` to the campaign's contribution and returns the node's new score.
  double Contribute(NodeRecord& r, const std::string& campaign, double share) const;

  LedgerOptions options_;
  std::map<std::string, NodeRecord> nodes_;
  std::deque<std::string> trial_order_;
  std::set<std::string> trials_seen_;
};

}  // namespace paratune::health

#endif  // PARATUNE_AGENTS_HEALTH_NODE_LEDGER_H_
