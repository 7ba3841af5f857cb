#include "controllers/node_health.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "controllers/conditions.h"
#include "controllers/status_writer.h"
#include "operator/kube_client.h"

namespace paratune::controllers {

namespace {

using kube::Json;
namespace res = kube::resources;

std::vector<std::string> Strings(const Json& arr) {
  std::vector<std::string> out;
  if (!arr.is_array()) return out;
  for (const auto& v : arr) {
    if (v.is_string() && !v.get<std::string>().empty()) out.push_back(v.get<std::string>());
  }
  return out;
}

Json OldNodeHealth(const Json& campaign) {
  const Json status = ObjectField(campaign, "status");
  return status.is_object() && status.contains("nodeHealth") && status["nodeHealth"].is_object()
             ? status["nodeHealth"]
             : Json::object();
}

std::string Join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string CampaignKey(const Json& campaign) {
  return kube::NamespaceOf(campaign) + "/" + kube::NameOf(campaign);
}

}  // namespace

std::vector<std::string> NodesUsed(const std::map<std::string, Json>& trial_runs) {
  std::set<std::string> nodes;
  for (const auto& [name, tr] : trial_runs) {
    for (const auto& n : Strings(ObjectField(tr, "status").value("nodeNames", Json()))) {
      nodes.insert(n);
    }
  }
  return {nodes.begin(), nodes.end()};
}

std::optional<health::TrialObservation> ObservationOf(const std::string& campaign_key,
                                                      const Json& trial_run) {
  const Json& status = ObjectField(trial_run, "status");
  if (!status.is_object()) return std::nullopt;
  const std::string phase = status.value("phase", "");
  if (phase != "Succeeded" && phase != "Failed") return std::nullopt;
  health::TrialObservation obs;
  obs.campaign = campaign_key;
  obs.trial = kube::NameOf(trial_run);
  obs.nodes = Strings(status.value("nodeNames", Json()));
  if (obs.nodes.empty()) return std::nullopt;  // never scheduled: no node to credit or blame
  if (phase == "Failed") {
    const Json& failure = status.value("failure", Json::object());
    obs.failure_category = failure.is_object() ? failure.value("category", "Unknown") : "Unknown";
    if (failure.is_object() && failure.contains("confidence") &&
        failure["confidence"].is_number()) {
      obs.failure_confidence = failure["confidence"].get<double>();
    }
  } else if (status.contains("anomaly")) {
    auto anomaly = health::Anomaly::FromJson(status["anomaly"]);
    if (anomaly.ok()) obs.anomaly = std::move(*anomaly);
  }
  return obs;
}

std::string ApproveCommand(const Json& campaign, const std::string& id) {
  return "kubectl annotate tc " + kube::NameOf(campaign) + " -n " + kube::NamespaceOf(campaign) +
         " --overwrite " + kApproveAnnotation + "=" + id + " " + kApprovedByAnnotation +
         "=<your-name>";
}

CampaignHealth::CampaignHealth(kube::KubeClient* client, NodeLedgerStore* ledger,
                               kube::Informer* jobs, kube::Informer* pods,
                               CampaignHealthOptions opts)
    : client_(client), ledger_(ledger), jobs_(jobs), pods_(pods), opts_(std::move(opts)) {}

void CampaignHealth::EmitOnce(const HealthContext& ctx, const std::string& key,
                              const HealthEmit& emit, const std::string& type,
                              const std::string& reason, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!emitted_.insert(kube::UidOf(*ctx.campaign) + "|" + key).second) return;
  }
  emit(type, reason, message);
}

Status CampaignHealth::WriteBackAnomalies(HealthContext& ctx, const HealthEmit& emit) {
  for (auto& [name, tr] : *ctx.trial_runs) {
    const Json& status = ObjectField(tr, "status");
    if (!status.is_object() || status.value("phase", "") != "Succeeded" ||
        status.contains("anomaly")) {
      continue;
    }
    auto anomaly = ctx.session->AnomalyOf(name);
    if (!anomaly) continue;
    if (anomaly->node_names.empty())
      anomaly->node_names = Strings(status.value("nodeNames", Json()));
    Json updated = tr;
    updated["status"]["anomaly"] = anomaly->ToJson();
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
  auto current = ledger_->Load();
  if (!current.ok()) return current.status();
  std::vector<std::string> uncordoned = UncordonedSuspects(ctx, *current);
  auto ledger = ledger_->Modify([&](health::NodeLedger* l) {
    for (const auto& obs : observations) l->RecordTrial(obs, ctx.now);
    for (const auto& node : uncordoned) {
      l->Clear(node, "uncordoned after an approved cordon", ctx.now);
    }
  });
  if (!ledger.ok()) return ledger.status().WithPrefix("node ledger");
  ctx.ledger = std::move(*ledger);
  for (const auto& node : uncordoned) {
    spdlog::info("campaign {}: node {} was uncordoned after remediation: suspicion cleared", key,
                 node);
  }
  ListSuspects(ctx, emit);
  return Status::Ok();
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
      char score[32];
      std::snprintf(score, sizeof(score), "%.2f", rec.score);
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
