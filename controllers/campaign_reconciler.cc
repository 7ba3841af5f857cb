#include "controllers/campaign_reconciler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>

#include "agents/core/failure_category.h"
#include "base/json_fields.h"
#include "base/strings.h"
#include "base/utf8.h"
#include "controllers/accelerator_hours.h"
#include "controllers/campaign_status.h"
#include "controllers/conditions.h"
#include "controllers/job_renderer.h"
#include "controllers/knowledge_records.h"
#include "controllers/status_writer.h"
#include "controllers/trial_reconciler.h"
#include "controllers/trial_run_spec.h"
#include "controllers/trial_run_status.h"

namespace paratune::controllers {

namespace {

using kube::Json;
namespace res = kube::resources;

bool IsOpen(const TrialRecord& t) {
  return t.phase == TrialPhase::kPending || t.phase == TrialPhase::kRunning;
}

std::string Short(const std::string& s, size_t n = 240) { return Utf8Head(s, n, "..."); }

}  // namespace

struct TuningCampaignReconciler::Context {
  Json campaign;
  CampaignSpec spec;
  LoadedPool loaded;
  std::unique_ptr<TuningSession> session;
  std::map<std::string, Json> trial_runs;  // by name, owned by this campaign
  bool pool_changed = false;
  // The pool holds what only it records (an outcome ingested, node health): it is written now,
  // never held (ProposeAndPersist).
  bool pool_must_be_written = false;
  std::string now;
  HealthContext health;
  bool health_checked = false;
  AcceleratorHours hours;      // issue 13: spent per trial and in total
  std::string budget_message;  // non-empty: spec.budget.maxAcceleratorHours stops new trials
  // Normal Events of this reconcile by reason, in order, written as one Event per reason when
  // it ends (FlushEvents); proposed: where each trial proposed now is in normal[kProposed].
  std::vector<std::pair<std::string, std::vector<std::string>>> normal;
  std::map<std::string, size_t> proposed;
};

TuningCampaignReconciler::TuningCampaignReconciler(
    kube::KubeClient* client, CampaignInformers informers, MessagePoolStore* store,
    kube::EventRecorder* recorder, std::shared_ptr<const FailureAnalyzer> analyzer,
    EngineFactory engine_factory, TimeSource* time, CampaignReconcilerOptions opts)
    : client_(client),
      informers_(informers),
      store_(store),
      recorder_(recorder),
      analyzer_(std::move(analyzer)),
      engine_factory_(std::move(engine_factory)),
      time_(time),
      opts_(opts),
      own_configmaps_(opts.configmaps == nullptr ? std::make_unique<ConfigMapCache>(client)
                                                 : nullptr),
      configmaps_(opts.configmaps == nullptr ? own_configmaps_.get() : opts.configmaps) {}

void TuningCampaignReconciler::Emit(Context& ctx, const std::string& type,
                                    const std::string& reason, const std::string& message) {
  spdlog::info("campaign {}/{}: {}: {}", kube::NamespaceOf(ctx.campaign),
               kube::NameOf(ctx.campaign), reason, message);
  if (type != "Normal") {  // Warnings at once, each its own (the recorder counts repeats)
    if (recorder_ != nullptr) recorder_->Event(ctx.campaign, type, reason, Short(message, 1000));
    return;
  }
  for (auto& [r, messages] : ctx.normal) {
    if (r == reason) {
      messages.push_back(message);
      return;
    }
  }
  ctx.normal.push_back({reason, {message}});
}

void TuningCampaignReconciler::FlushEvents(Context& ctx) {
  if (recorder_ == nullptr) return;
  for (const auto& [reason, messages] : ctx.normal) {
    if (messages.size() == 1) {
      recorder_->Event(ctx.campaign, "Normal", reason, Short(messages[0], 1000));
      continue;
    }
    // Several decisions of one kind in one reconcile (a round of proposals, outcomes ingested
    // together): one Event, each decision bounded so that all of them fit.
    const size_t each = 1000 / messages.size();
    std::string text;
    for (size_t i = 0; i < messages.size(); ++i) {
      text += (i == 0 ? "" : " ") + std::string("[") + std::to_string(i + 1) + "/" +
              std::to_string(messages.size()) + "] " + Short(messages[i], each);
    }
    recorder_->Event(ctx.campaign, "Normal", reason, Short(text, 1000));
  }
  ctx.normal.clear();
}

Result<kube::ReconcileResult> TuningCampaignReconciler::Reconcile(const kube::ObjectKey& key) {
  kube::ObjectPtr cached = informers_.campaigns->Get(key);
  if (!cached) return kube::ReconcileResult{};  // deleted: owner references take the rest
  Context ctx;
  ctx.campaign = *cached;
  ctx.now = FormatRfc3339(time_->SystemNow());
  auto spec = CampaignFromJson(ctx.campaign, opts_.parse);
  if (!spec.ok()) {
    PARATUNE_RETURN_IF_ERROR(MarkInvalid(ctx.campaign, spec.status()));
    return kube::ReconcileResult{};
  }
  ctx.spec = std::move(*spec);
  if (opts_.admit) {
    Status admitted = opts_.admit(ctx.campaign, ctx.spec);
    if (admitted.code() == StatusCode::kInvalidArgument) {
      PARATUNE_RETURN_IF_ERROR(MarkInvalid(ctx.campaign, admitted));
      return kube::ReconcileResult{};
    }
    if (!admitted.ok()) return admitted;
  }
  auto loaded = store_->Load(ctx.campaign);
  if (!loaded.ok()) {
    // A stored pool that cannot be read stays unreadable: retrying only repeats the error.
    if (loaded.status().code() == StatusCode::kInvalidArgument) {
      return loaded.status().AsTerminal();
    }
    return loaded.status();
  }
  ctx.loaded = std::move(*loaded);
  for (const auto& tr : informers_.trials->ByOwner(kube::UidOf(ctx.campaign))) {
    ctx.trial_runs[kube::NameOf(*tr)] = *tr;
  }
  if (ctx.loaded.version.empty()) AdoptTrialRuns(ctx);
  SessionDeps deps;
  deps.diagnostician = analyzer_;
  deps.options.seed = opts_.seed;
  deps.options.detect_anomalies = opts_.detect_anomalies;
  if (ctx.spec.agents.engine != "builtin" && engine_factory_) {
    auto engine = engine_factory_(ctx.spec, &ctx.loaded.pool);
    if (engine.ok()) {
      deps.engine = std::move(*engine);
    } else {
      Emit(ctx, "Warning", "EngineUnavailable",
           "using the built-in engine: " + engine.status().message());
    }
  }
  // Warm start: past-optimization records from this namespace, read only until the engine has
  // proposed its first trial (controllers/knowledge_records.h).
  if (ctx.spec.agents.engine == "builtin" && WarmStartPending(ctx.loaded.pool)) {
    auto past = LoadPastRecords(*configmaps_, ctx.spec, kube::NamespaceOf(ctx.campaign));
    if (!past.ok()) return past.status();
    for (const auto& w : past->warnings) Emit(ctx, "Warning", reasons::kKnowledgeSkipped, w);
    deps.past = std::move(past->records);
  }
  auto session = CreateSession(ctx, std::move(deps));
  if (!session.ok()) {
    if (session.status().code() == StatusCode::kInvalidArgument) {
      PARATUNE_RETURN_IF_ERROR(MarkInvalid(ctx.campaign, session.status()));
      return kube::ReconcileResult{};
    }
    return session.status();
  }
  ctx.session = std::move(*session);
  ctx.hours = SumAcceleratorHours(ctx.spec, ctx.trial_runs, time_->SystemNow());
  AcceleratorBudgetReached(ctx.spec, ctx.hours, &ctx.budget_message);
  Status done = Advance(ctx);
  FlushEvents(ctx);  // what was decided is told even when a later step failed
  PARATUNE_RETURN_IF_ERROR(done);
  kube::ReconcileResult r;
  if (CampaignPhaseOf(*ctx.session) == CampaignPhase::kRunning) r.requeue_after = opts_.resync;
  return r;
}

Result<std::unique_ptr<TuningSession>> TuningCampaignReconciler::CreateSession(Context& ctx,
                                                                               SessionDeps deps) {
  if (opts_.planning != nullptr) {
    auto planned = opts_.planning->Get(ctx.spec, deps.options.max_space_points);
    if (!planned.ok()) return planned.status();
    deps.model = planned->model;
    deps.space = planned->space;
  }
  return TuningSession::Create(ctx.spec, &ctx.loaded.pool, std::move(deps));
}

Status TuningCampaignReconciler::Advance(Context& ctx) {
  PARATUNE_RETURN_IF_ERROR(Ingest(ctx));
  PARATUNE_RETURN_IF_ERROR(CheckHealth(ctx));
  Status persisted = ProposeAndPersist(ctx);
  if (!persisted.ok()) {
    // A pool the store refused to save (PoolFull) is told in the status as it stood.
    PARATUNE_RETURN_IF_ERROR(WritePoolCondition(ctx));
    return persisted;
  }
  PARATUNE_RETURN_IF_ERROR(LaunchOpenTrials(ctx));
  return WriteStatus(ctx);
}

// Patches the campaign's status to `status` when it differs from what the campaign holds.
Status TuningCampaignReconciler::PatchCampaignStatus(const Json& campaign,
                                                     const CampaignStatus& status) {
  const Json old_status = ObjectField(campaign, "status");
  Json updated = campaign;
  updated["status"] = status.ToJson();
  if (updated["status"] == old_status) return Status::Ok();
  return PatchStatus(client_, res::kTuningCampaigns, updated, old_status, informers_.campaigns)
      .status();
}

Status TuningCampaignReconciler::WritePoolCondition(Context& ctx) {
  const std::optional<CampaignCondition> pool = store_->PoolCondition(ctx.campaign);
  if (!pool) return Status::Ok();
  CampaignStatus status = CampaignStatus::FromJson(ObjectField(ctx.campaign, "status"));
  status.Apply(*pool, ctx.campaign["metadata"].value("generation", int64_t{0}), ctx.now);
  return PatchCampaignStatus(ctx.campaign, status);
}

Status TuningCampaignReconciler::MarkInvalid(const Json& campaign, const Status& why) {
  const Json& old_status = ObjectField(campaign, "status");
  CampaignStatus status = CampaignStatus::FromJson(old_status);
  const int64_t generation = campaign["metadata"].value("generation", int64_t{0});
  const bool changed =
      status.ApplyInvalidSpec(why.message(), generation, FormatRfc3339(time_->SystemNow()));
  Json updated = campaign;
  updated["status"] = status.ToJson();
  if (updated["status"] == old_status) return Status::Ok();
  if (changed && recorder_ != nullptr) {
    recorder_->Event(campaign, "Warning", reasons::kInvalidSpec, Short(why.message(), 1000));
  }
  spdlog::warn("campaign {}/{}: invalid spec: {}", kube::NamespaceOf(campaign),
               kube::NameOf(campaign), why.message());
  return controllers::WriteStatus(client_, res::kTuningCampaigns, updated).status();
}

Status TuningCampaignReconciler::Ingest(Context& ctx) {
  std::vector<std::string> open;
  for (const auto& t : ctx.session->pool().trials()) {
    if (IsOpen(t)) open.push_back(t.name);
  }
  for (const auto& name : open) {
    auto it = ctx.trial_runs.find(name);
    if (it == ctx.trial_runs.end()) continue;
    auto status = TrialRunStatusOf(it->second);
    if (!status.ok()) {
      spdlog::warn("campaign {}/{}: trial {} left open: {}", kube::NamespaceOf(ctx.campaign),
                   kube::NameOf(ctx.campaign), name, status.status().message());
      continue;
    }
    if (!status->phase || !IsTerminal(*status->phase)) continue;
    const TrialRunPhase phase = *status->phase;
    TrialOutcome outcome = OutcomeFromTrialRun(name, *status);
    Status s = ctx.session->RecordOutcome(outcome);
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
    ctx.pool_changed = true;
    ctx.pool_must_be_written = true;
    const TrialRecord* rec = ctx.session->pool().FindTrial(name);
    if (outcome.succeeded) {
      const std::string objective = Significant(
          rec != nullptr && rec->metrics ? rec->metrics->Objective(ctx.spec.objective.metric) : 0.0,
          4);
      const bool anomalous = rec != nullptr && rec->anomaly.has_value();
      // No objective (ObjectiveMissing, issue 35): said so, never "mfu 0".
      const bool missing = !status->objective.has_value() || *status->objective <= 0;
      Emit(ctx, anomalous || missing ? "Warning" : "Normal", reasons::kTrialSucceeded,
           name +
               (phase == TrialRunPhase::kEarlyStopped ? " stopped early, losing: "
                                                      : " succeeded: ") +
               ObjectiveMetricName(ctx.spec.objective.metric) + " " +
               (missing ? std::string("missing (ObjectiveMissing): not learned from") : objective) +
               (anomalous ? " but is anomalous (" +
                                std::string(health::AnomalyKindName(rec->anomaly->kind)) +
                                "): not learned from"
                          : ""));
    } else {
      std::string why = rec != nullptr && rec->failure
                            ? rec->failure->category + ": " + rec->failure->summary
                            : std::string(TrialRunPhaseName(phase));
      Emit(ctx, "Warning", reasons::kTrialFailed, name + " failed: " + why);
    }
  }
  return Status::Ok();
}

Status TuningCampaignReconciler::CheckHealth(Context& ctx) {
  if (opts_.health == nullptr) return Status::Ok();
  HealthContext& h = ctx.health;
  h.campaign = &ctx.campaign;
  h.spec = &ctx.spec;
  h.session = ctx.session.get();
  h.trial_runs = &ctx.trial_runs;
  h.now = ctx.now;
  HealthEmit emit = [this, &ctx](const std::string& type, const std::string& reason,
                                 const std::string& message) { Emit(ctx, type, reason, message); };
  PARATUNE_RETURN_IF_ERROR(opts_.health->Observe(h, emit));
  PARATUNE_RETURN_IF_ERROR(opts_.health->Diagnose(h, emit));
  PARATUNE_RETURN_IF_ERROR(opts_.health->Remediate(h, emit));
  ctx.pool_changed |= h.pool_changed;
  ctx.pool_must_be_written |= h.pool_changed;
  ctx.health_checked = true;
  return Status::Ok();
}

Status TuningCampaignReconciler::ProposeAndPersist(Context& ctx) {
  int64_t running = 0;
  for (const auto& t : ctx.session->pool().trials()) running += IsOpen(t) ? 1 : 0;
  const int64_t free_slots = ctx.spec.budget.parallel_trials - running;
  if (free_slots > 0 && !ctx.session->ShouldStop() && ctx.budget_message.empty()) {
    const size_t rejected_before = ctx.session->pool().rejected().size();
    auto plans = ctx.session->ProposeNext(static_cast<int>(free_slots));
    if (!plans.ok()) return plans.status();
    const auto& rejected = ctx.session->pool().rejected();
    for (size_t i = rejected_before; i < rejected.size(); ++i) {
      const bool baseline = rejected[i].proposed_by == "baseline";
      Emit(ctx, baseline ? "Warning" : "Normal", reasons::kRejectedByPreflight,
           baseline ? "spec.baseline not launched: " + rejected[i].reason
                    : ConfigKey(rejected[i].config) + ": " + rejected[i].reason);
    }
    for (const auto& p : *plans) {
      Emit(ctx, "Normal", reasons::kProposed,
           p.name + " (iteration " + std::to_string(p.iteration) + ", " + p.change +
               "): " + p.proposal.rationale);
      for (const auto& [reason, messages] : ctx.normal) {
        if (reason == reasons::kProposed) ctx.proposed[p.name] = messages.size() - 1;
      }
    }
    ctx.pool_changed |= !plans->empty() || rejected.size() != rejected_before;
  }
  if (!ctx.pool_changed) return Status::Ok();
  // The built-in engine's first round (nothing ingested; Hold takes only a pool of which nothing
  // was saved yet) is held in this process until the pool next changes: its trials become TrialRuns
  // in this reconcile and come back from them (AdoptTrialRuns) if the process ends first; its
  // analyses and pre-flight rejections the engine makes again. One write fewer per campaign (issue
  // 17). A model's answers are never held: an LLM is not asked twice.
  if (!ctx.pool_must_be_written && ctx.spec.agents.engine == "builtin" &&
      store_->Hold(ctx.campaign, ctx.session->pool(), ctx.loaded.version)) {
    return Status::Ok();
  }
  auto version = store_->Save(ctx.campaign, ctx.session->pool(), ctx.loaded.version);
  if (!version.ok()) return version.status();
  ctx.loaded.version = *version;
  return Status::Ok();
}

void TuningCampaignReconciler::AdoptTrialRuns(Context& ctx) {
  std::vector<std::string> adopted;
  for (const auto& [name, tr] : ctx.trial_runs) {  // by name: iteration order
    if (ctx.loaded.pool.FindTrial(name) != nullptr) continue;
    auto t = TrialRecordOf(tr, ctx.campaign);
    Status in = t.ok() ? ctx.spec.CheckInSearchSpace(t->config, "spec.config") : t.status();
    if (!in.ok()) {
      Emit(ctx, "Warning", reasons::kTrialNotAdopted,
           "TrialRun " + name + " is owned by this campaign but its message pool has no record " +
               "of it, and it cannot be taken in: " + in.message());
      continue;
    }
    ctx.loaded.pool.AddTrial(std::move(*t));
    adopted.push_back(name);
  }
  if (adopted.empty()) return;
  ctx.pool_changed = true;
  std::string names;
  for (const auto& n : adopted) names += (names.empty() ? "" : ", ") + n;
  Emit(ctx, "Normal", reasons::kTrialsAdopted,
       names + ": TrialRuns of this campaign that its message pool did not record (the operator " +
           "stopped before saving the round that launched them, or the pool ConfigMap was " +
           "deleted) are taken back into it with the proposal and prediction they carry");
}

Status TuningCampaignReconciler::LaunchOpenTrials(Context& ctx) {
  for (const auto& t : ctx.session->pool().trials()) {
    if (!IsOpen(t) || ctx.trial_runs.count(t.name) > 0) continue;
    const std::string ns = kube::NamespaceOf(ctx.campaign);
    // Created by an earlier reconcile whose add event has not reached the owner index yet.
    if (informers_.trials->Get({ns, t.name}) != nullptr) continue;
    Json tr = TrialRunFor(ctx.campaign, t);
    auto created = client_->Create(res::kTrialRuns, ns, tr);
    if (created.ok()) {
      informers_.trials->Wrote(*created);
      ctx.trial_runs[t.name] = *created;
      AnnounceLaunch(ctx, t);
    } else if (created.status().code() != StatusCode::kAlreadyExists) {
      return created.status();
    }
  }
  return Status::Ok();
}

// A trial proposed in this reconcile is launched in it too: its Proposed Event says so (one
// Event, not two); one proposed earlier (its launch failed then) gets a Launched Event.
void TuningCampaignReconciler::AnnounceLaunch(Context& ctx, const TrialRecord& t) {
  const std::string launched = "launched: " + ConfigKey(t.config);
  auto it = ctx.proposed.find(t.name);
  for (auto& [reason, messages] : ctx.normal) {
    if (it != ctx.proposed.end() && reason == reasons::kProposed && it->second < messages.size()) {
      messages[it->second] = t.name + " " + launched + "; " + messages[it->second];
      spdlog::info("campaign {}/{}: {} {}", kube::NamespaceOf(ctx.campaign),
                   kube::NameOf(ctx.campaign), t.name, launched);
      return;
    }
  }
  Emit(ctx, "Normal", reasons::kLaunched, t.name + " " + launched);
}

Status TuningCampaignReconciler::PublishBest(Context& ctx, CampaignStatus* status) {
  if (ctx.spec.output_config_map.empty()) return Status::Ok();
  SessionSummary summary = ctx.session->Summary();
  if (!summary.best) return Status::Ok();
  Json cm = BestConfigMap(ctx.campaign, ctx.spec, *ctx.session, summary);
  const std::string ns = kube::NamespaceOf(ctx.campaign);
  const std::string& name = ctx.spec.output_config_map;
  const int64_t generation = ctx.campaign["metadata"].value("generation", int64_t{0});
  // Ours carry the campaign label, so the cache sees them; one it does not see may still exist
  // (someone else's, or ours not cached yet): a create that finds it reads it live.
  auto existing = configmaps_->Get(ns, name);
  bool created_now = false;
  if (!existing.ok() && existing.status().code() == StatusCode::kNotFound) {
    auto created = client_->Create(res::kConfigMaps, ns, cm);
    created_now = created.ok();
    if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
      return created.status();
    }
    if (!created_now) existing = configmaps_->GetLive(ns, name);
  }
  if (!created_now && !existing.ok()) return existing.status();
  if (!created_now && !IsOutputOf(*existing, ctx.campaign)) {
    const std::string owner = DescribeOwner(*existing);
    const Json* old = FindCondition(status->conditions, kOutputPublished);
    const bool already = old != nullptr && old->value("reason", "") == reasons::kOutputNotOwned;
    status->Apply(CampaignCondition{kOutputPublished, false, reasons::kOutputNotOwned,
                                    "ConfigMap " + name + " exists and belongs to " + owner +
                                        ": left untouched; name another "
                                        "spec.output.configMapName or delete it"},
                  generation, ctx.now);
    if (!already) {
      Emit(ctx, "Warning", reasons::kOutputNotOwned,
           "not publishing to ConfigMap " + name + ": it belongs to " + owner +
               " and paratune never overwrites or adopts a ConfigMap it did not create");
    }
    return Status::Ok();
  } else if (!created_now) {
    const Json& meta = ObjectField(*existing, "metadata");
    const bool same = existing->value("data", Json::object()) == cm["data"] &&
                      meta.value("ownerReferences", Json::array()) ==
                          cm["metadata"].value("ownerReferences", Json::array()) &&
                      ObjectField(meta, "annotations").contains(kOutputOfAnnotation);
    if (same) return Status::Ok();
    // Ours: keep other labels and annotations a GitOps tool added; follow deleteWithCampaign.
    Json updated = *existing;
    updated["data"] = cm["data"];
    updated["metadata"]["labels"][kCampaignLabel] = kube::NameOf(ctx.campaign);
    updated["metadata"]["annotations"][kOutputOfAnnotation] = kube::NameOf(ctx.campaign);
    updated["metadata"].erase("ownerReferences");
    if (cm["metadata"].contains("ownerReferences")) {
      updated["metadata"]["ownerReferences"] = cm["metadata"]["ownerReferences"];
    }
    auto written = client_->Update(res::kConfigMaps, updated);
    if (!written.ok()) {
      // Written since the cache's copy (our previous publish, not cached yet): the next
      // reconcile compares with the version the cache then holds.
      if (written.status().code() == StatusCode::kConflict) {
        (void)configmaps_->AwaitChange(ns, name, kube::ResourceVersionOf(*existing));
      }
      return written.status();
    }
  }
  status->Apply(
      CampaignCondition{
          kOutputPublished, true, reasons::kPublished,
          "best configuration " + ConfigKey(summary.best->config) + " in ConfigMap " + name +
              (ctx.spec.output_delete_with_campaign ? " (deleted with the campaign)"
                                                    : " (kept when the campaign is deleted)")},
      generation, ctx.now);
  Emit(ctx, "Normal", reasons::kPublished,
       "best configuration " + ConfigKey(summary.best->config) + " written to ConfigMap " + name);
  return Status::Ok();
}

// The one place the campaign's status is written: the session's status, with what the
// accelerator-hour budget, node health and the pool store decided applied to it.
Status TuningCampaignReconciler::WriteStatus(Context& ctx) {
  const Json old_status = ObjectField(ctx.campaign, "status");
  const int64_t generation = ctx.campaign["metadata"].value("generation", int64_t{0});
  CampaignStatus status = BuildCampaignStatus(ctx.campaign, *ctx.session, ctx.now);
  status.Apply(DecideAcceleratorHours(ctx.spec, ctx.hours, ctx.budget_message, status), generation,
               ctx.now);
  const std::optional<CampaignPhase> old_phase = CampaignPhaseIn(old_status);
  const std::optional<CampaignPhase> phase = status.phase;
  const auto finished = [](std::optional<CampaignPhase> p) {
    return p == CampaignPhase::kSucceeded || p == CampaignPhase::kFailed;
  };
  const std::string old_best = old_status.value("best", Json::object()).value("trialName", "");
  if (status.HasBest() && status.best->trial_name != old_best) {
    const Json best = status.ToJson()["best"];
    Emit(ctx, "Normal", reasons::kNewBest,
         status.best->trial_name + " is the new best: " +
             ObjectiveMetricName(ctx.spec.objective.metric) + " " + best["objective"].dump() +
             " (" + best["improvementOverBaseline"].dump() + " over baseline)");
  }
  if (finished(phase)) {
    PARATUNE_RETURN_IF_ERROR(PublishBest(ctx, &status));
    if (phase != old_phase) {
      Emit(ctx, phase == CampaignPhase::kSucceeded ? "Normal" : "Warning", reasons::kConverged,
           status.message);
    }
  } else if (finished(old_phase) && phase == CampaignPhase::kRunning) {
    Emit(ctx, "Normal", reasons::kResumed, "the spec changed: the campaign resumes");
  }
  if (ctx.health_checked) status.Apply(ctx.health.Decision(), generation, ctx.now);
  // PoolCompacted, when the pool was compacted.
  if (auto pool = store_->PoolCondition(ctx.campaign)) status.Apply(*pool, generation, ctx.now);
  return PatchCampaignStatus(ctx.campaign, status);
}

Json TrialRunFor(const Json& campaign, const TrialRecord& trial) {
  TrialRunSpec typed;
  typed.campaign_name = kube::NameOf(campaign);
  typed.iteration = trial.iteration;
  typed.config = trial.config;
  typed.proposal = trial.proposal.ToJson();
  typed.prediction = trial.prediction.ToJson();
  typed.retry_of = trial.retry_of;
  typed.avoid_nodes = trial.avoid_nodes;
  Json spec = ToJson(typed);
  DropEmptyStrings(&spec);
  return {{"apiVersion", kApiVersion},
          {"kind", "TrialRun"},
          {"metadata",
           {{"name", trial.name},
            {"namespace", kube::NamespaceOf(campaign)},
            {"labels", {{kCampaignLabel, kube::NameOf(campaign)}}},
            {"ownerReferences", Json::array({kube::MakeControllerRef(campaign)})}}},
          {"spec", spec}};
}

Result<TrialRecord> TrialRecordOf(const Json& trial_run, const Json& campaign) {
  auto spec = TrialRunSpecFromJson(ObjectField(trial_run, "spec"));
  if (!spec.ok()) return spec.status();
  if (spec->campaign_name != kube::NameOf(campaign)) {
    return Status::Invalid("spec.campaignRef.name is \"" + spec->campaign_name + "\"");
  }
  auto proposal = Proposal::FromJson(spec->proposal, "spec.proposal");
  if (!proposal.ok()) return proposal.status();
  auto prediction = Prediction::FromJson(spec->prediction, "spec.prediction");
  if (!prediction.ok()) return prediction.status();
  TrialRecord t;
  t.name = kube::NameOf(trial_run);
  t.iteration = spec->iteration;
  t.config = std::move(spec->config);
  t.proposal = std::move(*proposal);
  t.prediction = std::move(*prediction);
  t.retry_of = std::move(spec->retry_of);
  t.avoid_nodes = std::move(spec->avoid_nodes);
  t.phase = TrialPhase::kPending;  // open: the campaign reads its outcome when it has one
  return t;
}

TrialOutcome OutcomeFromTrialRun(const std::string& name, const TrialRunStatus& status) {
  TrialOutcome o;
  o.name = name;
  // An early-stopped trial is a measured (losing) one: its partial metrics calibrate the model.
  o.succeeded =
      status.phase == TrialRunPhase::kSucceeded || status.phase == TrialRunPhase::kEarlyStopped;
  if (o.succeeded && !status.metrics.is_null()) {
    auto m = TrialMetrics::FromJson(status.metrics);
    if (m.ok()) o.metrics = *m;
  }
  const Json& observed = status.observed;
  if (observed.is_object()) {
    o.termination_message = observed.value("terminationMessage", "");
    o.log = observed.value("logTail", "");
    o.pod_reason = observed.value("podReason", "");
    o.exit_code = observed.value("exitCode", 0);
    const Json& events = observed.value("events", Json::array());
    for (const auto& e : events) {
      if (e.is_string()) o.events.push_back(e.get<std::string>());
    }
  }
  if (status.accelerator_hours) o.accelerator_hours = std::max(0.0, *status.accelerator_hours);
  if (status.node_names) o.node_names = *status.node_names;
  if (o.succeeded && !status.anomaly.is_null()) {
    auto anomaly = health::Anomaly::FromJson(status.anomaly);
    if (anomaly.ok()) o.anomaly = std::move(*anomaly);
  }
  if (!o.succeeded && status.failure.is_object()) {
    if (o.log.empty()) o.log = status.failure.value("evidence", "");
    // Written by the trial reconciler; anything else (an edited status) is diagnosed again.
    auto diagnosis = FailureDiagnosis::FromJson(status.failure);
    if (diagnosis.ok() && ParseFailureCategory(diagnosis->category).has_value()) {
      o.diagnosis = std::move(*diagnosis);
    }
  }
  return o;
}

}  // namespace paratune::controllers
