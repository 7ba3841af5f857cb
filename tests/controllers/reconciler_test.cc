#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>

#include "agents/core/campaign.h"
#include "controllers/campaign_status.h"
#include "controllers/conditions.h"
#include "tests/controllers/reconciler_fixture.h"

namespace paratune::controllers {
namespace {

using testing::FakeCluster;
using testing::Json;
namespace res = kube::resources;

// The fixture's campaign, publishing its best configuration to NAME-best.
Json Campaign(const std::string& name, int max_trials, int parallel) {
  Json c = testing::TestCampaign(name, max_trials, parallel);
  c["spec"]["output"]["configMapName"] = name + "-best";
  return c;
}

std::string Phase(FakeCluster& c, const std::string& name) {
  return c.Get(res::kTuningCampaigns, name).value("status", Json::object()).value("phase", "");
}

// Reconciles everything once, finishing every Job that has no pod yet, measured by
// testing::MadeUpMetrics (the baseline tp 1 is refused by pre-flight, so the campaign starts at
// tp 2 and must find a better configuration by changing something else).
void Step(FakeCluster& c, const std::string& campaign, int fail_iteration = -1) {
  c.ReconcileCampaignAndTrials(campaign);
  c.ForEachJobWithoutPod([&](const Json& tr) {
    std::string name = kube::NameOf(tr);
    if (tr["spec"].value("iteration", 0) == fail_iteration) {
      c.FinishJob(name, 1, "Error", "",
                  "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB");
    } else {
      c.FinishJob(name, 0, "Completed", testing::MadeUpMetrics(tr));
    }
  });
  c.ReconcileTrials();
}

TEST(CampaignReconcilerTest, RunsToSucceededAndPublishesTheBest) {
  FakeCluster c(/*detect_anomalies=*/false);
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("llama", 4, 2)).ok());
  for (int i = 0; i < 8 && Phase(c, "llama") != "Succeeded"; ++i) Step(c, "llama");
  c.Sync();
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  Json tc = c.Get(res::kTuningCampaigns, "llama");
  const Json& st = tc["status"];
  ASSERT_EQ(st.value("phase", ""), "Succeeded") << st.dump(2);
  EXPECT_EQ(st["trials"]["total"], 4);
  EXPECT_EQ(st["trials"]["succeeded"], 4);
  EXPECT_EQ(st["baseline"]["trialName"], "llama-t001") << st.dump(2);
  EXPECT_GT(st["best"]["objective"].get<double>(), st["baseline"]["objective"].get<double>());
  EXPECT_GT(st["best"]["improvementOverBaseline"].get<double>(), 0.0);
  EXPECT_TRUE(IsConditionTrue(st["conditions"], kSpecValid));
  EXPECT_TRUE(IsConditionTrue(st["conditions"], kConverged));
  EXPECT_FALSE(IsConditionTrue(st["conditions"], kProgressing));
  EXPECT_EQ(FindCondition(st["conditions"], kSpecValid)->value("observedGeneration", 0),
            tc["metadata"]["generation"]);
  // Four TrialRuns, one Job each, owned by the campaign / trial; names deterministic.
  auto trs = c.List(res::kTrialRuns);
  ASSERT_EQ(trs.size(), 4u);
  std::set<int64_t> iterations;
  for (const auto& tr : trs) {
    iterations.insert(tr["spec"]["iteration"].get<int64_t>());
    EXPECT_EQ(kube::ControllerOwnerOf(tr)->value("uid", ""), kube::UidOf(tc));
    EXPECT_FALSE(tr["spec"]["proposal"].value("rationale", "").empty());
    EXPECT_EQ(tr["status"]["phase"], "Succeeded");
  }
  EXPECT_EQ(iterations.size(), 4u);
  EXPECT_EQ(c.List(res::kJobs).size(), 4u);
  // Published for GitOps.
  Json out = c.Get(res::kConfigMaps, "llama-best");
  ASSERT_FALSE(out.is_null());
  EXPECT_EQ(out["data"]["trial"], st["best"]["trialName"]);
  EXPECT_EQ(out["data"]["tp"], st["best"]["config"]["tp"].dump());
  // Decisions are Events.
  std::set<std::string> reasons_seen;
  for (const auto& e : c.List(res::kEvents)) reasons_seen.insert(e.value("reason", ""));
  for (const char* r : {"Proposed", "TrialSucceeded", "NewBest", "Converged"}) {
    EXPECT_TRUE(reasons_seen.count(r)) << r;
  }
  // A trial proposed and launched in one reconcile is one Event, not two (issue 17), and the
  // proposals of one reconcile share it.
  EXPECT_FALSE(reasons_seen.count("Launched"));
  int proposed_events = 0;
  for (const auto& e : c.List(res::kEvents)) {
    if (e.value("reason", "") != "Proposed") continue;
    ++proposed_events;
    EXPECT_NE(e.value("message", "").find("launched: "), std::string::npos) << e.dump();
  }
  EXPECT_LT(proposed_events, 4) << "four trials, parallelTrials 2";
}

TEST(CampaignReconcilerTest, InvalidSpecCreatesNothingAndNamesTheField) {
  FakeCluster c(/*detect_anomalies=*/false);
  Json bad = Campaign("bad", 4, 1);
  bad["spec"]["budget"]["parallelTrials"] = 0;
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", bad).ok());
  c.Sync();
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "bad"}).ok());
  const Json st = c.Get(res::kTuningCampaigns, "bad")["status"];
  const Json* valid = FindCondition(st["conditions"], kSpecValid);
  ASSERT_NE(valid, nullptr);
  EXPECT_EQ(valid->value("status", ""), "False");
  EXPECT_NE(valid->value("message", "").find("spec.budget.parallelTrials"), std::string::npos);
  EXPECT_TRUE(c.List(res::kTrialRuns).empty());
  EXPECT_TRUE(c.List(res::kConfigMaps).empty());
}

// A pool that does not fit its ConfigMaps even compacted: the save is refused with a terminal
// error (no retry can shrink it), the campaign's status says PoolCompacted=False/PoolFull, and
// what the store held before stays loadable.
TEST(CampaignReconcilerTest, APoolTooLargeToSaveIsToldInTheStatusAndNotRetried) {
  ConfigMapPoolStoreOptions tiny;
  tiny.shard_bytes = 256;
  tiny.max_shards = 1;
  FakeCluster c(/*detect_anomalies=*/false, RealTimeSource::Get(), nullptr, true, tiny);
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("full", 4, 1)).ok());
  Step(c, "full");  // the first round is held in memory, not saved: its trials run
  ASSERT_FALSE(c.List(res::kTrialRuns).empty());
  auto r = c.campaign_reconciler->Reconcile({"ns", "full"});  // the results must be saved
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(r.status().terminal()) << r.status().ToString();
  const Json st = c.Get(res::kTuningCampaigns, "full")["status"];
  const Json* pool = FindCondition(st["conditions"], "PoolCompacted");
  ASSERT_NE(pool, nullptr) << st.dump();
  EXPECT_EQ(pool->value("status", ""), "False");
  EXPECT_EQ(pool->value("reason", ""), "PoolFull");
  EXPECT_NE(pool->value("message", "").find("256 bytes"), std::string::npos) << pool->dump();
}

TEST(CampaignReconcilerTest, CrashBetweenPoolSaveAndCreateLosesAndDuplicatesNothing) {
  FakeCluster c(/*detect_anomalies=*/false);
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("llama", 3, 1)).ok());
  c.Sync();
  // The pool is saved, then creating the TrialRun fails (as if the operator died there).
  c.client.InjectError("create", "trialruns", Status::Unavailable("connection reset"));
  EXPECT_FALSE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  EXPECT_TRUE(c.List(res::kTrialRuns).empty());
  c.Sync();
  auto again = c.campaign_reconciler->Reconcile({"ns", "llama"});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  auto trs = c.List(res::kTrialRuns);
  ASSERT_EQ(trs.size(), 1u);
  EXPECT_EQ(kube::NameOf(trs[0]), "llama-t001");
  // Reconciling again before the cache has the TrialRun creates no second one. Depending on
  // whether the informer has caught up, the status write may hit a stale resourceVersion: a
  // Conflict is then returned (and retried by the queue), never a duplicate.
  auto third = c.campaign_reconciler->Reconcile({"ns", "llama"});
  EXPECT_TRUE(third.ok() || third.status().code() == StatusCode::kConflict)
      << third.status().ToString();
  EXPECT_EQ(c.List(res::kTrialRuns).size(), 1u);
}

// An informer whose owner index has not seen this process's TrialRuns yet (their add events
// wait in the watch): ByOwner finds none, Get finds what this process wrote (kube::Informer's
// Wrote).
class LaggingOwnerIndex final : public kube::ObjectReader {
 public:
  kube::ObjectPtr Get(const kube::ObjectKey& key) const override {
    auto it = written_.find(key.String());
    return it == written_.end() ? nullptr : it->second;
  }
  std::vector<kube::ObjectPtr> List(const std::string&) const override { return {}; }
  std::vector<kube::ObjectPtr> ByOwner(const std::string&) const override { return {}; }
  void AddIndex(const std::string&, kube::IndexFunc) override {}
  std::vector<kube::ObjectPtr> ByIndex(const std::string&, const std::string&) const override {
    return {};
  }
  void Wrote(const Json& obj) override {
    written_[kube::ObjectKey::Of(obj).String()] = std::make_shared<const Json>(obj);
  }

 private:
  std::map<std::string, kube::ObjectPtr> written_;
};

// Issue 17: a second reconcile before the TrialRuns' add events (a busy server) creates none of
// them again (each was a POST answered 409 AlreadyExists, 10 of 410 at 200 campaigns).
TEST(CampaignReconcilerTest, AReconcileBeforeTheWatchCreatesNoTrialRunTwice) {
  FakeCluster c(/*detect_anomalies=*/false);
  LaggingOwnerIndex trials;
  TuningCampaignReconciler reconciler(&c.client, CampaignInformers{c.campaigns(), &trials},
                                      c.store.get(), c.recorder.get(), c.analyzer, nullptr,
                                      RealTimeSource::Get(), CampaignReconcilerOptions{});
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("llama", 4, 2)).ok());
  ASSERT_TRUE(reconciler.Reconcile({"ns", "llama"}).ok());
  ASSERT_EQ(c.List(res::kTrialRuns).size(), 2u);
  c.client.ResetCalls();
  auto again = reconciler.Reconcile({"ns", "llama"});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(c.client.Calls("create"), 0) << "no TrialRun (nor anything else) created again";
  EXPECT_EQ(c.List(res::kTrialRuns).size(), 2u);
}

// The reconciler of an operator that restarted: a new pool store (nothing held, no head
// remembered) over the same cluster.
struct Restarted {
  explicit Restarted(FakeCluster& c)
      : store(&c.client),
        reconciler(&c.client, CampaignInformers{c.campaigns(), c.trials()}, &store,
                   c.recorder.get(), c.analyzer, nullptr, RealTimeSource::Get(), [] {
                     CampaignReconcilerOptions o;
                     o.detect_anomalies = false;
                     return o;
                   }()) {}
  ConfigMapPoolStore store;
  TuningCampaignReconciler reconciler;
};

int EventsWithReason(FakeCluster& c, const std::string& reason) {
  int n = 0;
  for (const auto& e : c.List(res::kEvents)) n += e.value("reason", "") == reason ? 1 : 0;
  return n;
}

// Issue 17: the built-in engine's first round is launched without writing the message pool
// (held until the next change, which writes it); an operator that restarts before then takes
// the round back from its TrialRuns, proposes nothing twice and runs the campaign to the end.
TEST(CampaignReconcilerTest, TheFirstRoundIsHeldAndARestartTakesItBackFromTheTrialRuns) {
  FakeCluster c(/*detect_anomalies=*/false);
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("llama", 4, 2)).ok());
  c.ReconcileCampaignAndTrials("llama");
  ASSERT_EQ(c.List(res::kTrialRuns).size(), 2u);
  EXPECT_TRUE(c.List(res::kConfigMaps).empty()) << "no pool written for the first round";
  std::map<std::string, Json> launched;
  for (const auto& tr : c.List(res::kTrialRuns)) launched[kube::NameOf(tr)] = tr["spec"];

  Restarted r(c);
  auto adopted = r.reconciler.Reconcile({"ns", "llama"});
  ASSERT_TRUE(adopted.ok()) << adopted.status().ToString();
  EXPECT_EQ(c.List(res::kTrialRuns).size(), 2u) << "nothing proposed again";
  EXPECT_EQ(EventsWithReason(c, "TrialsAdopted"), 1);
  auto pool = r.store.Load(c.Get(res::kTuningCampaigns, "llama"));
  ASSERT_TRUE(pool.ok()) << pool.status().ToString();
  ASSERT_EQ(pool->pool.trials().size(), 2u);
  for (const auto& t : pool->pool.trials()) {
    ASSERT_TRUE(launched.count(t.name)) << t.name;
    EXPECT_EQ(t.proposal.ToJson(), launched[t.name]["proposal"]) << t.name;
    EXPECT_EQ(t.iteration, launched[t.name].value("iteration", int64_t{0}));
    EXPECT_EQ(t.phase, TrialPhase::kPending);
  }

  // The trials finish: their outcomes are what only the pool records, so it is written.
  c.ForEachJobWithoutPod([&](const Json& tr) {
    c.FinishJob(kube::NameOf(tr), 0, "Completed", testing::MadeUpMetrics(tr));
  });
  c.ReconcileTrials();
  ASSERT_TRUE(r.reconciler.Reconcile({"ns", "llama"}).ok());
  EXPECT_FALSE(c.Get(res::kConfigMaps, "llama-pool").is_null());
  ConfigMapPoolStore another_process(&c.client);
  auto written = another_process.Load(c.Get(res::kTuningCampaigns, "llama"));
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(written->pool.trials().size(), 4u) << "two measured, two proposed";
  for (int i = 0; i < 8 && Phase(c, "llama") != "Succeeded"; ++i) {
    ASSERT_TRUE(r.reconciler.Reconcile({"ns", "llama"}).ok());
    c.ReconcileTrials();
    c.ForEachJobWithoutPod([&](const Json& tr) {
      c.FinishJob(kube::NameOf(tr), 0, "Completed", testing::MadeUpMetrics(tr));
    });
    c.ReconcileTrials();
  }
  EXPECT_EQ(Phase(c, "llama"), "Succeeded");
  EXPECT_EQ(c.List(res::kTrialRuns).size(), 4u);
  EXPECT_EQ(c.Get(res::kTuningCampaigns, "llama")["status"]["trials"]["succeeded"], 4);
}

// A TrialRun that names the campaign as its owner but whose configuration is outside the search
// space (a hand-made one) is not taken in: a Warning names it, and the campaign goes on.
TEST(CampaignReconcilerTest, ATrialRunOutsideTheSearchSpaceIsNotAdopted) {
  FakeCluster c(/*detect_anomalies=*/false);
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("llama", 4, 1)).ok());
  Json tc = c.Get(res::kTuningCampaigns, "llama");
  Json stray = testing::HandMadeTrialRun("llama-t007", "llama");
  stray["spec"]["config"]["tp"] = 16;
  stray["metadata"]["ownerReferences"] = Json::array({kube::MakeControllerRef(tc)});
  ASSERT_TRUE(c.client.Create(res::kTrialRuns, "ns", stray).ok());
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  EXPECT_EQ(EventsWithReason(c, "TrialNotAdopted"), 1);
  EXPECT_EQ(EventsWithReason(c, "TrialsAdopted"), 0);
  for (const auto& e : c.List(res::kEvents)) {
    if (e.value("reason", "") != "TrialNotAdopted") continue;
    EXPECT_NE(e.value("message", "").find("llama-t007"), std::string::npos) << e.dump();
    EXPECT_NE(e.value("message", "").find("spec.config.tp"), std::string::npos) << e.dump();
  }
  EXPECT_FALSE(c.Get(res::kTrialRuns, "llama-t001").is_null()) << "the campaign starts";
}

// A campaign whose proposals come from a language model writes its first round before launching
// it: a model's answer is not held where a restart would lose it.
TEST(CampaignReconcilerTest, AnLlmCampaignsFirstRoundIsWrittenBeforeItsTrialRuns) {
  FakeCluster c(/*detect_anomalies=*/false);
  TuningCampaignReconciler reconciler(
      &c.client, CampaignInformers{c.campaigns(), c.trials()}, c.store.get(), c.recorder.get(),
      c.analyzer,
      [](const CampaignSpec&, MessagePool*) -> Result<std::unique_ptr<StrategyEngine>> {
        return std::unique_ptr<StrategyEngine>();  // the built-in engine answers
      },
      RealTimeSource::Get(), CampaignReconcilerOptions{});
  Json campaign = Campaign("llama", 4, 2);
  campaign["spec"]["agents"] = {{"engine", "llm"},
                                {"llm", {{"endpoint", "https://llm.corp/v1"}, {"model", "m"}}}};
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", campaign).ok());
  auto r = reconciler.Reconcile({"ns", "llama"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(c.List(res::kTrialRuns).size(), 2u);
  EXPECT_FALSE(c.Get(res::kConfigMaps, "llama-pool").is_null());
}

TEST(CampaignReconcilerTest, FailedTrialIsDiagnosedAndLargerBudgetResumes) {
  FakeCluster c(/*detect_anomalies=*/false);
  // tp 8 too: the made-up OOM of the second trial rules out every configuration that needs at
  // least as much memory, and a resumed campaign must still have something left to run.
  Json campaign = Campaign("llama", 3, 1);
  campaign["spec"]["searchSpace"]["parameters"][0]["values"] = Json::array({1, 2, 4, 8});
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", campaign).ok());
  for (int i = 0; i < 8 && Phase(c, "llama") != "Succeeded"; ++i) Step(c, "llama", 2);
  ASSERT_EQ(Phase(c, "llama"), "Succeeded");
  Json failed = c.Get(res::kTrialRuns, "llama-t002");
  ASSERT_EQ(failed["status"].value("phase", ""), "Failed") << failed.dump(2);
  EXPECT_EQ(failed["status"]["failure"].value("category", ""), "CudaOOM");
  EXPECT_NE(failed["status"]["failure"].value("evidence", "").find("out of memory"),
            std::string::npos);
  EXPECT_EQ(c.Get(res::kTuningCampaigns, "llama")["status"]["trials"]["failed"], 1);
  // The user raises the budget: the finished campaign resumes and runs two more trials.
  Json tc = c.Get(res::kTuningCampaigns, "llama");
  tc["spec"]["budget"]["maxTrials"] = 5;
  ASSERT_TRUE(c.client.Update(res::kTuningCampaigns, tc).ok());
  c.Sync();
  ASSERT_TRUE(c.campaign_reconciler->Reconcile({"ns", "llama"}).ok());
  EXPECT_EQ(Phase(c, "llama"), "Running") << c.Get(res::kTuningCampaigns, "llama")["status"];
  for (int i = 0; i < 8 && Phase(c, "llama") != "Succeeded"; ++i) Step(c, "llama");
  EXPECT_EQ(Phase(c, "llama"), "Succeeded");
  EXPECT_GE(c.List(res::kTrialRuns).size(), 5u);
}

// The reconciles of campaigns over one workload and search space plan from one model and
// evaluated space (PlanningCache), built once; a campaign whose workload is edited plans from
// its own on its next reconcile.
TEST(CampaignReconcilerTest, CampaignsOfOneWorkloadPlanFromOneSearchSpace) {
  FakeCluster c(/*detect_anomalies=*/false);
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("a", 4, 2)).ok());
  ASSERT_TRUE(c.client.Create(res::kTuningCampaigns, "ns", Campaign("b", 6, 1)).ok());
  Step(c, "a");
  Step(c, "b");
  Step(c, "a");
  PlanningCacheStats s = c.planning.stats();
  EXPECT_EQ(s.builds, 1);
  EXPECT_GE(s.hits, 2);
  EXPECT_EQ(s.entries, 1u);
  const size_t b_trials_before = c.List(res::kTrialRuns).size();
  Json b = c.Get(res::kTuningCampaigns, "b");
  b["spec"]["training"]["seqLength"] = 4096;
  ASSERT_TRUE(c.client.Update(res::kTuningCampaigns, b).ok());
  Step(c, "b");
  s = c.planning.stats();
  EXPECT_EQ(s.builds, 2);
  EXPECT_EQ(s.entries, 2u);
  EXPECT_GT(c.List(res::kTrialRuns).size(), b_trials_before) << "b planned its next trial";
  EXPECT_EQ(Phase(c, "b"), "Running");
}

}  // namespace
}  // namespace paratune::controllers
