// Two candidates the framework runs identically are one point of the search space
// (agents/core/framework_rules.h CanonicalConfig): Megatron-LM turns sequence parallelism off at
// tp 1, so tp 1 with and without sequenceParallel is one run.
#include <gtest/gtest.h>

#include "agents/core/campaign.h"
#include "agents/predict/planner_model.h"
#include "agents/predict/predictor.h"

namespace paratune {
namespace {

TEST(SearchSpaceCanonicalTest, SequenceParallelAtTp1IsOnePoint) {
  auto spec = CampaignFromYaml(R"(
spec:
  model: {preset: llama3-8b}
  training: {framework: megatron-lm, seqLength: 4096, globalBatchSize: 256}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 1, devicesPerNode: 8}
  searchSpace:
    parameters:
    - {name: tp, values: [1, 2, 4]}
    - {name: sequenceParallel, values: [true, false]}
    - {name: distributedOptimizer, values: [true]}
)");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto model = CreateModelPlanner(*spec);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto space = SearchSpaceIndex::Build(*spec, **model, 1000);
  ASSERT_TRUE(space.ok());
  EXPECT_EQ(space->total_size(), 6);
  EXPECT_EQ(space->points().size(), 5u);  // tp 1 x {true, false} folded
  EXPECT_EQ(space->duplicates(), 1);
  const Config with = {{"tp", ParamValue::Int(1)},
                       {"sequenceParallel", ParamValue::Bool(true)},
                       {"distributedOptimizer", ParamValue::Bool(true)}};
  Config without = with;
  without["sequenceParallel"] = ParamValue::Bool(false);
  ASSERT_GE(space->Find(ConfigKey(with)), 0);
  EXPECT_EQ(space->Find(ConfigKey(with)), space->Find(ConfigKey(without)));
  // The kept point is written as Megatron-LM runs it.
  EXPECT_FALSE(
      GetBool(space->points()[space->Find(ConfigKey(with))].config, "sequenceParallel", true));
  Config tp2 = with;
  tp2["tp"] = ParamValue::Int(2);
  Config tp2_off = tp2;
  tp2_off["sequenceParallel"] = ParamValue::Bool(false);
  EXPECT_NE(space->Find(ConfigKey(tp2)), space->Find(ConfigKey(tp2_off)));
}

}  // namespace
}  // namespace paratune
