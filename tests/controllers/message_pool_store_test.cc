#include "controllers/message_pool_store.h"

#include <gtest/gtest.h>

#include "operator/testing/fake_kube_client.h"

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
  // A pool whose trials alone exceed the limit is refused, not truncated.
  ConfigMapPoolStore tiny(&client, {/*shard_bytes=*/1024, /*max_shards=*/1});
  EXPECT_EQ(tiny.Save(campaign, PoolWithTrials(40, 10), *v).status().code(),
            StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace paratune::controllers
