#include "agents/model/catalog.h"

#include <gtest/gtest.h>

namespace paratune {
namespace {

TEST(CatalogTest, FindsAcceleratorsByNameAndGkeLabel) {
  const Accelerator* v5e = FindAccelerator("tpu-v5e");
  ASSERT_NE(v5e, nullptr);
  EXPECT_TRUE(v5e->tpu);
  EXPECT_EQ(FindAccelerator("tpu-v5-lite-podslice"), v5e);
  EXPECT_EQ(FindAccelerator("NVIDIA-H100-80GB"), FindAccelerator("nvidia-h100-80gb"));
  EXPECT_EQ(FindAccelerator("nvidia-v100"), nullptr);
  // Reference figures (vendor datasheets, see reference.md).
  EXPECT_DOUBLE_EQ(FindAccelerator("nvidia-a100-80gb")->bf16_tflops, 312);
  EXPECT_DOUBLE_EQ(FindAccelerator("nvidia-h100-80gb")->fp8_tflops, 1979);
  EXPECT_DOUBLE_EQ(FindAccelerator("tpu-v5p")->bf16_tflops, 459);
  EXPECT_DOUBLE_EQ(FindAccelerator("tpu-v6e")->hbm_gbps, 1638);
}

TEST(CatalogTest, EveryEntryHasASourceAndTpusHaveTopologies) {
  for (const auto& a : Accelerators()) {
    EXPECT_FALSE(a.source.empty()) << a.name;
    EXPECT_GT(a.hbm_gib, 0) << a.name;
    EXPECT_EQ(a.tpu, !a.tpu_topologies.empty()) << a.name;
  }
  for (const auto& m : ModelPresets()) EXPECT_FALSE(m.source.empty()) << m.name;
  EXPECT_EQ(Accelerators().size(), 8u);
}

TEST(CatalogTest, PresetParameterCountsMatchPublishedSizes) {
  struct Want {
    const char* name;
    double total_b, active_b;
  };
  // Published sizes: Llama 2 7B 6.74B, Llama 3 8B 8.03B, Llama 3 70B 70.6B, Qwen2.5 0.49B / 7.6B,
  // GPT-3 6.7B / 175B, Mixtral 46.7B total / 12.9B active, DeepSeek-V3 671B / 37B.
  const Want wants[] = {
      {"llama2-7b", 6.74, 6.74},      {"llama3-8b", 8.03, 8.03},    {"llama3-70b", 70.6, 70.6},
      {"qwen2.5-0.5b", 0.494, 0.494}, {"qwen2.5-7b", 7.62, 7.62},   {"gpt3-7b", 6.7, 6.7},
      {"gpt3-175b", 175.0, 175.0},    {"mixtral-8x7b", 46.7, 12.9}, {"deepseek-v3", 671.0, 37.0}};
  for (const auto& w : wants) {
    const ModelShape* m = FindModelPreset(w.name);
    ASSERT_NE(m, nullptr) << w.name;
    EXPECT_NEAR(m->TotalParams() / 1e9, w.total_b, 0.03 * w.total_b) << w.name;
    EXPECT_NEAR(m->ActiveParams() / 1e9, w.active_b, 0.03 * w.active_b) << w.name;
  }
  const ModelShape* qmoe = FindModelPreset("qwen3-moe-a0.6b");
  ASSERT_NE(qmoe, nullptr);
  EXPECT_NEAR(qmoe->ActiveParams() / 1e9, 0.6, 0.1);
  EXPECT_GT(qmoe->TotalParams(), 3 * qmoe->ActiveParams());
}

}  // namespace
}  // namespace paratune
