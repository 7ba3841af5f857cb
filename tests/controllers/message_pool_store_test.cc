#include "controllers/message_pool_store.h"

#include <gtest/gtest.h>

#include "testing/fakes/fake_kube_client.h"
#include "tests/controllers/long_campaign_pool.h"

namespace paratune::controllers {
namespace {

using kube::Json;
namespace res = kube::resources;

Json Campaign(kube::FakeKubeClient* client) {
  Json c = {{"apiVersion", "tuning.paratune.dev/v1alpha1"},
            {"kind", "TuningCampaign"},
            {"metadata", {{"name", "llama"}, {"namespace", "ns"}}},
            {"spec", Json::object()}};
  auto created = client->Create(res::kTuningCampaigns, "ns", c);
  EXPECT_TRUE(created.ok());
  return *created;
}

MessagePool PoolWithTrials(int n, size_t evidence_bytes) {
  MessagePool pool;
  for (int i = 0; i < n; ++i) {
    TrialRecord t;
    t.iteration = i;
    t.name = "llama-t" + std::to_string(i);
    t.config = {{"tp", ParamValue::Int(1 + i % 4)}};
    t.phase = TrialPhase::kFailed;
    FailureDiagnosis d;
    d.category = "CudaOOM";
    d.evidence = std::string(evidence_bytes, 'x');
    t.failure = d;
    pool.AddTrial(t);
  }
  return pool;
}

TEST(ConfigMapPoolStoreTest, RoundTripsAndDetectsConcurrentWriters) {
  kube::FakeKubeClient client;
  Json campaign = Campaign(&client);
  ConfigMapPoolStore store(&client);
  auto empty = store.Load(campaign);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->pool.trials().empty());
  EXPECT_EQ(empty->version, "");
  auto v1 = store.Save(campaign, PoolWithTrials(3, 10), "");
  ASSERT_TRUE(v1.ok()) << v1.status().ToString();
  auto loaded = store.Load(campaign);
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->pool.trials().size(), 3u);
  EXPECT_EQ(loaded->pool.trials()[2].name, "llama-t2");
  Json head = *client.Get(res::kConfigMaps, "ns", "llama-pool");
  EXPECT_EQ(kube::ControllerOwnerOf(head)->value("uid", ""), kube::UidOf(campaign));
  // A second writer with the old version loses.
  ASSERT_TRUE(store.Save(campaign, PoolWithTrials(4, 10), *v1).ok());
  auto stale = store.Save(campaign, PoolWithTrials(5, 10), *v1);
  EXPECT_EQ(stale.status().code(), StatusCode::kConflict);
  EXPECT_EQ(store.Load(campaign)->pool.trials().size(), 4u);
}

TEST(ConfigMapPoolStoreTest, ShardsLargePoolsAndDropsOldShards) {
  kube::FakeKubeClient client;
  Json campaign = Campaign(&client);
  ConfigMapPoolStore store(&client, {/*shard_bytes=*/4096, /*max_shards=*/8});
  auto v = store.Save(campaign, PoolWithTrials(6, 2000), "");  // ~13 KB: 4 shards
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  auto cms = client.List(res::kConfigMaps, "ns", {});
  EXPECT_GE(cms->items.size(), 3u);
  for (const auto& cm : cms->items) {
    EXPECT_LE(cm["data"]["pool.json"].get<std::string>().size(), 4096u);
  }
  auto loaded = store.Load(campaign);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->pool.trials()[5].failure->evidence.size(), 2000u);
  // A smaller pool replaces it; the old generation's shards go away.
  ASSERT_TRUE(store.Save(campaign, PoolWithTrials(1, 10), loaded->version).ok());
  EXPECT_EQ(client.List(res::kConfigMaps, "ns", {})->items.size(), 1u);
  EXPECT_EQ(store.Load(campaign)->pool.trials().size(), 1u);
}

TEST(ConfigMapPoolStoreTest, CompactsWhatWouldNotFit) {
  kube::FakeKubeClient client;
  Json campaign = Campaign(&client);
  ConfigMapPoolStore store(&client, {/*shard_bytes=*/32768, /*max_shards=*/2});
  // 30 trials x 20 KB of evidence cannot fit in 64 KB unless evidence is shortened.
  auto v = store.Save(campaign, PoolWithTrials(30, 20000), "");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  auto loaded = store.Load(campaign);
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->pool.trials().size(), 30u);  // trials are never dropped
  EXPECT_LT(loaded->pool.trials()[0].failure->evidence.size(), 20000u);
  // A pool whose trials alone exceed the limit is refused, not truncated: the store's condition
  // says so (the reconciler writes it) and the error is terminal (no retry can shrink the pool).
  ConfigMapPoolStore tiny(&client, {/*shard_bytes=*/1024, /*max_shards=*/1});
  EXPECT_FALSE(tiny.PoolCondition(campaign).has_value());
  const Status refused = tiny.Save(campaign, PoolWithTrials(40, 10), *v).status();
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(refused.terminal());
  const auto cond = tiny.PoolCondition(campaign);
  ASSERT_TRUE(cond.has_value());
  EXPECT_EQ(cond->type, "PoolCompacted");
  EXPECT_FALSE(cond->status);
  EXPECT_EQ(cond->reason, "PoolFull");
  EXPECT_NE(cond->message.find("1024 bytes"), std::string::npos) << cond->message;
  // The pool saved before the refusal is intact.
  EXPECT_EQ(store.Load(campaign)->pool.trials().size(), 30u);
}

// A held pool costs no request until it is saved; Load gives it back (version "", so the save
// creates it); another process does not see it. A store that may not be the only writer does
// not hold, nor does one asked to hold a pool that was saved already.
TEST(ConfigMapPoolStoreTest, AHeldPoolIsLoadedFromMemoryAndCreatedByTheNextSave) {
  kube::FakeKubeClient client;
  Json campaign = Campaign(&client);
  ConfigMapPoolStore store(&client);
  MessagePool pool = PoolWithTrials(2, 100);
  client.ResetCalls();
  ASSERT_TRUE(store.Hold(campaign, pool, ""));
  auto held = store.Load(campaign);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_EQ(held->version, "");
  EXPECT_EQ(held->pool.ToJson(), pool.ToJson());
  EXPECT_EQ(client.Calls("create") + client.Calls("update") + client.Calls("get"), 0);
  ConfigMapPoolStore other(&client);
  EXPECT_TRUE(other.Load(campaign)->pool.trials().empty()) << "held in this process only";

  pool.trials()[0].phase = TrialPhase::kSucceeded;
  auto v = store.Save(campaign, pool, held->version);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(client.Calls("create"), 1) << "the head";
  EXPECT_EQ(other.Load(campaign)->pool.ToJson(), pool.ToJson());
  auto after = store.Load(campaign);
  EXPECT_EQ(after->version, *v) << "the saved pool, not the held one";
  EXPECT_FALSE(store.Hold(campaign, pool, *v)) << "saved already";

  ConfigMapPoolStoreOptions shared;
  shared.cache_heads = false;
  ConfigMapPoolStore not_alone(&client, shared);
  EXPECT_FALSE(not_alone.Hold(campaign, pool, ""));
}

// A held pool whose save finds another writer's pool is dropped: the next Load reads that one.
TEST(ConfigMapPoolStoreTest, AHeldPoolGivesWayToAPoolSavedElsewhere) {
  kube::FakeKubeClient client;
  Json campaign = Campaign(&client);
  ConfigMapPoolStore store(&client);
  ConfigMapPoolStore elsewhere(&client);
  ASSERT_TRUE(store.Hold(campaign, PoolWithTrials(1, 10), ""));
  ASSERT_TRUE(elsewhere.Save(campaign, PoolWithTrials(3, 10), "").ok());
  auto saved = store.Save(campaign, PoolWithTrials(2, 10), "");
  EXPECT_EQ(saved.status().code(), StatusCode::kConflict) << saved.status().ToString();
  auto loaded = store.Load(campaign);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->pool.trials().size(), 3u);
  EXPECT_NE(loaded->version, "");
}

// Appending a trial to a pool of many chunks rewrites the head and at most the chunk the
// change falls in, not every chunk; a fresh store (another process) loads it whole.
TEST(ConfigMapPoolStoreTest, SavesIncrementally) {
  kube::FakeKubeClient client;
  Json campaign = Campaign(&client);
  ConfigMapPoolStoreOptions opts{/*shard_bytes=*/4096, /*max_shards=*/64};
  ConfigMapPoolStore store(&client, opts);
  MessagePool pool = PoolWithTrials(40, 1500);
  auto v = store.Save(campaign, pool, "");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  const size_t chunks = client.List(res::kConfigMaps, "ns", {})->items.size();
  ASSERT_GE(chunks, 10u);
  client.ResetCalls();
  TrialRecord t;
  t.iteration = 40;
  t.name = "llama-t40";
  t.config = {{"tp", ParamValue::Int(2)}};
  pool.AddTrial(t);
  auto v2 = store.Save(campaign, pool, *v);
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_LE(client.Calls("create") + client.Calls("update"), 3);
  EXPECT_EQ(client.Calls("get"), 0);
  EXPECT_EQ(store.Load(campaign)->pool.trials().size(), 41u);
  EXPECT_EQ(client.Calls("get"), 0) << "this store wrote the head: no read needed";
  ConfigMapPoolStore other(&client, opts);
  auto loaded = other.Load(campaign);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->pool.trials().size(), 41u);
  EXPECT_EQ(loaded->pool.trials()[39].failure->evidence.size(), 1500u);
  const auto all = client.List(res::kConfigMaps, "ns", {});
  for (const auto& cm : all->items) {
    EXPECT_LE(cm["data"]["pool.json"].get<std::string>().size(), 4096u);
  }
}

// A pool saved by an earlier operator (head + "-pool-g<gen>-<i>" shards) loads, and the next
// save moves it to the new layout and deletes the old shards.
TEST(ConfigMapPoolStoreTest, LoadsAndMigratesTheEarlierLayout) {
  kube::FakeKubeClient client;
  Json campaign = Campaign(&client);
  const std::string text = PoolWithTrials(3, 10).ToJson().dump();
  const size_t cut = text.size() / 2;
  auto cm = [&](const std::string& name, const std::string& data, Json annotations) {
    return Json{{"apiVersion", "v1"},
                {"kind", "ConfigMap"},
                {"metadata",
                 {{"name", name},
                  {"namespace", "ns"},
                  {"labels", {{"tuning.paratune.dev/pool-of", "llama"}}},
                  {"annotations", annotations}}},
                {"data", {{"pool.json", data}}}};
  };
  ASSERT_TRUE(client
                  .Create(res::kConfigMaps, "ns",
                          cm("llama-pool-g3-1", text.substr(cut),
                             {{"tuning.paratune.dev/pool-generation", "3"}}))
                  .ok());
  ASSERT_TRUE(client
                  .Create(res::kConfigMaps, "ns",
                          cm("llama-pool", text.substr(0, cut),
                             {{"tuning.paratune.dev/pool-generation", "3"},
                              {"tuning.paratune.dev/pool-shards", "2"}}))
                  .ok());
  ConfigMapPoolStore store(&client);
  auto loaded = store.Load(campaign);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->pool.trials().size(), 3u);
  ASSERT_TRUE(store.Save(campaign, PoolWithTrials(4, 10), loaded->version).ok());
  EXPECT_FALSE(client.Get(res::kConfigMaps, "ns", "llama-pool-g3-1").ok());
  ConfigMapPoolStore fresh(&client);
  EXPECT_EQ(fresh.Load(campaign)->pool.trials().size(), 4u);
}

// Issue 16: a 10,000-trial campaign stays under the object limit, keeps every trial, and says
// that older records were compacted.
TEST(ConfigMapPoolStoreTest, TenThousandTrialsFitWithAVisibleCondition) {
  kube::FakeKubeClient client;
  Json campaign = Campaign(&client);
  const MessagePool pool = testing::LongCampaignPool(10000);
  ConfigMapPoolStore store(&client);
  auto v = store.Save(campaign, pool, "");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  const auto all = client.List(res::kConfigMaps, "ns", {});
  for (const auto& cm : all->items) {
    // The API server refuses a ConfigMap whose data exceeds 1 MiB.
    EXPECT_LT(cm["data"]["pool.json"].get<std::string>().size(), 1024u * 1024u) << kube::NameOf(cm);
  }
  CampaignStatus typed;
  if (auto c = store.PoolCondition(campaign)) typed.Apply(*c, 1, "2026-11-21T06:00:00Z");
  Json status = typed.ToJson();
  ASSERT_TRUE(status["conditions"].is_array());
  EXPECT_EQ(status["conditions"][0]["type"], "PoolCompacted");
  EXPECT_EQ(status["conditions"][0]["status"], "True");
  ConfigMapPoolStore fresh(&client);
  auto loaded = fresh.Load(campaign);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_EQ(loaded->pool.trials().size(), 10000u);
  EXPECT_EQ(loaded->pool.trials().back().proposal.rationale.size(), 240u);  // newest kept whole
  EXPECT_LT(loaded->pool.trials()[0].failure->evidence.size(), 2000u);
  EXPECT_EQ(loaded->pool.trials()[0].failure->category, "CudaOOM");
}

}  // namespace
}  // namespace paratune::controllers
