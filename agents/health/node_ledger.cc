#include "agents/health/node_ledger.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "agents/core/failure_category.h"
#include "base/json_fields.h"
#include "base/strings.h"

namespace paratune::health {

namespace {

std::string TrialKey(const std::string& campaign, const std::string& trial) {
  return campaign + "/" + trial;
}

bool Adverse(const std::string& kind) {
  return kind != "Healthy" && kind != "DiagnosticPassed" && kind != "Cleared";
}

nlohmann::json EvidenceJson(const NodeEvidence& e) {
  return {{"time", e.time}, {"campaign", e.campaign}, {"trial", e.trial},
          {"kind", e.kind}, {"detail", e.detail},     {"weight", RoundTo(e.weight, 3)}};
}

Result<NodeEvidence> EvidenceFromJson(const nlohmann::json& j, const std::string& path) {
  NodeEvidence e;
  JsonFields f(j, path);
  if (!j.is_object()) return Status::Invalid(path + ": must be an object");
  PARATUNE_RETURN_IF_ERROR(f.ReadString("time", &e.time));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("campaign", &e.campaign));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("trial", &e.trial));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("kind", &e.kind));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("detail", &e.detail));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("weight", -1e6, 1e6, &e.weight));
  return e;
}

Status ReadStringSet(const JsonFields& f, const std::string& key, std::set<std::string>* out) {
  std::vector<std::string> v;
  PARATUNE_RETURN_IF_ERROR(f.ReadStringList(key, &v));
  out->insert(v.begin(), v.end());
  return Status::Ok();
}

Result<NodeRecord> RecordFromJson(const nlohmann::json& j, const std::string& path) {
  NodeRecord r;
  JsonFields f(j, path);
  if (!j.is_object()) return Status::Invalid(path + ": must be an object");
  if (!f.Has("name")) return Status::Invalid(path + ".name: required");
  PARATUNE_RETURN_IF_ERROR(f.ReadString("name", &r.name));
  if (r.name.empty()) return Status::Invalid(path + ".name: must not be empty");
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("score", -1e6, 1e6, &r.score));
  PARATUNE_RETURN_IF_ERROR(f.ReadBool("suspect", &r.suspect));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("suspectSince", &r.suspect_since));
  PARATUNE_RETURN_IF_ERROR(ReadStringSet(f, "checksPassed", &r.checks_passed));
  PARATUNE_RETURN_IF_ERROR(ReadStringSet(f, "checksFailed", &r.checks_failed));
  const nlohmann::json& camps = f.Get("campaigns");
  if (!camps.is_null() && !camps.is_object()) {
    return Status::Invalid(f.Path("campaigns") + ": must be an object");
  }
  for (const auto& [c, w] : camps.items()) {
    if (!w.is_number())
      return Status::Invalid(f.Path("campaigns") + "." + c + ": must be a number");
    r.campaigns[c] = w.get<double>();
  }
  const nlohmann::json& ev = f.Get("evidence");
  if (!ev.is_null() && !ev.is_array())
    return Status::Invalid(f.Path("evidence") + ": must be a list");
  for (size_t i = 0; i < ev.size(); ++i) {
    Result<NodeEvidence> e =
        EvidenceFromJson(ev[i], f.Path("evidence") + "[" + std::to_string(i) + "]");
    if (!e.ok()) return e.status();
    r.evidence.push_back(*e);
  }
  return r;
}

// The evidence one trial adds to each of its nodes, before sharing: 0 for failures that say
// nothing about nodes (OOM, invalid parallelism, ...). Returns the evidence kind in *kind.
double TrialWeight(const TrialObservation& obs, const LedgerOptions& o, std::string* kind,
                   std::string* detail) {
  double conf = std::clamp(obs.failure_confidence, 0.0, 100.0) / 100.0;
  const FailureCategory category = FailureCategoryOf(obs.failure_category);
  if (category == FailureCategory::kNodeFault) {
    *kind = ToString(FailureCategory::kNodeFault);
    *detail = "failed with a node-level error (confidence " + std::to_string(int(conf * 100)) + ")";
    return o.node_fault_weight * conf;
  }
  if (category == FailureCategory::kCollectiveTimeout) {
    *kind = ToString(FailureCategory::kCollectiveTimeout);
    *detail = "a collective timed out (confidence " + std::to_string(int(conf * 100)) + ")";
    return o.collective_timeout_weight * conf;
  }
  if (!obs.failure_category.empty()) return 0;
  if (obs.anomaly) {
    *kind = AnomalyKindName(obs.anomaly->kind);
    *detail = obs.anomaly->summary;
    return o.anomaly_weight;
  }
  *kind = "Healthy";
  *detail = "ran as predicted";
  return -o.healthy_credit;
}

nlohmann::json NodeJson(const NodeRecord& r) {
  nlohmann::json ev = nlohmann::json::array();
  for (const NodeEvidence& e : r.evidence) ev.push_back(EvidenceJson(e));
  nlohmann::json j = {{"name", r.name},
                      {"score", RoundTo(r.score, 3)},
                      {"suspect", r.suspect},
                      {"suspectSince", r.suspect_since},
                      {"checksPassed", r.checks_passed},
                      {"checksFailed", r.checks_failed},
                      {"evidence", ev}};
  if (!r.campaigns.empty()) {
    nlohmann::json c = nlohmann::json::object();
    for (const auto& [k, v] : r.campaigns) c[k] = RoundTo(v, 3);
    j["campaigns"] = c;
  }
  return j;
}

size_t NodeBytes(const NodeRecord& r) { return NodeJson(r).dump().size() + 1; }

std::string LastSeen(const NodeRecord& r) {
  return r.evidence.empty() ? std::string() : r.evidence.back().time;
}

}  // namespace

std::vector<std::string> SuspectReasons(const NodeRecord& r, size_t max_reasons) {
  std::vector<std::string> out;
  for (auto it = r.evidence.rbegin(); it != r.evidence.rend() && out.size() < max_reasons; ++it) {
    if (!Adverse(it->kind)) continue;
    std::string subject = it->trial.empty() ? it->detail : it->trial;
    out.push_back(subject + " " + it->kind);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

NodeLedger::NodeLedger(LedgerOptions o) : options_(std::move(o)) {}

NodeRecord& NodeLedger::Node(const std::string& name) {
  NodeRecord& r = nodes_[name];
  r.name = name;
  return r;
}

void NodeLedger::AddEvidence(NodeRecord& r, NodeEvidence e) {
  r.evidence.push_back(std::move(e));
  if (r.evidence.size() > options_.max_evidence) {
    r.evidence.erase(r.evidence.begin(),
                     r.evidence.begin() + (r.evidence.size() - options_.max_evidence));
  }
}

void NodeLedger::MarkSuspect(NodeRecord& r, const std::string& now) {
  r.suspect = true;
  r.suspect_since = now;
  r.checks_passed.clear();
}

bool NodeLedger::Remember(const std::string& key) {
  if (!trials_seen_.insert(key).second) return false;
  trial_order_.push_back(key);
  while (trial_order_.size() > options_.max_remembered_trials) {
    trials_seen_.erase(trial_order_.front());
    trial_order_.pop_front();
  }
  return true;
}

// Sharing: a synchronous job runs at the pace of its slowest node and fails when any node fails,
// so adverse evidence from an n-node trial is split 1/n among its nodes: a faulty node rises with
// every bad trial it is in, while each partner gets only a share once and is credited back by its
// healthy trials with other partners. A healthy trial credits every node in full: all of them ran
// well. Scores never fall below min_score, so a node's long healthy past cannot hide a fault that
// starts later.
std::vector<std::string> NodeLedger::RecordTrial(const TrialObservation& obs,
                                                 const std::string& now) {
  std::vector<std::string> became;
  if (obs.nodes.empty() || !Remember(TrialKey(obs.campaign, obs.trial))) return became;
  std::string kind, detail;
  double w = TrialWeight(obs, options_, &kind, &detail);
  if (w == 0) return became;
  std::set<std::string> unique(obs.nodes.begin(), obs.nodes.end());
  double share = w > 0 ? w / static_cast<double>(unique.size()) : w;
  for (const std::string& name : unique) {
    NodeRecord& r = Node(name);
    double before = r.score;
    r.score = options_.min_campaigns > 1 ? Contribute(r, obs.campaign, share)
                                         : std::max(options_.min_score, r.score + share);
    AddEvidence(r, {now, obs.campaign, obs.trial, kind, detail, r.score - before});
    if (!r.suspect && r.score >= options_.suspect_threshold) {
      MarkSuspect(r, now);
      became.push_back(name);
    }
  }
  return became;
}

// Per-campaign weighting: each campaign's net adverse weight counts up to
// threshold / min_campaigns; the node's score is the sum (never below a failed check's floor).
double NodeLedger::Contribute(NodeRecord& r, const std::string& campaign, double share) const {
  double& mine = r.campaigns[campaign];
  mine = std::max(0.0, mine + share);
  if (mine == 0) r.campaigns.erase(campaign);
  while (r.campaigns.size() > options_.max_campaigns_per_node) {
    auto smallest =
        std::min_element(r.campaigns.begin(), r.campaigns.end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; });
    r.campaigns.erase(smallest);
  }
  const double cap = options_.suspect_threshold / options_.min_campaigns;
  double score = 0;
  for (const auto& [c, w] : r.campaigns) score += std::min(w, cap);
  if (!r.checks_failed.empty()) score = std::max(score, options_.suspect_threshold);
  return std::max(options_.min_score, score);
}

bool NodeLedger::RecordDiagnostic(const std::string& node, const std::string& check, bool passed,
                                  const std::string& summary, const std::string& now) {
  NodeRecord& r = Node(node);
  AddEvidence(r, {now, "", check, passed ? "DiagnosticPassed" : "DiagnosticFailed",
                  check + ": " + summary, 0});
  if (!passed) {
    r.checks_failed.insert(check);
    r.checks_passed.erase(check);
    if (r.suspect) return false;
    r.score = std::max(r.score, options_.suspect_threshold);
    MarkSuspect(r, now);
    return true;
  }
  r.checks_failed.erase(check);
  r.checks_passed.insert(check);
  if (!r.suspect || !r.checks_failed.empty()) return false;
  for (const std::string& c : options_.clearing_checks) {
    if (r.checks_passed.count(c) == 0) return false;
  }
  Clear(node, "every diagnostic check passed", now);
  return true;
}

void NodeLedger::Clear(const std::string& node, const std::string& reason, const std::string& now) {
  NodeRecord& r = Node(node);
  AddEvidence(r, {now, "", "", "Cleared", reason, -r.score});
  r.score = 0;
  r.campaigns.clear();
  r.suspect = false;
  r.suspect_since.clear();
  r.checks_passed.clear();
  r.checks_failed.clear();
}

std::vector<NodeRecord> NodeLedger::Suspects() const {
  std::vector<NodeRecord> out;
  for (const auto& [name, r] : nodes_) {
    if (r.suspect) out.push_back(r);
  }
  return out;
}

std::vector<std::string> NodeLedger::SuspectNames() const {
  std::vector<std::string> out;
  for (const auto& [name, r] : nodes_) {
    if (r.suspect) out.push_back(name);
  }
  return out;
}

bool NodeLedger::IsSuspect(const std::string& node) const {
  const NodeRecord* r = Find(node);
  return r != nullptr && r->suspect;
}

const NodeRecord* NodeLedger::Find(const std::string& node) const {
  auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : &it->second;
}

nlohmann::json NodeLedger::ToJson() const {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& [name, r] : nodes_) nodes.push_back(NodeJson(r));
  return {{"version", 1}, {"nodes", nodes}, {"trials", trial_order_}};
}

CompactionReport NodeLedger::Compact(size_t max_bytes) {
  CompactionReport rep;
  size_t bytes = ToJson().dump().size();
  rep.bytes_before = bytes;
  auto evict = [&](auto&& eligible, auto&& before) {
    std::vector<const NodeRecord*> order;
    for (const auto& [name, r] : nodes_) {
      if (!r.suspect && eligible(r)) order.push_back(&r);
    }
    std::sort(order.begin(), order.end(), before);
    std::vector<std::string> names;
    for (const NodeRecord* r : order) {
      if (bytes <= max_bytes) break;
      bytes -= std::min(bytes, NodeBytes(*r));
      names.push_back(r->name);
    }
    for (const auto& n : names) nodes_.erase(n);
    rep.evicted_nodes += names.size();
  };
  // 1. Healthy nodes seen least recently: nothing is lost but a clean history.
  evict(
      [&](const NodeRecord& r) {
        return r.score <= options_.min_score && r.checks_failed.empty() && r.campaigns.empty();
      },
      [](const NodeRecord* a, const NodeRecord* b) { return LastSeen(*a) < LastSeen(*b); });
  // 2. Shorter histories.
  for (auto& [name, r] : nodes_) {
    if (bytes <= max_bytes) break;
    const size_t keep = r.suspect ? 5 : 2;
    if (r.evidence.size() <= keep) continue;
    const size_t was = NodeBytes(r);
    rep.trimmed_evidence += r.evidence.size() - keep;
    r.evidence.erase(r.evidence.begin(), r.evidence.end() - keep);
    bytes -= std::min(bytes, was - NodeBytes(r));
  }
  // 3. Older idempotency keys (the newest 500 stay: live campaigns' trials are not re-counted).
  while (bytes > max_bytes && trial_order_.size() > 500) {
    bytes -= std::min(bytes, trial_order_.front().size() + 3);
    trials_seen_.erase(trial_order_.front());
    trial_order_.pop_front();
    ++rep.forgotten_trials;
  }
  // 4. Non-suspects with the least adverse weight.
  evict([](const NodeRecord&) { return true; },
        [](const NodeRecord* a, const NodeRecord* b) { return a->score < b->score; });
  rep.bytes = rep.changed() ? ToJson().dump().size() : bytes;
  rep.fits = rep.bytes <= max_bytes;
  return rep;
}

Result<NodeLedger> NodeLedger::FromJson(const nlohmann::json& j, LedgerOptions o) {
  NodeLedger ledger(std::move(o));
  JsonFields f(j, "nodes.json");
  if (!j.is_object()) return Status::Invalid("nodes.json: must be an object");
  PARATUNE_RETURN_IF_ERROR(f.CheckKnownKeys({"version", "nodes", "trials"}));
  int64_t version = 1;
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("version", 1, 1, &version));
  const nlohmann::json& nodes = f.Get("nodes");
  if (!nodes.is_null() && !nodes.is_array()) return Status::Invalid("nodes: must be a list");
  for (size_t i = 0; i < nodes.size(); ++i) {
    Result<NodeRecord> r = RecordFromJson(nodes[i], "nodes[" + std::to_string(i) + "]");
    if (!r.ok()) return r.status();
    ledger.nodes_[r->name] = *r;
  }
  std::vector<std::string> trials;
  PARATUNE_RETURN_IF_ERROR(f.ReadStringList("trials", &trials));
  for (const std::string& t : trials) ledger.Remember(t);
  return ledger;
}

}  // namespace paratune::health
