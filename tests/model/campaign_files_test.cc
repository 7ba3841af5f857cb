// The published tables of docs/model.md reproduced from campaign YAML files through the path
// `paratune estimate -f FILE` takes (LoadCampaignFile -> ResolveWorkload -> EstimateConfig of
// the baseline), and the same numbers as the calibration path (testing/eval/published.cc).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"
#include "testing/eval/published.h"
#include "testing/eval/published_tables.h"

namespace paratune {
namespace {

const std::string kData = std::string(PARATUNE_SOURCE_DIR) + "/tests/model/data/";

struct Row {
  std::string file, metric;
  double published = 0;
};

std::vector<Row> PublishedRows(const std::string& prefix) {
  std::ifstream in(kData + "published.tsv");
  std::vector<Row> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    Row r;
    ss >> r.file >> r.metric >> r.published;
    if (r.file.rfind(prefix, 0) == 0) rows.push_back(r);
  }
  return rows;
}

// What `paratune estimate -f FILE` prints, in the row's metric.
double EstimateFromFile(const Row& r) {
  auto spec = LoadCampaignFile(kData + r.file);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  if (!spec.ok()) return 0;
  auto w = ResolveWorkload(*spec);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  if (!w.ok()) return 0;
  const Estimate e = EstimateConfig(*w, spec->baseline.value_or(Config{}));
  EXPECT_TRUE(e.violations.empty()) << r.file << ": " << e.violations.front();
  return r.metric == "mfuPercent" ? 100.0 * e.mfu : e.hardware_tflops_per_device;
}

void ExpectTable(const std::string& prefix, const PublishedTable& internal, double row_bound,
                 double mean_bound) {
  const std::vector<Row> rows = PublishedRows(prefix);
  ASSERT_EQ(rows.size(), internal.cases.size());
  const TableError calibrated = EvaluateTable(internal, ModelConstants::Defaults());
  double mean = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double p = EstimateFromFile(rows[i]);
    EXPECT_NEAR(p, rows[i].published, row_bound * rows[i].published) << rows[i].file;
    // The file describes exactly the workload the calibration used.
    EXPECT_NEAR(p, calibrated.predicted[i], 1e-9 * p) << rows[i].file;
    EXPECT_DOUBLE_EQ(rows[i].published, internal.cases[i].published) << rows[i].file;
    mean += std::fabs(p - rows[i].published) / rows[i].published * 100.0 / rows.size();
  }
  EXPECT_LT(mean, mean_bound);
}

TEST(CampaignFilesTest, Sc21Table1FromCampaignFiles) {
  ExpectTable("sc21/", Sc21Table1(), 0.10, 5.0);
}

TEST(CampaignFilesTest, MaxTextTableFromCampaignFiles) {
  ExpectTable("maxtext/", MaxTextMfuTable(), 0.12, 6.0);
}

// Without the workload fields the SC'21 GPT would be estimated as a Llama-style model (SwiGLU,
// untied, flash attention, no dropout): different parameters, memory and throughput.
TEST(CampaignFilesTest, GptFieldsChangeTheEstimate) {
  auto spec = LoadCampaignFile(kData + "sc21/7.5b.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto gpt = ResolveWorkload(*spec);
  ASSERT_TRUE(gpt.ok());
  EXPECT_FALSE(gpt->model.swiglu);
  EXPECT_TRUE(gpt->model.tied_embeddings);
  EXPECT_TRUE(gpt->model.dropout);
  EXPECT_FALSE(gpt->FlashAttention());
  CampaignSpec llama_style = *spec;
  llama_style.model.activation = "swiglu";
  llama_style.model.tied_embeddings = false;
  llama_style.training.attention = "flash";
  llama_style.training.dropout = 0.0;
  auto llama = ResolveWorkload(llama_style);
  ASSERT_TRUE(llama.ok());
  // GPT-3 7.5B has ~7.5B parameters with a 4h GeLU MLP; a gated MLP of the same width adds h x 4h
  // per layer.
  EXPECT_NEAR(gpt->model.TotalParams() / 1e9, 7.5, 0.3);
  EXPECT_GT(llama->model.TotalParams(), gpt->model.TotalParams() * 1.2);
  const Config c = *spec->baseline;
  const Estimate a = EstimateConfig(*gpt, c);
  const Estimate b = EstimateConfig(*llama, c);
  EXPECT_NE(a.peak_memory_gib, b.peak_memory_gib);
  EXPECT_NE(a.step_time_seconds, b.step_time_seconds);
}

// Rows of the published tables of other stacks (issue 36) written as the campaigns a user would
// apply: the kernel fields (attention: flash2, transformerEngine, moeDispatcher, moeRouting)
// reach the model exactly as the fit path's rows (testing/eval/published_tables.cc) set them.
TEST(CampaignFilesTest, OtherStacksFromCampaignFilesMatchTheFitPath) {
  auto rows = LoadPublishedTables(kData + "published/tables.yaml");
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  const std::pair<const char*, const char*> cases[] = {
      {"nemo-gpt3-175b-512gpu.yaml", "GPT3-175B tp4 pp8 cp1 mbs2 s2048 fp8 512gpu"},
      {"automodel-qwen3-moe-30b-8gpu.yaml", "Qwen3 MoE 30B tp1 pp1 cp1 ep8 mbs4 s4096 bf16 8gpu"},
      {"torchtitan-llama31-8b-cp8.yaml", "Llama 3.1 8B tp1 pp1 cp8 mbs1 s262144 fp8 8gpu compile"},
  };
  for (const auto& [file, label] : cases) {
    const PublishedRow* row = nullptr;
    for (const auto& r : *rows) {
      if (r.label == label) row = &r;
    }
    ASSERT_NE(row, nullptr) << label;
    auto spec = LoadCampaignFile(kData + "published/campaigns/" + file);
    ASSERT_TRUE(spec.ok()) << file << ": " << spec.status().ToString();
    auto w = ResolveWorkload(*spec);
    ASSERT_TRUE(w.ok()) << file << ": " << w.status().ToString();
    const Estimate from_file = EstimateConfig(*w, spec->baseline.value_or(Config{}));
    const Estimate fit_path = EstimatePublishedRow(*row, DefaultIntervals(), nullptr);
    EXPECT_TRUE(from_file.violations.empty()) << file;
    EXPECT_NEAR(from_file.tokens_per_second_per_device, fit_path.tokens_per_second_per_device,
                1e-9 * fit_path.tokens_per_second_per_device)
        << file;
    EXPECT_NEAR(from_file.peak_memory_gib, fit_path.peak_memory_gib, 1e-9) << file;
    EXPECT_EQ(from_file.verdict, fit_path.verdict) << file;
    // And the fields matter: without them the estimate differs.
    CampaignSpec plain = *spec;
    plain.training.attention = "flash";
    plain.training.transformer_engine = false;
    plain.training.moe_dispatcher = "alltoall";
    plain.training.moe_routing = "learned";
    if (std::string(file).rfind("torchtitan", 0) == 0) continue;  // states none of them
    auto pw = ResolveWorkload(plain);
    ASSERT_TRUE(pw.ok());
    EXPECT_NE(EstimateConfig(*pw, *spec->baseline).tokens_per_second_per_device,
              from_file.tokens_per_second_per_device)
        << file;
  }
}

}  // namespace
}  // namespace paratune
