// CampaignHealth::Diagnose: the whitelisted diagnostic checks of each suspect node as Jobs.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <utility>

#include "base/json_fields.h"
#include "controllers/conditions.h"
#include "controllers/node_health/diagnostic_jobs.h"
#include "controllers/node_health/node_health.h"

namespace paratune::controllers {

namespace {

using kube::Json;
namespace res = kube::resources;

// Passed and Failed are verdicts (the ledger has them); Inconclusive is a Job that could not
// judge the node (no output that parses): another campaign may run the check at once, and this
// one runs it again after kInconclusiveRetryAfter, kDiagnosticAttempts times in all.
bool IsTerminal(const Json& entry) {
  const std::string s = entry.is_object() ? entry.value("state", "") : "";
  return s == "Passed" || s == "Failed" || s == "Inconclusive";
}

std::vector<std::string> EvidenceKinds(const health::NodeRecord* rec) {
  std::vector<std::string> kinds;
  if (rec == nullptr) return kinds;
  for (const auto& e : rec->evidence) {
    if (std::find(kinds.begin(), kinds.end(), e.kind) == kinds.end()) kinds.push_back(e.kind);
  }
  return kinds;
}

std::string Label(const Json& obj, const char* key) {
  const Json& labels = obj.value("metadata", Json::object()).value("labels", Json::object());
  return labels.is_object() && labels.contains(key) && labels[key].is_string()
             ? labels[key].get<std::string>()
             : std::string();
}

// The newest verdict on `check` among the node's evidence: "Passed"/"Failed" and its summary.
std::optional<std::pair<std::string, std::string>> NewestVerdict(const health::NodeRecord& rec,
                                                                 const std::string& check) {
  for (auto e = rec.evidence.rbegin(); e != rec.evidence.rend(); ++e) {
    if (e->trial != check || (e->kind != "DiagnosticPassed" && e->kind != "DiagnosticFailed")) {
      continue;
    }
    const std::string prefix = check + ": ";
    return std::make_pair(
        std::string(e->kind == "DiagnosticPassed" ? "Passed" : "Failed"),
        e->detail.rfind(prefix, 0) == 0 ? e->detail.substr(prefix.size()) : e->detail);
  }
  return std::nullopt;
}

// The verdict the ledger holds on `check` for the node's current suspicion (whichever
// campaign's Job gave it); nullopt when the check has not been judged since it became suspect.
std::optional<std::pair<std::string, std::string>> LedgerVerdict(const health::NodeLedger& ledger,
                                                                 const std::string& node,
                                                                 const std::string& check) {
  const health::NodeRecord* rec = ledger.Find(node);
  if (rec == nullptr) return std::nullopt;
  const bool failed = rec->checks_failed.count(check) > 0;
  if (!failed && rec->checks_passed.count(check) == 0) return std::nullopt;
  auto newest = NewestVerdict(*rec, check);
  const std::string state = failed ? "Failed" : "Passed";
  return std::make_pair(state, newest && newest->first == state
                                   ? newest->second
                                   : std::string(failed ? "failed" : "passed"));
}

// A check this campaign waited on (another campaign ran it) for a node no longer suspect: the
// verdict that ended the suspicion, or null when the ledger no longer has one (dropped).
Json SettleWaited(const Json& entry, const health::NodeLedger& ledger) {
  const health::NodeRecord* rec = ledger.Find(entry.value("node", ""));
  auto verdict = rec != nullptr ? NewestVerdict(*rec, entry.value("check", "")) : std::nullopt;
  if (!verdict) return Json();
  Json settled = entry;
  settled["state"] = verdict->first;
  settled["summary"] = verdict->second + " (checked for another campaign)";
  return settled;
}

constexpr int64_t kDiagnosticAttempts = 3;
constexpr std::chrono::minutes kInconclusiveRetryAfter{5};

int64_t AttemptOf(const Json& entry) {
  return entry.is_object() ? std::max<int64_t>(1, entry.value("attempt", int64_t{1})) : 1;
}

// Whether the Job ended (a terminal condition) at `cutoff` or before; a condition that does not
// say when counts as before. A Job that has not ended is false.
bool EndedBy(const Json& job, SystemTime cutoff) {
  const Json* ended = TerminalJobCondition(job);
  SystemTime t;
  return ended != nullptr &&
         (!ParseRfc3339(ended->value("lastTransitionTime", ""), &t) || t <= cutoff);
}

// An Inconclusive check of this campaign with attempts left whose Job ended
// kInconclusiveRetryAfter ago. A Job of its name that has not ended is the next attempt already
// (its status not written yet): it is left to run.
bool RetryDue(const Json& previous, const Json& job, const std::string& now) {
  if (!previous.is_object() || previous.value("state", "") != "Inconclusive") return false;
  if (AttemptOf(previous) >= kDiagnosticAttempts) return false;
  SystemTime at;
  if (!ParseRfc3339(now, &at)) return false;
  return EndedBy(job, at - kInconclusiveRetryAfter);
}

}  // namespace

Result<Json> CampaignHealth::DiagnoseCheck(HealthContext& ctx, const std::string& node,
                                           const std::string& check, const Json& previous,
                                           std::vector<health::CheckResult>* results,
                                           const HealthEmit& emit) {
  const std::string ns = kube::NamespaceOf(*ctx.campaign);
  const std::string name = DiagnosticJobName(kube::NameOf(*ctx.campaign), check, node);
  Json entry = {{"node", node}, {"check", check}, {"jobName", name}, {"state", "Running"}};
  if (AttemptOf(previous) > 1) entry["attempt"] = AttemptOf(previous);
  // The cache has our own creates at once (Wrote below); one it lacks is created, and a create
  // that finds it (someone else's, or ours before a restart's sync) is judged when cached.
  kube::ObjectPtr cached = jobs_->Get({ns, name});
  Json job;
  if (cached) job = *cached;
  const std::string uid = kube::UidOf(*ctx.campaign);
  if (job.is_null()) {
    // Another campaign's Job judged it during this suspicion: its verdict holds here too.
    if (auto verdict = LedgerVerdict(ctx.ledger, node, check)) {
      Json adopted = {{"node", node},
                      {"check", check},
                      {"state", verdict->first},
                      {"summary", verdict->second + " (checked for another campaign)"}};
      if (previous != adopted) {
        EmitOnce(ctx, "diag-adopted|" + node + "|" + check + "|" + verdict->first, emit,
                 verdict->first == "Passed" ? "Normal" : "Warning", reasons::kDiagnosticResult,
                 check + " on " + node + " " + (verdict->first == "Passed" ? "passed" : "failed") +
                     " (checked for another campaign): " + verdict->second);
      }
      return adopted;
    }
    if (!claims_.Claim(uid, node, check, {ns, name})) {
      return Json{{"node", node},
                  {"check", check},
                  {"state", "Running"},
                  {"summary",
                   "running for another campaign that used this node; its verdict "
                   "applies here too"}};
    }
    std::string peer;
    if (check == "nccl-allreduce") {
      for (const auto& n : NodesUsed(*ctx.trial_runs)) {
        if (!ctx.ledger.IsSuspect(n)) {
          peer = n;
          break;
        }
      }
      if (peer.empty()) {  // no healthy peer this campaign knows of: skip, let another try
        claims_.Release(uid, node, check);
        return Json();
      }
    }
    DiagnosticJobOptions o;
    o.mode = opts_.diagnostics;
    o.paratune_image = opts_.paratune_image;
    auto rendered = RenderDiagnosticJob(*ctx.campaign, check, node, peer, o);
    if (!rendered.ok()) {
      claims_.Release(uid, node, check);
      EmitOnce(ctx, "diag-render|" + name, emit, "Warning", reasons::kDiagnosticResult,
               "cannot run " + check + " on " + node + ": " + rendered.status().message());
      return Json();
    }
    if (auto svc = RenderDiagnosticService(*ctx.campaign, check, node, o)) {
      auto s = client_->Create(res::kServices, ns, *svc);
      if (!s.ok() && s.status().code() != StatusCode::kAlreadyExists) return s.status();
    }
    auto created = client_->Create(res::kJobs, ns, *rendered);
    if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
      claims_.Release(uid, node, check);
      return created.status();
    }
    // Our Job of the check ended Inconclusive and was deleted to run it again (below).
    const bool again = previous.is_object() && previous.value("state", "") == "Inconclusive" &&
                       previous.value("jobName", "") == name;
    if (again) entry["attempt"] = AttemptOf(previous) + 1;
    if (created.ok()) {
      jobs_->Wrote(*created);
      emit("Normal", reasons::kDiagnosticStarted,
           "running diagnostic check " + check + " on suspect node " + node + " (Job " + name +
               (peer.empty() ? "" : ", peer " + peer) + ")" +
               (again ? ", attempt " + std::to_string(AttemptOf(entry)) + " of " +
                            std::to_string(kDiagnosticAttempts) + ": the last one judged nothing"
                      : ""));
    }
    return entry;
  }
  if (RetryDue(previous, job, ctx.now)) {
    // Run it again: the Job goes first (its name is the check's); the next reconcile that finds
    // it gone creates the next attempt.
    if (!ObjectField(job, "metadata").contains("deletionTimestamp")) {
      Status deleted =
          client_->Delete(res::kJobs, ns, name, kube::DeleteOptions{"Background", {}, "", ""});
      if (!deleted.ok() && deleted.code() != StatusCode::kNotFound) return deleted;
    }
    return previous;
  }
  if (IsTerminal(previous)) return previous;  // judged and recorded already
  // A Job of that name that paratune did not render (someone made it first) proves nothing.
  DiagnosticJobOptions expect;
  expect.mode = opts_.diagnostics;
  expect.paratune_image = opts_.paratune_image;
  auto rendered = RenderDiagnosticJob(*ctx.campaign, check, node, node + "-peer", expect);
  const Json& job_pod = ObjectField(ObjectField(ObjectField(job, "spec"), "template"), "spec");
  if (rendered.ok() && !SameDiagnosticPods(job_pod, (*rendered)["spec"]["template"]["spec"])) {
    EmitOnce(ctx, "diag-foreign|" + name, emit, "Warning", reasons::kDiagnosticResult,
             "Job " + name +
                 " was not made by paratune (its containers differ): its result is "
                 "ignored; delete it to let the check run");
    entry["summary"] = "Job " + name + " was not made by paratune: ignored";
    claims_.Release(uid, node, check);  // it judges nothing: another campaign may run the check
    return entry;
  }
  // Ours, and running or done: held against other campaigns (again, after a restart).
  (void)claims_.Claim(uid, node, check, {ns, name});
  std::vector<Json> pods;
  if (pods_ != nullptr) {
    for (const auto& p : pods_->List(ns)) {
      if (Label(*p, "job-name") == name || Label(*p, kDiagnosticJobLabel) == name) {
        pods.push_back(*p);
      }
    }
  }
  auto log_of = [this](const Json& pod) {
    kube::PodLogOptions lo;
    lo.tail_lines = 400;
    lo.limit_bytes = 256 * 1024;
    auto log = client_->GetPodLog(kube::NamespaceOf(pod), kube::NameOf(pod), lo);
    return log.ok() ? *log : std::string();
  };
  auto result = InterpretDiagnosticJob(job, pods, log_of,
                                       health::ExpectationsFor(ctx.spec->hardware.accelerator));
  if (!result) return entry;
  entry["summary"] = result->summary;
  if (result->inconclusive) {
    // Neither clears nor convicts the node (a pod deleted or stuck, output not in the tool's
    // format): nothing for the ledger, and the check is free for another campaign to run.
    entry["state"] = "Inconclusive";
    claims_.Release(uid, node, check);
    const int64_t attempt = AttemptOf(entry);
    emit("Warning", reasons::kDiagnosticResult,
         check + " on " + node + " could not judge the node: " + result->summary +
             (attempt < kDiagnosticAttempts
                  ? " (attempt " + std::to_string(attempt) + " of " +
                        std::to_string(kDiagnosticAttempts) + "; it runs again " +
                        std::to_string(kInconclusiveRetryAfter.count()) + " minutes after it ended)"
                  : " (the last of " + std::to_string(kDiagnosticAttempts) +
                        " attempts: this campaign does not run it again)"));
    return entry;
  }
  entry["state"] = result->passed ? "Passed" : "Failed";
  if (result->measurements.is_object()) entry["measurements"] = result->measurements;
  results->push_back(*result);
  emit(result->passed ? "Normal" : "Warning", reasons::kDiagnosticResult,
       check + " on " + node + " " + (result->passed ? "passed" : "failed") + ": " +
           result->summary);
  return entry;
}

Status CampaignHealth::Diagnose(HealthContext& ctx, const HealthEmit& emit) {
  const Json& old_health = ObjectField(*ctx.campaign, "status").value("nodeHealth", Json::object());
  const Json& old =
      old_health.is_object() ? old_health.value("diagnostics", Json::array()) : Json::array();
  std::map<std::string, Json> previous;  // "node|check"
  Json out = Json::array();
  for (const auto& d : old.is_array() ? old : Json::array()) {
    const std::string node = d.value("node", "");
    previous[node + "|" + d.value("check", "")] = d;
    // Checks of nodes no longer suspect stay as history; one this campaign only waited on
    // takes the verdict another campaign's Job gave.
    if (std::find(ctx.suspects.begin(), ctx.suspects.end(), node) == ctx.suspects.end()) {
      const bool waited = !IsTerminal(d) && d.value("jobName", "").empty();
      Json kept = waited ? SettleWaited(d, ctx.ledger) : d;
      if (!kept.is_null()) out.push_back(kept);
    }
  }
  std::vector<health::CheckResult> results;
  if (opts_.diagnostics != "off" && jobs_ != nullptr) {
    for (const auto& node : ctx.suspects) {
      for (const auto& check : health::ChecksFor(EvidenceKinds(ctx.ledger.Find(node)))) {
        auto it = previous.find(node + "|" + check);
        auto entry = DiagnoseCheck(ctx, node, check, it == previous.end() ? Json() : it->second,
                                   &results, emit);
        if (!entry.ok()) return entry.status();
        if (!entry->is_null()) out.push_back(*entry);
      }
    }
  }
  ctx.node_health["diagnostics"] = out;
  if (results.empty()) return Status::Ok();
  auto ledger = ledger_->Modify([results, now = ctx.now](health::NodeLedger* l) {  // kept
    for (const auto& r : results) l->RecordDiagnostic(r.node, r.check, r.passed, r.summary, now);
  });
  if (ledger.ok()) {  // the verdicts are the ledger's now: the checks need no holder
    for (const auto& r : results) claims_.Release(kube::UidOf(*ctx.campaign), r.node, r.check);
  }
  if (!ledger.ok()) {
    LedgerProblem(ctx, emit, "WriteFailed", ledger.status().message());
    return Status::Ok();
  }
  ctx.ledger = std::move(*ledger);
  std::vector<std::string> still;
  Json listed = Json::array();
  for (const auto& s : ctx.node_health.value("suspectNodes", Json::array())) {
    const std::string node = s.value("name", "");
    if (ctx.ledger.IsSuspect(node)) {
      still.push_back(node);
      listed.push_back(s);
      continue;
    }
    claims_.ReleaseNode(node);
    emit("Normal", reasons::kNodeCleared,
         "node " + node +
             " passed its diagnostic checks: no longer suspect, later trials may "
             "run on it again");
    // A later suspicion runs its checks afresh: drop this one's Jobs.
    for (const auto& d : out) {
      if (d.value("node", "") != node || d.value("jobName", "").empty()) continue;
      (void)client_->Delete(res::kJobs, kube::NamespaceOf(*ctx.campaign), d.value("jobName", ""),
                            kube::DeleteOptions{"Background", {}, "", ""});
    }
  }
  ctx.suspects = still;
  ctx.node_health["suspectNodes"] = listed;
  return Status::Ok();
}

}  // namespace paratune::controllers
