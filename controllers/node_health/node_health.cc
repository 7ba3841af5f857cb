#include "controllers/node_health/node_health.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "base/json_fields.h"
#include "base/strings.h"
#include "controllers/conditions.h"
#include "controllers/status_writer.h"
#include "controllers/trial_run_status.h"
#include "operator/kube_client.h"

namespace paratune::controllers {

namespace {

using kube::Json;
namespace res = kube::resources;

// The non-empty names of a TrialRun's status.nodeNames.
std::vector<std::string> NodeNamesOf(const TrialRunStatus& status) {
  std::vector<std::string> out;
  for (const auto& n : status.node_names.value_or(std::vector<std::string>{})) {
    if (!n.empty()) out.push_back(n);
  }
  return out;
}

Json OldNodeHealth(const Json& campaign) {
  const Json status = ObjectField(campaign, "status");
  return status.is_object() && status.contains("nodeHealth") && status["nodeHealth"].is_object()
             ? status["nodeHealth"]
             : Json::object();
}

std::string CampaignKey(const Json& campaign) {
  return kube::NamespaceOf(campaign) + "/" + kube::NameOf(campaign);
}

}  // namespace

std::vector<std::string> NodesUsed(const std::map<std::string, Json>& trial_runs) {
  std::set<std::string> nodes;
  for (const auto& [name, tr] : trial_runs) {
    auto status = TrialRunStatusOf(tr);
    if (!status.ok()) continue;
    for (const auto& n : NodeNamesOf(*status)) nodes.insert(n);
  }
  return {nodes.begin(), nodes.end()};
}

std::optional<health::TrialObservation> ObservationOf(const std::string& campaign_key,
                                                      const Json& trial_run) {
  auto parsed = TrialRunStatusOf(trial_run);
  if (!parsed.ok()) return std::nullopt;
  const TrialRunStatus& status = *parsed;
  if (status.phase != TrialRunPhase::kSucceeded && status.phase != TrialRunPhase::kFailed) {
    return std::nullopt;
  }
  health::TrialObservation obs;
  obs.campaign = campaign_key;
  obs.trial = kube::NameOf(trial_run);
  obs.nodes = NodeNamesOf(status);
  if (obs.nodes.empty()) return std::nullopt;  // never scheduled: no node to credit or blame
  if (status.phase == TrialRunPhase::kFailed) {
    const Json& failure = status.failure;
    obs.failure_category = failure.is_object() ? failure.value("category", "Unknown") : "Unknown";
    if (failure.is_object() && failure.contains("confidence") &&
        failure["confidence"].is_number()) {
      obs.failure_confidence = failure["confidence"].get<double>();
    }
  } else if (!status.anomaly.is_null()) {
    auto anomaly = health::Anomaly::FromJson(status.anomaly);
    if (anomaly.ok()) obs.anomaly = std::move(*anomaly);
  }
  return obs;
}

std::string ApproveCommand(const Json& campaign, const std::string& id) {
  return "kubectl annotate tc " + kube::NameOf(campaign) + " -n " + kube::NamespaceOf(campaign) +
         " --overwrite " + kApproveAnnotation + "=" + id + " " + kApprovedByAnnotation +
         "=<your-name>";
}

std::string ClusterApprovalName(const std::string& id) {
  std::string name = "paratune-approve-";
  for (char c : id) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    name += std::isalnum(static_cast<unsigned char>(l)) || l == '-' || l == '.' ? l : '-';
  }
  if (name.size() <= 253) return name;
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the id
  for (char c : id) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return name.substr(0, 253 - 17) + "-" + hex;
}

std::string ClusterApproveCommand(const std::string& operator_ns, const std::string& id) {
  return "kubectl -n " + operator_ns + " create configmap " + ClusterApprovalName(id) +
         " --from-literal=remediation=" + id + " --from-literal=approvedBy=<your-name>";
}

namespace {
TimeSource* Clock(const CampaignHealthOptions& o) {
  return o.clock != nullptr ? o.clock : RealTimeSource::Get();
}
}  // namespace

DiagnosticClaims::DiagnosticClaims(const kube::ObjectReader* jobs, TimeSource* clock)
    : jobs_(jobs), clock_(clock) {}

bool DiagnosticClaims::Claim(const std::string& uid, const std::string& node,
                             const std::string& check, const kube::ObjectKey& job) {
  const SteadyTime now = clock_->Now();
  std::lock_guard<std::mutex> lock(mu_);
  const std::string key = node + "|" + check;
  auto it = held_.find(key);
  if (it != held_.end() && it->second.uid != uid) {
    const auto age = now - it->second.since;
    const bool holds =
        age < kGrace || (age < kLifetime && jobs_ != nullptr && jobs_->Get(it->second.job));
    if (holds) return false;
  }
  if (it == held_.end() && held_.size() >= kMaxClaims) {
    for (auto h = held_.begin(); h != held_.end();) {
      h = now - h->second.since >= kLifetime ? held_.erase(h) : std::next(h);
    }
    if (held_.size() >= kMaxClaims) held_.erase(held_.begin());
  }
  if (it == held_.end() || it->second.uid != uid) held_[key] = {uid, job, now};
  return true;
}

void DiagnosticClaims::Release(const std::string& uid, const std::string& node,
                               const std::string& check) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = held_.find(node + "|" + check);
  if (it != held_.end() && it->second.uid == uid) held_.erase(it);
}

void DiagnosticClaims::ReleaseNode(const std::string& node) {
  std::lock_guard<std::mutex> lock(mu_);
  held_.erase(held_.lower_bound(node + "|"), held_.lower_bound(node + "}"));
}

size_t DiagnosticClaims::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return held_.size();
}

NodeHealthDecision HealthContext::Decision() const {
  return NodeHealthDecision{
      node_health, remediations,
      CampaignCondition{"NodeLedger", ledger_ok, ledger_reason, ledger_message}};
}

CampaignHealth::CampaignHealth(kube::KubeClient* client, NodeLedgerStore* ledger,
                               kube::ObjectReader* jobs, kube::ObjectReader* pods,
                               CampaignHealthOptions opts)
    : client_(client),
      ledger_(ledger),
      jobs_(jobs),
      pods_(pods),
      opts_(std::move(opts)),
      approvals_(client, ledger->ns(), opts_.approval_recheck, Clock(opts_)),
      claims_(jobs, Clock(opts_)) {}

void CampaignHealth::EmitOnce(const HealthContext& ctx, const std::string& key,
                              const HealthEmit& emit, const std::string& type,
                              const std::string& reason, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string k = kube::UidOf(*ctx.campaign) + "|" + key;
    if (!emitted_.insert(k).second) return;
    emit_order_.push_back(k);
    while (emit_order_.size() > kMaxEmitted) {
      emitted_.erase(emit_order_.front());
      emit_order_.pop_front();
    }
  }
  emit(type, reason, message);
}

Status CampaignHealth::WriteBackAnomalies(HealthContext& ctx, const HealthEmit& emit) {
  for (auto& [name, tr] : *ctx.trial_runs) {
    auto status = TrialRunStatusOf(tr);
    if (!status.ok() || status->phase != TrialRunPhase::kSucceeded || !status->anomaly.is_null()) {
      continue;
    }
    auto anomaly = ctx.session->AnomalyOf(name);
    if (!anomaly) continue;
    if (anomaly->node_names.empty()) anomaly->node_names = NodeNamesOf(*status);
    status->anomaly = anomaly->ToJson();
    Json updated = tr;
    updated["status"] = ToJson(*status);
    auto written = controllers::WriteStatus(client_, res::kTrialRuns, updated);
    if (!written.ok()) return written.status().WithPrefix("trialrun " + name + " anomaly");
    tr = *written;
    emit("Warning", reasons::kAnomalyDetected,
         name + " is anomalous (" + health::AnomalyKindName(anomaly->kind) + ", nodes " +
             Join(anomaly->node_names, ", ") + "): " + anomaly->summary +
             "; the campaign does not learn from it");
  }
  return Status::Ok();
}

// Suspects whose approved cordon a person has undone since: the suspicion ends (contract: "until
// it is uncordoned after a remediation"). Only nodes listed as suspect by this campaign are read.
std::vector<std::string> CampaignHealth::UncordonedSuspects(const HealthContext& ctx,
                                                            const health::NodeLedger& ledger) {
  std::vector<std::string> out;
  const Json& rems = ObjectField(*ctx.campaign, "status").value("remediations", Json());
  if (!rems.is_array()) return out;
  for (const auto& r : rems) {
    if (r.value("action", "") != "CordonNode" || r.value("state", "") != "Applied") continue;
    const std::string node = r.value("node", "");
    const health::NodeRecord* rec = ledger.Find(node);
    if (rec == nullptr || !rec->suspect) continue;
    // A suspicion that began after the cordon is a new one: the old cordon says nothing.
    if (rec->suspect_since > r.value("completedAt", "")) continue;
    auto n = client_->Get(res::kNodes, "", node);
    if (!n.ok()) continue;
    const Json& spec = n->value("spec", Json::object());
    if (!spec.is_object() || !spec.value("unschedulable", false)) out.push_back(node);
  }
  return out;
}

Status CampaignHealth::Observe(HealthContext& ctx, const HealthEmit& emit) {
  PARATUNE_RETURN_IF_ERROR(WriteBackAnomalies(ctx, emit));
  const std::string key = CampaignKey(*ctx.campaign);
  std::vector<health::TrialObservation> observations;
  for (const auto& [name, tr] : *ctx.trial_runs) {
    if (auto obs = ObservationOf(key, tr)) observations.push_back(std::move(*obs));
  }
  // The ledger serves every campaign; a ledger that cannot be read or written costs this
  // reconcile its node attribution, never its tuning (the NodeLedger condition says so).
  auto current = ledger_->Load();
  if (!current.ok()) {
    LedgerProblem(ctx, emit, "ReadFailed", current.status().message());
    ListSuspects(ctx, emit);
    return Status::Ok();
  }
  std::vector<std::string> uncordoned = UncordonedSuspects(ctx, *current);
  health::CompactionReport report;
  auto ledger = ledger_->Modify(
      [observations, uncordoned, now = ctx.now](health::NodeLedger* l) {  // kept when deferred
        for (const auto& obs : observations) l->RecordTrial(obs, now);
        for (const auto& node : uncordoned)
          l->Clear(node, "uncordoned after an approved cordon", now);
      },
      &report);
  if (!ledger.ok()) {
    LedgerProblem(ctx, emit, "WriteFailed", ledger.status().message());
    ctx.ledger = std::move(*current);
    ListSuspects(ctx, emit);
    return Status::Ok();
  }
  ctx.ledger = std::move(*ledger);
  // Stable messages (figures go to the log): the condition must not rewrite every campaign's
  // status whenever the shared ledger grows.
  const std::string bound = std::to_string(ledger_->max_bytes()) + " bytes";
  ctx.ledger_message = "the node ledger is stored within its bound of " + bound;
  if (report.changed()) {
    ctx.ledger_reason = "Compacted";
    ctx.ledger_message = "the node ledger reached its bound of " + bound +
                         ": stale healthy nodes are evicted first, then older evidence";
    spdlog::info(
        "campaign {}: node ledger compacted from {} to {} bytes: {} nodes evicted, {} "
        "evidence items and {} trial keys dropped, {} nodes kept",
        key, report.bytes_before, report.bytes, report.evicted_nodes, report.trimmed_evidence,
        report.forgotten_trials, ctx.ledger.size());
  }
  for (const auto& node : uncordoned) {
    spdlog::info("campaign {}: node {} was uncordoned after remediation: suspicion cleared", key,
                 node);
  }
  ListSuspects(ctx, emit);
  return Status::Ok();
}

void CampaignHealth::LedgerProblem(HealthContext& ctx, const HealthEmit& emit,
                                   const std::string& reason, const std::string& message) {
  ctx.ledger_ok = false;
  ctx.ledger_reason = reason;
  ctx.ledger_message = "node ledger: " + message + "; tuning goes on without node attribution";
  spdlog::warn("campaign {}: {}", CampaignKey(*ctx.campaign), ctx.ledger_message);
  EmitOnce(ctx, "ledger|" + reason, emit, "Warning", "NodeLedgerUnavailable", ctx.ledger_message);
}

void CampaignHealth::ListSuspects(HealthContext& ctx, const HealthEmit& emit) {
  const Json old = OldNodeHealth(*ctx.campaign).value("suspectNodes", Json::array());
  std::map<std::string, std::string> old_since;  // name -> since
  if (old.is_array()) {
    for (const auto& s : old) old_since[s.value("name", "")] = s.value("since", "");
  }
  const std::vector<std::string> used = NodesUsed(*ctx.trial_runs);
  Json suspects = Json::array();
  ctx.suspects.clear();
  for (const auto& rec : ctx.ledger.Suspects()) {
    if (!std::binary_search(used.begin(), used.end(), rec.name)) continue;
    const std::vector<std::string> why = health::SuspectReasons(rec);
    suspects.push_back({{"name", rec.name},
                        {"score", std::round(rec.score * 100) / 100},
                        {"since", rec.suspect_since},
                        {"reasons", why}});
    ctx.suspects.push_back(rec.name);
    auto it = old_since.find(rec.name);
    if (it == old_since.end() || it->second != rec.suspect_since) {
      const std::string score = Fixed(rec.score, 2);
      emit("Warning", reasons::kNodeSuspect,
           "node " + rec.name + " is suspect (score " + score + "): " + Join(why, "; ") +
               ". Later trials avoid it; diagnostics " +
               (opts_.diagnostics == "off" ? "are off" : "run on it"));
    }
  }
  for (const auto& [name, since] : old_since) {
    if (!name.empty() && !ctx.ledger.IsSuspect(name)) {
      emit("Normal", reasons::kNodeCleared,
           "node " + name + " is no longer suspect: later trials may run on it again");
    }
  }
  ctx.node_health["suspectNodes"] = suspects;
}

}  // namespace paratune::controllers
