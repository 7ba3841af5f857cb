// Warm start (issue 15 item 5): a second campaign on the same workload, given the first one's
// past-optimization record, launches the first one's best as its first trial and says so; records
// of other hardware, outside the search space or already tried do not steer it.
#include "agents/engines/warm_start.h"

#include <gtest/gtest.h>

#include "agents/report/report.h"
#include "agents/sim_campaign/sim_runner.h"
#include "agents/sim_campaign/simulation.h"

namespace paratune {
namespace {

CampaignSpec Sample() {
  return LoadCampaignFile(std::string(PARATUNE_SOURCE_DIR) +
                          "/manifests/samples/llama3-8b-h100x8.yaml")
      .value();
}

// One offline `simulate` run of `spec` on the simulated cluster of `seed`.
nlohmann::json Simulate(const CampaignSpec& spec, uint64_t seed,
                        std::vector<PastOptimization> past = {}) {
  auto runner = MakeSimulatedClusterRunner(spec, seed).value();
  SimulationOptions o;
  o.seed = seed;
  SessionDeps deps;
  deps.past = std::move(past);
  auto r = RunSimulation(spec, o, runner.get(), {}, std::move(deps));
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->json : nlohmann::json::object();
}

// What the first campaign's report writes (past-optimization.json), read back as a user's file.
std::vector<PastOptimization> RecordOf(const nlohmann::json& run) {
  auto rec = PastOptimizationRecord(run);
  EXPECT_TRUE(rec.ok()) << rec.status().ToString();
  auto parsed = ParsePastOptimizations("past-optimization.json", rec.ok() ? rec->dump() : "{}");
  EXPECT_TRUE(parsed.ok()) << parsed.status().ToString();
  return parsed.ok() ? *parsed : std::vector<PastOptimization>{};
}

TEST(WarmStartTest, SecondCampaignsFirstTrialIsTheFirstCampaignsBest) {
  const CampaignSpec first = Sample();
  const nlohmann::json run1 = Simulate(first, 3);
  ASSERT_TRUE(run1["best"].is_object());
  const nlohmann::json best = run1["best"]["config"];
  // The first campaign had to search for it: its baseline is not its best.
  ASSERT_NE(run1["trials"][0]["config"], best);

  CampaignSpec second = Sample();
  second.baseline.reset();  // with past results, the second campaign names no baseline
  const nlohmann::json run2 = Simulate(second, 5, RecordOf(run1));
  ASSERT_FALSE(run2["trials"].empty());
  const nlohmann::json& t1 = run2["trials"][0];
  EXPECT_EQ(t1["config"], best);
  EXPECT_EQ(t1["rationale"].get<std::string>().rfind("Warm start from past:" + first.name + "/", 0),
            0u)
      << t1["rationale"];
  EXPECT_EQ(t1["phase"], "Succeeded");
  // Without the record the same campaign starts elsewhere (the warm start is what put it there).
  const nlohmann::json cold = Simulate(second, 5);
  EXPECT_NE(cold["trials"][0]["config"], best);
}

TEST(WarmStartTest, WithABaselineTheWarmStartIsTheFirstProposalAfterIt) {
  const CampaignSpec spec = Sample();
  const nlohmann::json run1 = Simulate(spec, 3);
  const nlohmann::json run2 = Simulate(spec, 5, RecordOf(run1));
  ASSERT_GE(run2["trials"].size(), 2u);
  EXPECT_EQ(run2["trials"][0]["config"], run1["trials"][0]["config"]);  // the baseline
  EXPECT_EQ(run2["trials"][1]["config"], run1["best"]["config"]);
  // Tried once, it is not proposed again.
  size_t times = 0;
  for (const auto& t : run2["trials"]) times += t["config"] == run1["best"]["config"];
  EXPECT_EQ(times, 1u);
}

TEST(WarmStartTest, OnlyRecordsOfTheSameModelAndHardwareMatch) {
  const CampaignSpec spec = Sample();
  std::vector<PastOptimization> past = RecordOf(Simulate(spec, 3));
  ASSERT_EQ(past.size(), 1u);
  EXPECT_TRUE(SameModelAndHardware(spec, past[0]));
  PastOptimization other_hw = past[0];
  other_hw.workload_spec["hardware"]["accelerator"] = "nvidia-a100-80gb";
  EXPECT_FALSE(SameModelAndHardware(spec, other_hw));
  PastOptimization other_model = past[0];
  other_model.workload_spec["model"]["preset"] = "llama2-7b";
  EXPECT_FALSE(SameModelAndHardware(spec, other_model));
  // Records written before workloadSpec existed match on their workload text.
  PastOptimization text_only = past[0];
  text_only.workload_spec = nullptr;
  EXPECT_TRUE(SameModelAndHardware(spec, text_only));
  text_only.workload = "llama3-8b on 16 x nvidia-h100-80gb, seq 8192, global batch 512";
  EXPECT_FALSE(SameModelAndHardware(spec, text_only));

  // The better of two matching records ranks first.
  PastOptimization worse = past[0];
  worse.id = "worse";
  worse.after_value = past[0].after_value / 2;
  std::vector<PastOptimization> both = {worse, past[0], other_hw};
  auto ranked = MatchingPastOptimizations(spec, both);
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0]->id, past[0].id);
}

TEST(WarmStartTest, ARecordOutsideTheSearchSpaceIsSkippedAndSaysWhy) {
  CampaignSpec spec = Sample();
  spec.baseline.reset();
  std::vector<PastOptimization> past = RecordOf(Simulate(Sample(), 3));
  ASSERT_EQ(past.size(), 1u);
  past[0].after["tp"] = ParamValue::Int(3);  // no tp 3 in the search space
  const nlohmann::json run = Simulate(spec, 5, past);
  ASSERT_FALSE(run["trials"].empty());
  const std::string rationale = run["trials"][0]["rationale"].get<std::string>();
  EXPECT_EQ(rationale.find("Warm start from"), std::string::npos) << rationale;
  EXPECT_NE(rationale.find("Warm start skipped: past:"), std::string::npos) << rationale;
  EXPECT_NE(rationale.find("outside the search space"), std::string::npos) << rationale;
}

}  // namespace
}  // namespace paratune
