// CampaignHealth::Remediate: proposals in status.remediations, and acting on approved ones only.
// Who may approve what (docs/security.md):
//  - CordonNode changes a Node for every tenant, so only someone Kubernetes lets write
//    ConfigMaps in the operator's namespace may approve it: the approval is the ConfigMap
//    ClusterApprovalName(id) there, created after the proposal, with data remediation=<id>. The
//    API server's RBAC decides, and its audit log records who created it; a namespace editor,
//    who may annotate campaigns, cannot. The campaign annotations never cordon.
//  - RetryTrial re-runs one of the campaign's own trials in its namespace: the annotations
//    tuning.paratune.dev/approve and approved-by on the campaign approve it.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "base/json_fields.h"
#include "base/strings.h"
#include "controllers/conditions.h"
#include "controllers/node_health/node_health.h"

namespace paratune::controllers {

namespace {

using kube::Json;
namespace res = kube::resources;

std::string Annotation(const Json& obj, const char* key) {
  const Json& a = obj.value("metadata", Json::object()).value("annotations", Json::object());
  return a.is_object() && a.contains(key) && a[key].is_string() ? a[key].get<std::string>() : "";
}

Json* FindById(Json& rems, const std::string& id) {
  for (auto& r : rems) {
    if (r.value("id", "") == id) return &r;
  }
  return nullptr;
}

Json Proposal(const std::string& id, const std::string& action, const std::string& node,
              const std::string& trial, const std::string& reason, const std::string& now) {
  return {{"id", id},         {"action", action},    {"node", node},     {"trialName", trial},
          {"reason", reason}, {"state", "Proposed"}, {"proposedAt", now}};
}

}  // namespace

Status CampaignHealth::Remediate(HealthContext& ctx, const HealthEmit& emit) {
  const Json& old = ObjectField(*ctx.campaign, "status").value("remediations", Json());
  Json rems = old.is_array() ? old : Json::array();
  auto propose = [&](Json proposal) {
    const std::string id = proposal["id"].get<std::string>();
    if (FindById(rems, id) != nullptr) return;
    const bool cluster = proposal["action"] == "CordonNode";
    emit("Normal", reasons::kRemediationProposed,
         "proposed " + proposal["action"].get<std::string>() + " " + id + ": " +
             proposal["reason"].get<std::string>() + ". Nothing happens until " +
             (cluster
                  ? "a cluster administrator approves: " + ClusterApproveCommand(ledger_->ns(), id)
                  : "a person approves: " + ApproveCommand(*ctx.campaign, id)));
    rems.push_back(std::move(proposal));
  };
  for (const auto& node : ctx.suspects) {
    const health::NodeRecord* rec = ctx.ledger.Find(node);
    std::string why = "node " + node + " is suspect";
    if (rec != nullptr) {
      const auto evidence = health::SuspectReasons(*rec, 3);
      for (size_t i = 0; i < evidence.size(); ++i) why += (i == 0 ? ": " : "; ") + evidence[i];
    }
    propose(Proposal("cordon-" + node, "CordonNode", node, "", why + "; cordon it", ctx.now));
  }
  for (const auto& rec : ctx.session->Summary().anomalous) {
    if (!rec.anomaly) continue;
    const auto& nodes = rec.anomaly->node_names.empty() ? rec.node_names : rec.anomaly->node_names;
    propose(Proposal("retry-" + rec.name, "RetryTrial", nodes.empty() ? "" : nodes.front(),
                     rec.name,
                     rec.name + " is anomalous (" + health::AnomalyKindName(rec.anomaly->kind) +
                         "); re-run it on other nodes",
                     ctx.now));
  }
  // A cordon proposed for a node that has since been cleared is moot.
  for (auto& r : rems) {
    if (r.value("state", "") == "Proposed" && r.value("action", "") == "CordonNode" &&
        !ctx.ledger.IsSuspect(r.value("node", ""))) {
      r["state"] = "Obsolete";
      r["message"] = "the node is no longer suspect";
    }
  }
  ctx.remediations = std::move(rems);
  return ApplyApproved(ctx, emit);
}

ClusterApprovals::ClusterApprovals(kube::KubeClient* client, std::string ns, Millis recheck,
                                   TimeSource* clock)
    : client_(client), ns_(std::move(ns)), recheck_(recheck), clock_(clock) {}

Result<std::string> ClusterApprovals::Find(const Json& remediation) {
  const std::string id = remediation.value("id", "");
  const std::string name = ClusterApprovalName(id);
  const SteadyTime now = clock_->Now();
  {
    std::lock_guard lock(mu_);
    auto it = missing_since_.find(name);
    if (it != missing_since_.end() && now - it->second < recheck_) return std::string();
  }
  auto cm = client_->Get(res::kConfigMaps, ns_, name);
  if (!cm.ok()) {
    const StatusCode c = cm.status().code();
    if (c != StatusCode::kNotFound && c != StatusCode::kPermissionDenied) return cm.status();
    std::lock_guard lock(mu_);
    if (missing_since_.size() >= kMaxMissing) missing_since_.clear();  // a bound; asked again
    missing_since_[name] = now;
    return std::string();
  }
  {
    std::lock_guard lock(mu_);
    missing_since_.erase(name);
  }
  const Json& data = cm->value("data", Json::object());
  if (!data.is_object() || data.value("remediation", "") != id) return std::string();
  // An approval older than the proposal was for an earlier suspicion of the node.
  const std::string created = cm->value("metadata", Json::object()).value("creationTimestamp", "");
  if (created.empty() || created < remediation.value("proposedAt", "")) return std::string();
  const std::string note = data.value("approvedBy", "");
  return "configmap " + ns_ + "/" + name + (note.empty() ? "" : " (" + note + ")");
}

Status CampaignHealth::ApplyApproved(HealthContext& ctx, const HealthEmit& emit) {
  for (auto& r : ctx.remediations) {
    if (r.value("state", "") != "Proposed" || r.value("action", "") != "CordonNode") continue;
    auto by = approvals_.Find(r);
    if (!by.ok()) return by.status();
    if (!by->empty()) PARATUNE_RETURN_IF_ERROR(Apply(ctx, r, *by, emit));
  }
  const std::string approve = Annotation(*ctx.campaign, kApproveAnnotation);
  if (approve.empty()) return Status::Ok();
  const std::string by = Annotation(*ctx.campaign, kApprovedByAnnotation);
  if (by.empty()) {
    EmitOnce(ctx, "refused|" + approve, emit, "Warning", reasons::kApprovalRefused,
             std::string("approval of \"") + approve + "\" refused: " + kApprovedByAnnotation +
                 " is missing (paratune records who approved every remediation); nothing done");
    return Status::Ok();
  }
  for (const auto& id : SplitList(approve)) {
    Json* r = FindById(ctx.remediations, id);
    if (r == nullptr) {
      EmitOnce(ctx, "unknown|" + id, emit, "Warning", reasons::kApprovalIgnored,
               "approved id \"" + id + "\" names no remediation of this campaign; ignored");
      continue;
    }
    if (r->value("state", "") != "Proposed") continue;  // applied, failed or moot: never again
    if (r->value("action", "") == "CordonNode") {
      EmitOnce(ctx, "cluster|" + id, emit, "Warning", reasons::kApprovalRefused,
               "approval of \"" + id + "\" by annotation refused: cordoning a node affects " +
                   "every tenant, so a cluster administrator approves it: " +
                   ClusterApproveCommand(ledger_->ns(), id));
      continue;
    }
    PARATUNE_RETURN_IF_ERROR(Apply(ctx, *r, by, emit));
  }
  return Status::Ok();
}

Status CampaignHealth::Apply(HealthContext& ctx, Json& r, const std::string& by,
                             const HealthEmit& emit) {
  const std::string id = r.value("id", "");
  const std::string action = r.value("action", "");
  std::string message;
  bool ok = true;
  if (action == "CordonNode" && !opts_.cordon) {
    ok = false;
    message = "not cordoned: node remediation is off (operator flag --node-remediation, chart " +
              std::string("nodeHealth.remediation.enabled), so the operator may not patch ") +
              "Nodes; a cluster administrator runs: kubectl cordon " + r.value("node", "");
  } else if (action == "CordonNode") {
    const std::string node = r.value("node", "");
    auto patched = client_->Patch(res::kNodes, "", node, kube::PatchType::kMerge,
                                  {{"spec", {{"unschedulable", true}}}});
    if (!patched.ok()) {
      // Transient errors retry the reconcile; a missing node or a denial is final.
      const StatusCode c = patched.status().code();
      if (c != StatusCode::kNotFound && c != StatusCode::kPermissionDenied &&
          c != StatusCode::kInvalidArgument) {
        return patched.status();
      }
      ok = false;
      message = "cordon failed: " + patched.status().message();
    } else {
      message = "node " + node + " cordoned (spec.unschedulable=true)";
    }
  } else if (action == "RetryTrial") {
    std::set<std::string> avoid(ctx.suspects.begin(), ctx.suspects.end());
    if (const TrialRecord* t = ctx.session->pool().FindTrial(r.value("trialName", ""))) {
      avoid.insert(t->node_names.begin(), t->node_names.end());
      if (t->anomaly) avoid.insert(t->anomaly->node_names.begin(), t->anomaly->node_names.end());
    }
    std::vector<std::string> nodes(avoid.begin(), avoid.end());
    Status s = ctx.session->RequestRetry(r.value("trialName", ""), nodes);
    if (s.ok()) {
      ctx.pool_changed = true;
      std::string list;
      for (const auto& n : nodes) list += (list.empty() ? "" : ", ") + n;
      message = "re-run of " + r.value("trialName", "") + " queued, avoiding " + list;
    } else if (s.code() == StatusCode::kFailedPrecondition &&
               s.message().find("already") != std::string::npos) {
      message = "re-run already queued: " + s.message();  // a restart after the pool was saved
    } else {
      ok = false;
      message = "retry refused: " + s.message();
    }
  } else {
    ok = false;
    message = "unknown action " + action;
  }
  r["state"] = ok ? "Applied" : "Failed";
  r["approvedBy"] = by;
  r["approvedAt"] = ctx.now;
  r["completedAt"] = ctx.now;
  r["message"] = message;
  spdlog::info("campaign {}/{}: remediation {} approved by {}: {}",
               kube::NamespaceOf(*ctx.campaign), kube::NameOf(*ctx.campaign), id, by, message);
  emit(ok ? "Normal" : "Warning", ok ? reasons::kRemediationApplied : reasons::kRemediationFailed,
       id + " approved by " + by + ": " + message);
  return Status::Ok();
}

}  // namespace paratune::controllers
