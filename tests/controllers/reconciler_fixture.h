// A fake cluster for reconciler tests: FakeKubeClient, synchronous readers of it for the four
// kinds the controllers read (kube::testing::ClientReader: no informer threads, a reconciler
// reads what was last written), the node-health wiring of controllers/setup.cc (ledger in namespace
// paratune-system, simulated diagnostics), and helpers that play the Job controller and kubelet
// (finish a trial's Job with a termination message or a failure, on a chosen node).
#ifndef PARATUNE_TESTS_CONTROLLERS_RECONCILER_FIXTURE_H_
#define PARATUNE_TESTS_CONTROLLERS_RECONCILER_FIXTURE_H_

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agents/trials/knowledge_failure_analyzer.h"
#include "base/yaml.h"
#include "controllers/campaign_reconciler.h"
#include "controllers/message_pool_store.h"
#include "controllers/node_health/node_health.h"
#include "controllers/node_health/node_ledger_store.h"
#include "controllers/trial_reconciler.h"
#include "operator/event_recorder.h"
#include "testing/fakes/client_reader.h"
#include "testing/fakes/fake_kube_client.h"

namespace paratune::controllers::testing {

using kube::Json;
namespace res = kube::resources;

inline bool WaitUntil(const std::function<bool()>& pred, int ms = 5000) {
  for (int i = 0; i < ms / 5; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return pred();
}

// The campaign the reconciler tests run: llama3-8b on one H100x8 node, tp x mbs x recompute,
// baseline tp 1 / mbs 1 / full, objective mfu, at most 3 failed trials.
inline Json TestCampaign(const std::string& name, int max_trials, int parallel = 1) {
  auto j = YamlToJson(R"(
apiVersion: tuning.paratune.dev/v1alpha1
kind: TuningCampaign
metadata: {name: NAME, namespace: ns}
spec:
  model: {preset: llama3-8b}
  training: {framework: megatron-lm, seqLength: 8192, globalBatchSize: 512}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 1, devicesPerNode: 8}
  searchSpace:
    parameters:
    - {name: tp, values: [1, 2, 4]}
    - {name: mbs, values: [1, 2]}
    - {name: recompute, values: [selective, full]}
  baseline: {tp: 1, mbs: 1, recompute: full}
  objective: {metric: mfu}
  budget: {maxTrials: 1, parallelTrials: 1, maxFailedTrials: 3}
)");
  EXPECT_TRUE(j.ok());
  Json c = *j;
  c["metadata"]["name"] = name;
  c["spec"]["budget"]["maxTrials"] = max_trials;
  c["spec"]["budget"]["parallelTrials"] = parallel;
  return c;
}

// A made-up but deterministic measurement of a trial, as its termination message: larger tp and
// less recomputation are better (tests that need a campaign to find something better than its
// start).
inline std::string MadeUpMetrics(const Json& trial_run) {
  const int64_t tp = trial_run["spec"]["config"].value("tp", 1);
  const bool selective = trial_run["spec"]["config"].value("recompute", "") == "selective";
  const double mfu = 0.30 + 0.04 * static_cast<double>(tp) + (selective ? 0.05 : 0.0);
  return Json{{"metrics",
               {{"mfu", mfu},
                {"tflopsPerDevice", mfu * 989},
                {"stepTimeSeconds", 9.0},
                {"peakMemoryGiB", 50.0}}}}
      .dump();
}

// A TrialRun made by hand (as a user or an earlier operator would) for `campaign`, iteration 1,
// tp 2, mbs 1, full recomputation.
inline Json HandMadeTrialRun(const std::string& name, const std::string& campaign) {
  return {{"apiVersion", "tuning.paratune.dev/v1alpha1"},
          {"kind", "TrialRun"},
          {"metadata", {{"name", name}, {"namespace", "ns"}}},
          {"spec",
           {{"campaignRef", {{"name", campaign}}},
            {"iteration", 1},
            {"config", {{"tp", 2}, {"mbs", 1}, {"recompute", "full"}}}}}};
}

// The failure analyzer over the embedded knowledge base (the operator's site analyzer), for a
// FakeCluster whose tests need its signatures (Kueue's, the scheduler's).
inline std::shared_ptr<const FailureAnalyzer> KnowledgeAnalyzer() {
  auto a = MakeKnowledgeFailureAnalyzer();
  EXPECT_TRUE(a.ok()) << a.status().ToString();
  return a.ok() ? std::shared_ptr<const FailureAnalyzer>(std::move(*a)) : nullptr;
}

class FakeCluster {
 public:
  // detect_anomalies=false: the session learns from every success (tests whose made-up metrics
  // have nothing to do with the performance model's predictions).
  // `time`: the reconcilers' clock (the informers keep the real one).
  // `site_analyzer`: the site's failure analyzer (null: the keyword fallback, which knows no
  // queue or knowledge-base signatures).
  // `cordon`: --node-remediation (an approved CordonNode patches the Node).
  // `pool`: the message pool store's options (its size limits).
  explicit FakeCluster(bool detect_anomalies = true, TimeSource* time = RealTimeSource::Get(),
                       std::shared_ptr<const FailureAnalyzer> site_analyzer = nullptr,
                       bool cordon = true, ConfigMapPoolStoreOptions pool = {}) {
    for (const auto* gvr : {&res::kTuningCampaigns, &res::kTrialRuns, &res::kJobs, &res::kPods}) {
      readers_.push_back(std::make_unique<kube::testing::ClientReader>(&client, *gvr));
    }
    recorder = std::make_unique<kube::EventRecorder>(&client, "paratune-operator", time);
    store = std::make_unique<ConfigMapPoolStore>(&client, pool);
    analyzer = site_analyzer != nullptr
                   ? std::move(site_analyzer)
                   : std::shared_ptr<const FailureAnalyzer>(MakeFallbackFailureAnalyzer());
    configmaps = std::make_unique<ConfigMapCache>(&client);
    knowledge = std::make_unique<CampaignKnowledge>(configmaps.get(), "", nullptr, analyzer);
    ledger = std::make_unique<NodeLedgerStore>(&client, "paratune-system");
    CampaignHealthOptions ho;
    ho.diagnostics = "simulated";
    ho.clock = time;
    // The approval tests create an approval between two reconciles a moment apart: asked every
    // time here (ClusterApprovalsTest covers the recheck interval).
    ho.approval_recheck = Millis(0);
    ho.cordon = cordon;
    health = std::make_unique<CampaignHealth>(&client, ledger.get(), jobs(), pods(), ho);
    CampaignReconcilerOptions copts;
    copts.health = health.get();
    copts.detect_anomalies = detect_anomalies;
    copts.planning = &planning;  // as the operator plans (controllers/setup.cc)
    campaign_reconciler = std::make_unique<TuningCampaignReconciler>(
        &client, CampaignInformers{campaigns(), trials()}, store.get(), recorder.get(), analyzer,
        nullptr, time, copts);
    TrialReconcilerOptions topts;
    NodeLedgerStore* l = ledger.get();
    topts.suspect_nodes = [l]() -> Result<std::vector<std::string>> {
      auto loaded = l->Load();
      if (!loaded.ok()) return loaded.status();
      return loaded->SuspectNames();
    };
    // Listed every time it is asked (tests create nodes between reconciles); without Node
    // objects no pod is judged.
    nodes = std::make_unique<ClusterNodes>(&client, time, Millis(0));
    topts.cluster_nodes = nodes.get();
    trial_reconciler = std::make_unique<TrialRunReconciler>(
        &client, TrialInformers{trials(), campaigns(), jobs(), pods()}, recorder.get(),
        knowledge.get(), time, topts);
  }

  kube::ObjectReader* campaigns() { return readers_[0].get(); }
  kube::ObjectReader* trials() { return readers_[1].get(); }
  kube::ObjectReader* jobs() { return readers_[2].get(); }
  kube::ObjectReader* pods() { return readers_[3].get(); }

  // The readers are synchronous: there is no cache to wait for. Kept so that a test says where
  // a controller would have waited for its informers.
  void Sync() {}

  Json Get(const kube::GroupVersionResource& gvr, const std::string& name) {
    auto r = client.Get(gvr, "ns", name);
    return r.ok() ? *r : Json();
  }
  std::vector<Json> List(const kube::GroupVersionResource& gvr) {
    auto r = client.List(gvr, "ns", {});
    return r.ok() ? r->items : std::vector<Json>{};
  }

  // Reconciles the campaign once, then every TrialRun once.
  void ReconcileCampaignAndTrials(const std::string& campaign) {
    Sync();
    auto r = campaign_reconciler->Reconcile({"ns", campaign});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ReconcileTrials();
  }

  void ReconcileTrials() {
    Sync();
    for (const auto& tr : List(res::kTrialRuns)) {
      auto r = trial_reconciler->Reconcile(kube::ObjectKey::Of(tr));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
    }
    Sync();
  }

  // Calls `finish(trial)` for every TrialRun whose Job exists and has no pod yet (the trials a
  // test has to play).
  void ForEachJobWithoutPod(const std::function<void(const Json& trial)>& finish) {
    for (const auto& tr : List(res::kTrialRuns)) {
      std::string name = kube::NameOf(tr);
      if (Get(res::kJobs, name).is_null() || !Get(res::kPods, name + "-abcde").is_null()) continue;
      finish(tr);
    }
  }

  // Plays the Job controller and kubelet: the Job's pod terminated with `exit_code`,
  // `reason` and `message`, and the Job condition follows.
  void FinishJob(const std::string& name, int exit_code, const std::string& reason,
                 const std::string& message, const std::string& log = "",
                 const std::string& node = "gpu-0") {
    Json pod = {{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata",
                 {{"name", name + "-abcde"},
                  {"namespace", "ns"},
                  {"labels", {{"tuning.paratune.dev/trial", name}}}}},
                {"spec", {{"nodeName", node}, {"containers", {{{"name", "trainer"}}}}}}};
    auto created = client.Create(res::kPods, "ns", pod);
    ASSERT_TRUE(created.ok()) << created.status().ToString();
    Json p = *created;
    p["status"] = {{"phase", exit_code == 0 ? "Succeeded" : "Failed"},
                   {"startTime", "2026-11-21T05:00:00Z"},
                   {"containerStatuses",
                    {{{"name", "trainer"},
                      {"state",
                       {{"terminated",
                         {{"exitCode", exit_code}, {"reason", reason}, {"message", message}}}}}}}}};
    ASSERT_TRUE(client.UpdateStatus(res::kPods, p).ok());
    if (!log.empty()) client.SetPodLog("ns", name + "-abcde", log);
    auto job = client.Get(res::kJobs, "ns", name);
    ASSERT_TRUE(job.ok());
    Json j = *job;
    j["status"] = {{"conditions",
                    {{{"type", exit_code == 0 ? "Complete" : "Failed"},
                      {"status", "True"},
                      {"reason", exit_code == 0 ? "" : "BackoffLimitExceeded"}}}}};
    ASSERT_TRUE(client.UpdateStatus(res::kJobs, j).ok());
  }

  kube::FakeKubeClient client;
  std::unique_ptr<kube::EventRecorder> recorder;
  std::unique_ptr<ConfigMapPoolStore> store;
  std::shared_ptr<const FailureAnalyzer> analyzer;
  std::unique_ptr<ConfigMapCache> configmaps;
  std::unique_ptr<CampaignKnowledge> knowledge;
  std::unique_ptr<NodeLedgerStore> ledger;
  std::unique_ptr<CampaignHealth> health;
  std::unique_ptr<ClusterNodes> nodes;
  PlanningCache planning;
  std::unique_ptr<TuningCampaignReconciler> campaign_reconciler;
  std::unique_ptr<TrialRunReconciler> trial_reconciler;

 private:
  std::vector<std::unique_ptr<kube::ObjectReader>> readers_;
};

}  // namespace paratune::controllers::testing

#endif  // PARATUNE_TESTS_CONTROLLERS_RECONCILER_FIXTURE_H_
