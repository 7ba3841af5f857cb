// Replay against the measured tables of bench/measurements/ (README there: sources and how each
// was converted), the public ones included: every table a user could replay, and what the loop
// does on one a real project published.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/loop/planner_model.h"
#include "agents/loop/replay.h"
#include "agents/loop/simulation.h"

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
  ASSERT_GE(tables.size(), 8u);
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

// BigScience's tr11 (BLOOM) topology search, 181B parameters on 48 nodes x 8 A100 80GB with
// Megatron-DeepSpeed (12 configurations that ran, 2 that ran out of memory, GBS 2048): the loop
// reaches 98% of the table's best within 4 trials and launches at most one of its OOMs.
TEST(PublicTablesTest, BloomTopologyTableBestWithinFourTrialsAndAtMostOneOom) {
  const fs::path base = MeasurementsDir() / "bigscience-tr11/tr11-181b-gbs2048";
  auto spec = CampaignFromYaml(ReadAll(base.string() + ".yaml"));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto trials = ParseMeasurements(ReadAll(base.string() + ".jsonl"), *spec, "tr11.jsonl");
  ASSERT_TRUE(trials.ok()) << trials.status().ToString();
  double best = 0;
  int table_ooms = 0;
  for (const auto& t : *trials) {
    if (t.Succeeded()) best = std::max(best, t.metrics.tokens_per_second_per_device);
    table_ooms += t.OutOfMemory();
  }
  ASSERT_GT(best, 0);
  ASSERT_GE(table_ooms, 2);
  auto runner = MakeReplayRunner(*spec, *trials);
  ASSERT_TRUE(runner.ok()) << runner.status().ToString();
  SimulationOptions opt;
  opt.max_trials = 8;
  auto result = RunSimulation(*spec, opt, runner->get(), nullptr);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  int n = 0, ooms = 0, reached_at = 0;
  double so_far = 0;
  for (const auto& t : result->json["trials"]) {
    ++n;
    if (t["phase"] == "Failed" && t["failure"]["category"] == "CudaOOM") ++ooms;
    if (t["phase"] == "Succeeded") {
      so_far = std::max(so_far, t["metrics"]["tokensPerSecondPerDevice"].get<double>());
    }
    if (reached_at == 0 && so_far >= 0.98 * best) reached_at = n;
  }
  EXPECT_LE(ooms, 1) << result->json["trials"].dump();
  EXPECT_GE(reached_at, 1) << "never reached 98% of " << best;
  EXPECT_LE(reached_at, 4) << result->json["trials"].dump();
}

}  // namespace
}  // namespace paratune
