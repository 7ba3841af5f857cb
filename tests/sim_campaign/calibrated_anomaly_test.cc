// Issue 14 item 5: "slower than predicted" compares with the campaign's calibrated prediction
// and its measured spread, so a model that is far too optimistic raises no node alarm.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "agents/model/workload.h"
#include "agents/sim_campaign/replay.h"
#include "agents/sim_campaign/sim_runner.h"
#include "agents/sim_campaign/simulation.h"

namespace paratune {
namespace {

std::string Read(const std::string& rel) {
  std::ifstream f(std::string(PARATUNE_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The measured qwen2.5-0.5b table: the cold model predicts every step 33-79% too fast.
constexpr const char* kQwen = R"(
kind: TuningCampaign
metadata: {name: qwen05b}
spec:
  model: {numLayers: 24, hiddenSize: 896, ffnHiddenSize: 4864, numAttentionHeads: 14,
          numQueryGroups: 2, vocabSize: 151936}
  training: {seqLength: 4096, globalBatchSize: 32}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 1, devicesPerNode: 1}
  searchSpace:
    parameters:
    - {name: mbs, values: [1, 4, 16]}
    - {name: recompute, values: [full, none]}
  objective: {metric: tokensPerSecondPerDevice}
  budget: {maxTrials: 6}
)";

TEST(CalibratedAnomalyTest, ReplayedRealRunsOfAnOptimisticModelAreNotAnomalous) {
  auto spec = CampaignFromYaml(kQwen);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto trials = ParseMeasurements(Read("bench/measurements/h100-hf/qwen25-05b-s4096-gbs32.jsonl"),
                                  *spec, "qwen.jsonl");
  ASSERT_TRUE(trials.ok());
  auto runner = MakeReplayRunner(*spec, *trials);
  ASSERT_TRUE(runner.ok());
  SimulationOptions opt;
  opt.max_trials = 6;
  auto result = RunSimulation(*spec, opt, runner->get(), nullptr);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_GE(result->json["trialCounts"]["succeeded"].get<int>(), 3);
  // The configuration the calibrated model misses worst (mbs 1 with full recompute, 44% slower:
  // eager recomputation) may be set aside once; its repeat agrees with it, so it is learned from
  // and never run a third time.
  EXPECT_LE(result->json["trialCounts"]["anomalous"].get<int>(), 1)
      << result->json["trials"].dump();
  std::map<std::string, int> runs;
  for (const auto& t : result->json["trials"]) ++runs[t["config"].dump()];
  for (const auto& [config, n] : runs) EXPECT_LE(n, 2) << config;
}

TEST(CalibratedAnomalyTest, HealthyNodesOfStructuralRealitiesStayTrusted) {
  for (const char* name :
       {"s02-llama3-8b-h100x8", "s03-llama2-7b-a100x16", "s07-mixtral-8x7b-h100x32"}) {
    auto spec =
        LoadCampaignFile(std::string(PARATUNE_SOURCE_DIR) + "/bench/scenarios/" + name + ".yaml");
    ASSERT_TRUE(spec.ok()) << name << ": " << spec.status().ToString();
    auto w = ResolveWorkload(*spec);
    ASSERT_TRUE(w.ok());
    const int64_t per_node = std::max<int64_t>(1, w->DevicesPerNode());
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      auto runner = MakeSimulatedClusterRunner(*spec, seed, "", "structural");
      ASSERT_TRUE(runner.ok());
      SimulationOptions opt;
      opt.seed = seed;
      opt.max_trials = 12;
      opt.nodes = 2 * std::max<int64_t>(1, (w->devices + per_node - 1) / per_node);
      auto result = RunSimulation(*spec, opt, runner->get(), nullptr);
      ASSERT_TRUE(result.ok()) << result.status().ToString();
      EXPECT_TRUE(result->json["suspectNodes"].empty())
          << name << " seed " << seed << ": " << result->json["suspectNodes"].dump();
    }
  }
}

}  // namespace
}  // namespace paratune
