// TuningCampaignReconciler: the agent loop (agents/session TuningSession) as a level-based
// reconcile. Every call rebuilds the session from the spec and the persisted message pool (the
// performance model and evaluated search space come from options.planning, shared by every
// campaign of that workload and space), then:
//   1. ingests finished TrialRuns whose pool record is still open (RecordOutcome: metrics, or
//      the failure evidence for the Diagnostician);
//   2. while fewer than spec.budget.parallelTrials run and the coordinator does not stop,
//      proposes the next trials (analyst, strategist, validator; pre-flight rejections cost no
//      trial);
//   3. saves the pool BEFORE creating TrialRuns, then creates every open trial that has no
//      TrialRun yet. Names are deterministic ("<campaign>-t003"), so a crash at any point
//      neither loses nor duplicates a trial: AlreadyExists means it was made already. The
//      built-in engine's first round is not saved but held (MessagePoolStore::Hold) until the
//      pool next changes; TrialRuns of the campaign that a pool (no pool saved yet) lacks are
//      taken into it from their spec (AdoptTrialRuns), so a crash loses no trial there either;
//   4. writes status (phase, iteration, counts, baseline, best, last analysis, conditions with
//      observedGeneration) and, once finished, publishes the best configuration to
//      spec.output.configMapName (never one it did not create; owned by the campaign only with
//      spec.output.deleteWithCampaign).
// With a CampaignHealth (options.health), between 1 and 2 it also records the finished trials
// in the node ledger, runs diagnostics on suspect nodes and proposes / applies approved
// remediations; status gains nodeHealth and remediations (see
// controllers/node_health/node_health.h). An invalid spec sets SpecValid=False naming the field and
// creates nothing (not retried). A finished campaign whose spec is edited (a larger budget)
// resumes. Every decision is an Event. Thread-safe for different keys; the Controller serializes
// each key.
#ifndef PARATUNE_CONTROLLERS_CAMPAIGN_RECONCILER_H_
#define PARATUNE_CONTROLLERS_CAMPAIGN_RECONCILER_H_

#include <functional>
#include <memory>
#include <string>

#include "agents/engines/engine_factory.h"
#include "agents/engines/strategy_engine.h"
#include "agents/predict/planning_cache.h"
#include "agents/session/tuning_session.h"
#include "agents/trials/failure_analyzer.h"
#include "base/time_source.h"
#include "controllers/config_map_cache.h"
#include "controllers/message_pool_store.h"
#include "controllers/node_health/node_health.h"
#include "controllers/trial_run_status.h"
#include "operator/controller.h"
#include "operator/event_recorder.h"
#include "operator/kube_client.h"
#include "operator/object_reader.h"

namespace paratune::controllers {

struct CampaignReconcilerOptions {
  // Look again this often while trials run (events normally arrive first).
  Millis resync{60000};
  uint64_t seed = 1;
  // Cluster health (contract section 10): anomalies, node ledger, diagnostics, remediation.
  // Borrowed; null leaves it out.
  CampaignHealth* health = nullptr;
  // Off: every success is learned from (SessionOptions::detect_anomalies), e.g. for made-up
  // measurements that have nothing to do with the performance model.
  bool detect_anomalies = true;
  // Administrator policy checked before anything runs (controllers/setup: trial pod policy,
  // LLM access, not the operator's namespace). kInvalidArgument: SpecValid=False with its
  // message (naming the field), nothing created; other errors retry. Null: none.
  std::function<Status(const kube::Json& campaign, const CampaignSpec& spec)> admit;
  // How campaigns are parsed (the operator's defaults for what they leave empty).
  CampaignParseOptions parse;
  // The model and evaluated search space, shared by the reconciles of every campaign with the
  // same workload and space (agents/predict/planning_cache.h). Borrowed; null: built per reconcile.
  PlanningCache* planning = nullptr;
  // Where the published output ConfigMap is read from (the informer of ConfigMaps with the
  // campaign label). Borrowed; null: GETs.
  const ConfigMapCache* configmaps = nullptr;
};

struct CampaignInformers {
  kube::ObjectReader* campaigns = nullptr;
  kube::ObjectReader* trials = nullptr;
};

class TuningCampaignReconciler : public kube::Reconciler {
 public:
  // Borrows client, informers, store, recorder (may be null), analyzer and time.
  TuningCampaignReconciler(kube::KubeClient* client, CampaignInformers informers,
                           MessagePoolStore* store, kube::EventRecorder* recorder,
                           std::shared_ptr<const FailureAnalyzer> analyzer,
                           EngineFactory engine_factory, TimeSource* time,
                           CampaignReconcilerOptions opts);
  Result<kube::ReconcileResult> Reconcile(const kube::ObjectKey& key) override;

 private:
  struct Context;
  Status MarkInvalid(const kube::Json& campaign, const Status& why);
  // The session over ctx.spec and the loaded pool, planning with opts_.planning's shared model
  // and search space when there is one.
  Result<std::unique_ptr<TuningSession>> CreateSession(Context& ctx, SessionDeps deps);
  Status Ingest(Context& ctx);
  Status CheckHealth(Context& ctx);
  Status ProposeAndPersist(Context& ctx);
  // With no pool saved: the campaign's TrialRuns the pool lacks become its open trials (config,
  // proposal, prediction, retry from their spec); one outside the search space or not naming
  // the campaign is left out with a Warning Event. Sets pool_changed when it took any.
  void AdoptTrialRuns(Context& ctx);
  Status LaunchOpenTrials(Context& ctx);
  // Writes the best configuration to spec.output.configMapName when that ConfigMap is absent or
  // ours (IsOutputOf); one that is not is left untouched: OutputPublished=False naming its
  // owner, plus one Warning Event. Sets the OutputPublished condition in `status`.
  Status PublishBest(Context& ctx, CampaignStatus* status);
  Status WriteStatus(Context& ctx);
  // The status as it stood, with the pool store's condition applied: after a failed save (a pool
  // the store refused is False/PoolFull), when nothing else of this reconcile is written.
  Status WritePoolCondition(Context& ctx);
  // Patches `campaign`'s status to `status` (nothing when they are equal).
  Status PatchCampaignStatus(const kube::Json& campaign, const CampaignStatus& status);
  // Ingest, CheckHealth, ProposeAndPersist (on failure: WritePoolCondition), LaunchOpenTrials,
  // WriteStatus.
  Status Advance(Context& ctx);
  void AnnounceLaunch(Context& ctx, const TrialRecord& t);
  // Logs the decision; a Warning becomes an Event at once, a Normal one is batched with the
  // others of its reason in this reconcile and written by FlushEvents (one Event per reason).
  void Emit(Context& ctx, const std::string& type, const std::string& reason,
            const std::string& message);
  void FlushEvents(Context& ctx);

  kube::KubeClient* client_;
  CampaignInformers informers_;
  MessagePoolStore* store_;
  kube::EventRecorder* recorder_;
  std::shared_ptr<const FailureAnalyzer> analyzer_;
  EngineFactory engine_factory_;
  TimeSource* time_;
  CampaignReconcilerOptions opts_;
  std::unique_ptr<ConfigMapCache> own_configmaps_;  // live reads when none was given
  const ConfigMapCache* configmaps_;
};

// The TrialRun object for a trial of the pool (spec per contract section 5), owned by the
// campaign.
kube::Json TrialRunFor(const kube::Json& campaign, const TrialRecord& trial);
// The inverse of TrialRunFor: the open trial a TrialRun of `campaign` launched (config,
// proposal, prediction, retry, avoided nodes; the pool's own fields, such as `change`, are not
// on it). kInvalidArgument naming the field when its spec does not parse or names another
// campaign.
Result<TrialRecord> TrialRecordOf(const kube::Json& trial_run, const kube::Json& campaign);
// The outcome the session ingests, from the status of the finished TrialRun `name`.
TrialOutcome OutcomeFromTrialRun(const std::string& name, const TrialRunStatus& status);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_CAMPAIGN_RECONCILER_H_
