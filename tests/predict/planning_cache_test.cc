#include "agents/predict/planning_cache.h"

#include <gtest/gtest.h>

#include <functional>
#include <thread>
#include <vector>

#include "agents/session/tuning_session.h"
#include "tests/support/fake_model.h"

namespace paratune {
namespace {

CampaignSpec Spec() { return testing::FakeCampaign(); }

CampaignSpec WithSeqLength(int64_t seq_length) {
  CampaignSpec spec = Spec();
  spec.training.seq_length = seq_length;
  return spec;
}

TEST(PlanningKeyTest, ChangesWithEverythingTheModelAndTheSpaceAreBuiltFrom) {
  const std::string base = PlanningKey(Spec(), 20000);
  EXPECT_EQ(base, PlanningKey(Spec(), 20000));
  const std::vector<std::pair<std::string, std::function<void(CampaignSpec*)>>> edits = {
      {"preset", [](CampaignSpec* s) { s->model.preset = "llama3-70b"; }},
      {"framework", [](CampaignSpec* s) { s->training.framework = "megatron-deepspeed"; }},
      {"seqLength", [](CampaignSpec* s) { s->training.seq_length = 8192; }},
      {"globalBatchSize", [](CampaignSpec* s) { s->training.global_batch_size = 256; }},
      {"accelerator", [](CampaignSpec* s) { s->hardware.accelerator = "nvidia-a100-80gb"; }},
      {"nodes", [](CampaignSpec* s) { s->hardware.nodes = 2; }},
      {"devicesPerNode", [](CampaignSpec* s) { s->hardware.devices_per_node = 4; }}};
  for (const auto& [field, edit] : edits) {
    CampaignSpec spec = Spec();
    edit(&spec);
    EXPECT_NE(base, PlanningKey(spec, 20000)) << field;
  }
  CampaignSpec spec = Spec();
  spec.training.precision = "fp8";
  EXPECT_NE(base, PlanningKey(spec, 20000)) << "precision";
  spec = Spec();
  spec.training.attention = "unfused";
  EXPECT_NE(base, PlanningKey(spec, 20000)) << "attention";
  spec = Spec();
  spec.training.dropout = 0.1;
  EXPECT_NE(base, PlanningKey(spec, 20000)) << "dropout";
  spec = Spec();
  spec.model.num_layers = 16;
  EXPECT_NE(base, PlanningKey(spec, 20000)) << "numLayers";
  spec = Spec();
  spec.search_space[2].values.pop_back();
  EXPECT_NE(base, PlanningKey(spec, 20000)) << "a value less";
  spec = Spec();
  std::swap(spec.search_space[0], spec.search_space[1]);
  EXPECT_NE(base, PlanningKey(spec, 20000)) << "the parameters' order (the index's order)";
  EXPECT_NE(base, PlanningKey(Spec(), 100)) << "the point budget";
}

TEST(PlanningKeyTest, IsTheSameForWhatNeitherTheModelNorTheSpaceReads) {
  const std::string base = PlanningKey(Spec(), 20000);
  CampaignSpec spec = Spec();
  spec.budget.max_trials = 3;
  spec.name = "another";
  spec.objective.metric = ObjectiveMetric::kStepTimeSeconds;
  spec.hardware.node_selector["pool"] = "a";
  spec.output_config_map = "another-best";
  spec.baseline = Config{{"tp", ParamValue::Int(2)}};
  EXPECT_EQ(base, PlanningKey(spec, 20000));
}

TEST(PlanningCacheTest, BuildsOncePerKeyAndSharesIt) {
  PlanningCache cache;
  auto a = cache.Get(Spec(), 20000);
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  CampaignSpec other = Spec();
  other.budget.max_trials = 3;
  other.name = "other";
  auto b = cache.Get(other, 20000);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->space.get(), b->space.get());
  EXPECT_EQ(a->model.get(), b->model.get());
  EXPECT_EQ(a->space->points().size(), static_cast<size_t>(Spec().SearchSpaceSize()));
  const PlanningCacheStats s = cache.stats();
  EXPECT_EQ(s.builds, 1);
  EXPECT_EQ(s.hits, 1);
  EXPECT_EQ(s.entries, 1u);
  EXPECT_EQ(s.bytes, a->space->ApproximateBytes());
}

TEST(PlanningCacheTest, AnEditedWorkloadGetsItsOwnModelAndSpace) {
  PlanningCache cache;
  auto long_seq = cache.Get(Spec(), 20000);
  auto short_seq = cache.Get(WithSeqLength(2048), 20000);
  ASSERT_TRUE(long_seq.ok() && short_seq.ok());
  EXPECT_NE(long_seq->space.get(), short_seq->space.get());
  EXPECT_EQ(cache.stats().builds, 2);
  // The same configuration, estimated for each workload.
  const size_t i = long_seq->space->valid().front();
  const int64_t j = short_seq->space->Find(long_seq->space->points()[i].key);
  ASSERT_GE(j, 0);
  EXPECT_GT(long_seq->space->points()[i].base.step_time_seconds,
            short_seq->space->points()[j].base.step_time_seconds);
}

TEST(PlanningCacheTest, DropsTheLeastRecentlyUsedBeyondItsBudget) {
  const size_t one = PlanningCache().Get(Spec(), 20000)->space->ApproximateBytes();
  PlanningCache cache(one * 5 / 2);  // room for two
  ASSERT_TRUE(cache.Get(WithSeqLength(1024), 20000).ok());
  ASSERT_TRUE(cache.Get(WithSeqLength(2048), 20000).ok());
  ASSERT_TRUE(cache.Get(WithSeqLength(1024), 20000).ok());  // now the most recent
  ASSERT_TRUE(cache.Get(WithSeqLength(4096), 20000).ok());  // 2048 goes
  PlanningCacheStats s = cache.stats();
  EXPECT_EQ(s.builds, 3);
  EXPECT_EQ(s.evictions, 1);
  EXPECT_EQ(s.entries, 2u);
  EXPECT_LE(s.bytes, one * 5 / 2);
  ASSERT_TRUE(cache.Get(WithSeqLength(1024), 20000).ok());
  EXPECT_EQ(cache.stats().builds, 3) << "1024 was kept";
  ASSERT_TRUE(cache.Get(WithSeqLength(2048), 20000).ok());
  EXPECT_EQ(cache.stats().builds, 4) << "2048 was dropped";
}

TEST(PlanningCacheTest, KeepsNothingLargerThanItsBudget) {
  PlanningCache cache(1);
  auto a = cache.Get(Spec(), 20000);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->space->points().empty());
  ASSERT_TRUE(cache.Get(Spec(), 20000).ok());
  const PlanningCacheStats s = cache.stats();
  EXPECT_EQ(s.builds, 2);
  EXPECT_EQ(s.entries, 0u);
  EXPECT_EQ(s.bytes, 0u);
}

TEST(PlanningCacheTest, AFailedBuildNamesTheFieldAndIsNotKept) {
  PlanningCache cache;
  CampaignSpec unknown = Spec();
  unknown.model.preset = "llama-does-not-exist";
  auto bad = cache.Get(unknown, 20000);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.model.preset"), std::string::npos)
      << bad.status().ToString();
  EXPECT_FALSE(cache.Get(unknown, 20000).ok());
  EXPECT_EQ(cache.stats().builds, 2);
  EXPECT_EQ(cache.stats().entries, 0u);
}

TEST(PlanningCacheTest, ConcurrentCallersOfOneKeyWaitForOneBuild) {
  PlanningCache cache;
  const CampaignSpec spec = Spec();
  std::vector<const SearchSpaceIndex*> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < seen.size(); ++t) {
    threads.emplace_back([&, t] {
      auto got = cache.Get(spec, 20000);
      if (got.ok()) seen[t] = got->space.get();
    });
  }
  for (auto& t : threads) t.join();
  for (const auto* s : seen) EXPECT_EQ(s, seen.front());
  EXPECT_NE(seen.front(), nullptr);
  EXPECT_EQ(cache.stats().builds, 1);
  EXPECT_EQ(cache.stats().hits, 7);
}

// The first trials a session proposes from a cached space are those it proposes building its own.
TEST(PlanningCacheTest, ASessionPlansTheSameFromTheCachedSpace) {
  const CampaignSpec spec = Spec();
  MessagePool own_pool;
  SessionDeps own;
  own.options.detect_anomalies = false;
  auto built = TuningSession::Create(spec, &own_pool, std::move(own));
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  PlanningCache cache;
  auto planned = cache.Get(spec, SessionOptions{}.max_space_points);
  ASSERT_TRUE(planned.ok());
  MessagePool shared_pool;
  SessionDeps shared;
  shared.options.detect_anomalies = false;
  shared.model = planned->model;
  shared.space = planned->space;
  auto cached = TuningSession::Create(spec, &shared_pool, std::move(shared));
  ASSERT_TRUE(cached.ok()) << cached.status().ToString();
  EXPECT_EQ(&(*cached)->space(), planned->space.get());
  auto a = (*built)->ProposeNext(2);
  auto b = (*cached)->ProposeNext(2);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), 2u);
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ(ConfigKey((*a)[i].config), ConfigKey((*b)[i].config));
    EXPECT_DOUBLE_EQ((*a)[i].prediction.objective, (*b)[i].prediction.objective);
  }
}

TEST(PlanningCacheTest, ASessionRefusesASpaceWithoutItsModel) {
  PlanningCache cache;
  auto planned = cache.Get(Spec(), 20000);
  ASSERT_TRUE(planned.ok());
  MessagePool pool;
  SessionDeps deps;
  deps.space = planned->space;
  auto s = TuningSession::Create(Spec(), &pool, std::move(deps));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("deps.space"), std::string::npos);
}

TEST(SearchSpaceIndexTest, ApproximateBytesGrowWithThePoints) {
  auto small = BuildPlannedSpace(Spec(), 10);
  auto whole = BuildPlannedSpace(Spec(), 20000);
  ASSERT_TRUE(small.ok() && whole.ok());
  EXPECT_TRUE(small->space->sampled());
  EXPECT_LT(small->space->ApproximateBytes(), whole->space->ApproximateBytes());
  EXPECT_GT(whole->space->ApproximateBytes(), whole->space->points().size() * sizeof(SpacePoint));
}

}  // namespace
}  // namespace paratune
