// Replay against the measured tables of bench/measurements/ (README there: sources and how each
// was converted), the public ones included: every table a user could replay, and what the loop
// does on one a real project published.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/predict/planner_model.h"
#include "agents/sim_campaign/replay.h"
#include "agents/sim_campaign/simulation.h"

namespace paratune {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

fs::path MeasurementsDir() { return fs::path(PARATUNE_SOURCE_DIR) / "bench/measurements"; }

// Every NAME.jsonl of bench/measurements/*/ (the replay benchmark's tables).
std::vector<fs::path> Tables() {
  std::vector<fs::path> out;
  for (const auto& e : fs::recursive_directory_iterator(MeasurementsDir())) {
    if (e.path().extension() == ".jsonl") out.push_back(e.path());
  }
  return out;
}

// A row the campaign's search space or the launch checks exclude would silently never be
// replayed (the loop cannot propose it): every measured row must be a configuration the
// campaign can launch, except rows recorded as failing for their parallelism.
TEST(PublicTablesTest, EveryMeasuredRowIsAConfigurationItsCampaignCanPropose) {
  const std::vector<fs::path> tables = Tables();
  ASSERT_GE(tables.size(), 10u);
  for (const auto& jsonl : tables) {
    fs::path yaml = jsonl;
    yaml.replace_extension(".yaml");
    auto spec = CampaignFromYaml(ReadAll(yaml));
    ASSERT_TRUE(spec.ok()) << yaml << ": " << spec.status().ToString();
    auto trials = ParseMeasurements(ReadAll(jsonl), *spec, jsonl.string());
    ASSERT_TRUE(trials.ok()) << trials.status().ToString();
    auto model = CreateModelPlanner(*spec);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    for (const auto& t : *trials) {
      const std::string row = jsonl.filename().string() + " " + ConfigToJson(t.config).dump();
      EXPECT_TRUE(spec->CheckInSearchSpace(t.config, "config").ok()) << row;
      if (t.category == "InvalidParallelism") continue;
      EXPECT_TRUE((*model)->Violations(t.config).empty()) << row;
    }
  }
}

// What replaying `table` (bench/measurements/<table>.yaml + .jsonl) ends with.
struct ReplayOutcome {
  int trials = 0, ooms = 0, table_ooms = 0;
  int reached_98_at = 0;  // trial that first reached 98% of the table's best; 0: never
  std::string log;
};

ReplayOutcome Replay(const std::string& table, int max_trials) {
  ReplayOutcome out;
  const fs::path base = MeasurementsDir() / table;
  auto spec = CampaignFromYaml(ReadAll(base.string() + ".yaml"));
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  if (!spec.ok()) return out;
  auto trials = ParseMeasurements(ReadAll(base.string() + ".jsonl"), *spec, table);
  EXPECT_TRUE(trials.ok()) << trials.status().ToString();
  if (!trials.ok()) return out;
  double best = 0;
  for (const auto& t : *trials) {
    if (t.Succeeded()) best = std::max(best, t.metrics.tokens_per_second_per_device);
    out.table_ooms += t.OutOfMemory();
  }
  auto runner = MakeReplayRunner(*spec, *trials);
  EXPECT_TRUE(runner.ok()) << runner.status().ToString();
  if (!runner.ok()) return out;
  SimulationOptions opt;
  opt.max_trials = max_trials;
  auto result = RunSimulation(*spec, opt, runner->get(), nullptr);
  EXPECT_TRUE(result.ok()) << result.status().ToString();
  if (!result.ok()) return out;
  double so_far = 0;
  for (const auto& t : result->json["trials"]) {
    ++out.trials;
    if (t["phase"] == "Failed" && t["failure"]["category"] == "CudaOOM") ++out.ooms;
    if (t["phase"] == "Succeeded") {
      so_far = std::max(so_far, t["metrics"]["tokensPerSecondPerDevice"].get<double>());
    }
    if (out.reached_98_at == 0 && best > 0 && so_far >= 0.98 * best) {
      out.reached_98_at = out.trials;
    }
  }
  out.log = result->json["trials"].dump();
  return out;
}

// Replays `table` for `budget` trials: the table holds at least `table_ooms` out-of-memory
// rows, the loop launches at most one of them and reaches 98% of the table's best within 4 trials.
void ExpectBestWithinFourTrialsAndAtMostOneOom(const std::string& table, int budget,
                                               int table_ooms) {
  const ReplayOutcome r = Replay(table, budget);
  ASSERT_GE(r.table_ooms, table_ooms);
  EXPECT_LE(r.ooms, 1) << r.log;
  EXPECT_GE(r.reached_98_at, 1) << r.log;
  EXPECT_LE(r.reached_98_at, 4) << r.log;
}

// BigScience's tr11 (BLOOM) topology search, 181B parameters on 48 nodes x 8 A100 80GB with
// Megatron-DeepSpeed (11 configurations that ran, 2 that ran out of memory, GBS 2048): the loop
// reaches 98% of the table's best within 4 trials and launches at most one of its OOMs.
TEST(PublicTablesTest, BloomTopologyTableBestWithinFourTrialsAndAtMostOneOom) {
  ExpectBestWithinFourTrialsAndAtMostOneOom("bigscience-tr11/tr11-181b-gbs2048", 8, 2);
}

// BigScience's 1.3B benchmark on 8 V100 16GB (pipeline depth x micro-batch, 3 of 11 out of
// memory, two of them predicted within 0.7 GiB of the card): the same, on a small card.
TEST(PublicTablesTest, V100SixteenGigabyteTableBestWithinFourTrialsAndAtMostOneOom) {
  ExpectBestWithinFourTrialsAndAtMostOneOom("bigscience-tr3m/tr3m-1b3-v100-16gb", 6, 3);
}

// BigScience's 184B BLOOM candidate (bf16 with DeepSpeed's BF16_Optimizer, nvidia-smi readings
// only): with the megatron-deepspeed profile the tp 4 rows come out near capacity and the
// readings bound the peak instead of inflating the activations, so the loop launches at most
// one OOM and still reaches tp 8 / mbs 4, the table's best (72 GB read), within 4 trials.
TEST(PublicTablesTest, DeepSpeedBf16TableBestWithinFourTrialsAndAtMostOneOom) {
  ExpectBestWithinFourTrialsAndAtMostOneOom("bigscience-tr11/tr11-184b-gbs2048", 4, 2);
}

}  // namespace
}  // namespace paratune
