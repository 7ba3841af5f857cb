// Issue 17: the operator's own ConfigMaps (node ledger, message pool) are read from informers
// restricted to what it labels, not by a GET per reconcile; writes stay conditional on the
// resourceVersion read, and a write that conflicts is applied again to the winner's version.
#include "controllers/config_map_cache.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "controllers/job_renderer.h"
#include "controllers/knowledge_records.h"
#include "controllers/message_pool_store.h"
#include "controllers/node_health/node_ledger_store.h"
#include "operator/informer.h"
#include "testing/fakes/fake_kube_client.h"
#include "tests/controllers/reconciler_fixture.h"

namespace paratune::controllers {
namespace {

using kube::Json;
namespace res = kube::resources;
using testing::WaitUntil;

constexpr const char* kOpNs = "paratune-system";

health::TrialObservation Observation(const std::string& trial, const std::string& node) {
  health::TrialObservation obs;
  obs.campaign = "ns/c";
  obs.trial = trial;
  obs.nodes = {node};
  return obs;
}

// A ConfigMap informer (namespace, label selector) running on its own thread.
class RunningInformer {
 public:
  RunningInformer(kube::FakeKubeClient* client, const std::string& ns, const std::string& selector)
      : client_(client) {
    kube::ReflectorOptions ro;
    ro.ns = ns;
    ro.label_selector = selector;
    ro.seed = 3;
    informer_ = std::make_unique<kube::Informer>(client, res::kConfigMaps, ro,
                                                 RealTimeSource::Get(), nullptr);
    thread_ = std::jthread([this](std::stop_token st) { informer_->Run(st); });
    EXPECT_TRUE(WaitUntil([&] { return informer_->HasSynced(); }));
  }
  ~RunningInformer() { Stop(); }
  // Freezes the cache where it is (no more watch events).
  void Stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    client_->CloseWatches();
    thread_.join();
  }
  // Waits until the cache holds ns/name at the server's resourceVersion.
  bool CaughtUp(const std::string& ns, const std::string& name) {
    return WaitUntil([&] {
      auto live = client_->Get(res::kConfigMaps, ns, name);
      auto cached = informer_->Get({ns, name});
      return live.ok() && cached &&
             kube::ResourceVersionOf(*cached) == kube::ResourceVersionOf(*live);
    });
  }
  kube::Informer* get() { return informer_.get(); }

 private:
  kube::FakeKubeClient* client_;
  std::unique_ptr<kube::Informer> informer_;
  std::jthread thread_;
};

TEST(ConfigMapCacheTest, LedgerReadsOfEveryTrialLaunchSendNoRequest) {
  kube::FakeKubeClient client;
  RunningInformer inf(&client, kOpNs, kOperatorStateLabel);
  ConfigMapCache cache(&client, {inf.get()});
  NodeLedgerStore store(&client, kOpNs, 5, &cache);
  ASSERT_TRUE(store
                  .Modify([](health::NodeLedger* l) {
                    l->RecordTrial(Observation("t1", "gpu-1"), "2026-01-01T00:00:00Z");
                  })
                  .ok());
  ASSERT_TRUE(inf.CaughtUp(kOpNs, kNodeHealthConfigMap));
  client.ResetCalls();
  for (int i = 0; i < 50; ++i) {
    auto ledger = store.Load();
    ASSERT_TRUE(ledger.ok()) << ledger.status().ToString();
    ASSERT_NE(ledger->ToJson().dump().find("gpu-1"), std::string::npos);
  }
  EXPECT_EQ(client.TotalCalls(), 0) << "50 reads of the ledger must come from the cache";
}

TEST(ConfigMapCacheTest, OnlyLabelledConfigMapsAreCached) {
  kube::FakeKubeClient client;
  client.Seed(res::kConfigMaps,
              Json{{"apiVersion", "v1"},
                   {"kind", "ConfigMap"},
                   {"metadata", {{"name", "someone-elses"}, {"namespace", kOpNs}}},
                   {"data", {{"big", std::string(4096, 'x')}}}});
  RunningInformer inf(&client, kOpNs, kOperatorStateLabel);
  EXPECT_EQ(inf.get()->Size(), 0u);
  ConfigMapCache cache(&client, {inf.get()});
  EXPECT_EQ(cache.Get(kOpNs, "someone-elses").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(cache.GetLive(kOpNs, "someone-elses").ok());
}

// Another writer updates the ledger while this process's cache is behind (frozen here): the
// write on the stale copy conflicts, is applied again on the winner's version, and neither
// writer's evidence is lost.
TEST(ConfigMapCacheTest, AConflictOnAStaleCacheLosesNoEvidence) {
  kube::FakeKubeClient client;
  RunningInformer inf(&client, kOpNs, kOperatorStateLabel);
  ConfigMapCache cache(&client, {inf.get()});
  NodeLedgerStore cached(&client, kOpNs, 5, &cache);
  NodeLedgerStore other(&client, kOpNs);  // reads live, like a second writer
  const std::string now = "2026-01-01T00:00:00Z";
  ASSERT_TRUE(
      cached.Modify([&](health::NodeLedger* l) { l->RecordTrial(Observation("t1", "gpu-1"), now); })
          .ok());
  ASSERT_TRUE(inf.CaughtUp(kOpNs, kNodeHealthConfigMap));
  inf.Stop();
  ASSERT_TRUE(
      other.Modify([&](health::NodeLedger* l) { l->RecordTrial(Observation("t2", "gpu-2"), now); })
          .ok());
  client.ResetCalls();
  auto written = cached.Modify(
      [&](health::NodeLedger* l) { l->RecordTrial(Observation("t3", "gpu-3"), now); });
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(client.Calls("update"), 2) << "one conflict, one write on the fresh copy";
  auto stored = other.Load();
  ASSERT_TRUE(stored.ok());
  const std::string text = stored->ToJson().dump();
  for (const char* node : {"gpu-1", "gpu-2", "gpu-3"}) {
    EXPECT_NE(text.find(node), std::string::npos) << node;
  }
}

// Saves a pool holding one note for `campaign`, as an earlier operator process did.
Status SavePoolWithNote(kube::FakeKubeClient* client, const Json& campaign,
                        const std::string& text) {
  MessagePool pool;
  PoolMessage note;
  note.kind = "note";
  note.text = text;
  pool.AddMessage(note);
  ConfigMapPoolStore writer(client);
  return writer.Save(campaign, pool, "").status();
}

// Loads `campaign`'s pool as a restarted operator does: a new store (no heads remembered)
// reading through `cache`.
Result<LoadedPool> LoadAfterRestart(kube::FakeKubeClient* client, const ConfigMapCache* cache,
                                    const Json& campaign) {
  ConfigMapPoolStoreOptions opts;
  opts.configmaps = cache;
  ConfigMapPoolStore restarted(client, opts);
  return restarted.Load(campaign);
}

// A new process (empty head cache) loads a campaign's pool from the informer, and a campaign
// without a pool yet costs no request to find that out.
TEST(ConfigMapCacheTest, PoolLoadsComeFromTheCache) {
  kube::FakeKubeClient client;
  auto campaign = client.Create(res::kTuningCampaigns, "ns",
                                Json{{"metadata", {{"name", "c"}, {"namespace", "ns"}}}});
  auto fresh = client.Create(res::kTuningCampaigns, "ns",
                             Json{{"metadata", {{"name", "new"}, {"namespace", "ns"}}}});
  ASSERT_TRUE(campaign.ok() && fresh.ok());
  ASSERT_TRUE(SavePoolWithNote(&client, *campaign, "the first note").ok());
  RunningInformer inf(&client, "", kCampaignLabel);
  ConfigMapCache cache(&client, {inf.get()});
  client.ResetCalls();
  auto loaded = LoadAfterRestart(&client, &cache, *campaign);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_NE(loaded->pool.ToJson().dump().find("the first note"), std::string::npos);
  EXPECT_FALSE(loaded->version.empty());
  auto none = LoadAfterRestart(&client, &cache, *fresh);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->version.empty());
  EXPECT_EQ(client.TotalCalls(), 0);
}

// A campaign in the operator's own namespace: two informers cover it (the node ledger's label
// and the campaigns'); its pool is found in the second after a restart (the first alone used
// to answer NotFound, and the restarted operator saw an empty pool).
TEST(ConfigMapCacheTest, EveryInformerOfANamespaceIsAsked) {
  kube::FakeKubeClient client;
  auto campaign = client.Create(res::kTuningCampaigns, kOpNs,
                                Json{{"metadata", {{"name", "c"}, {"namespace", kOpNs}}}});
  ASSERT_TRUE(campaign.ok());
  ASSERT_TRUE(SavePoolWithNote(&client, *campaign, "kept across restarts").ok());
  RunningInformer ledger(&client, kOpNs, kOperatorStateLabel);
  RunningInformer campaigns(&client, "", kCampaignLabel);
  ConfigMapCache cache(&client, {ledger.get(), campaigns.get()});
  client.ResetCalls();
  auto loaded = LoadAfterRestart(&client, &cache, *campaign);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_NE(loaded->pool.ToJson().dump().find("kept across restarts"), std::string::npos);
  auto listed = cache.ListLabelled(kOpNs, kCampaignLabel);
  ASSERT_TRUE(listed.ok());
  EXPECT_FALSE(listed->empty());
  EXPECT_EQ(client.TotalCalls(), 0);
}

// Warm start reads earlier campaigns' published results from the cache of labelled ConfigMaps:
// no LIST per new campaign (each returned every pool of the namespace), the campaign's own
// output skipped, pools (labelled, no past-optimization.json) ignored; a named knowledge
// ConfigMap without the label is the only request.
TEST(ConfigMapCacheTest, WarmStartRecordsComeFromTheCache) {
  kube::FakeKubeClient client;
  const auto record = [](const std::string& id) {
    return Json{{"pastOptimizations",
                 {{{"id", id},
                   {"workload", "w"},
                   {"after", {{"tp", 4}}},
                   {"metric", "mfu"},
                   {"afterValue", 0.5}}}}}
        .dump();
  };
  const auto cm = [](const std::string& name, bool labelled, Json data) {
    Json c = {{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", name}, {"namespace", "ns"}}},
              {"data", std::move(data)}};
    if (labelled) c["metadata"]["labels"] = {{kCampaignLabel, name}};
    return c;
  };
  client.Seed(res::kConfigMaps, cm("earlier-best", true, {{kPastOptimizationKey, record("e/1")}}));
  client.Seed(res::kConfigMaps, cm("mine-best", true, {{kPastOptimizationKey, record("m/1")}}));
  client.Seed(res::kConfigMaps, cm("earlier-pool", true, {{"pool.json", "{}"}}));
  client.Seed(res::kConfigMaps, cm("site", false, {{"past.json", record("s/1")}}));
  RunningInformer inf(&client, "ns", kCampaignLabel);
  ASSERT_EQ(inf.get()->Size(), 3u);
  ConfigMapCache cache(&client, {inf.get()});
  CampaignSpec spec;
  spec.output_config_map = "mine-best";
  client.ResetCalls();
  auto past = LoadPastRecords(cache, spec, "ns");
  ASSERT_TRUE(past.ok()) << past.status().ToString();
  ASSERT_EQ(past->records.size(), 1u);
  EXPECT_EQ(past->records[0].id, "e/1");
  EXPECT_EQ(client.TotalCalls(), 0) << "published results must come from the cache";

  spec.agents.knowledge_config_maps = {"site"};
  past = LoadPastRecords(cache, spec, "ns");
  ASSERT_TRUE(past.ok()) << past.status().ToString();
  ASSERT_EQ(past->records.size(), 2u);
  EXPECT_EQ(past->records[0].id, "s/1");
  EXPECT_EQ(client.TotalCalls(), 1) << "an unlabelled knowledge ConfigMap is read live";
}

}  // namespace
}  // namespace paratune::controllers
