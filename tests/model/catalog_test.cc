#include "agents/model/catalog.h"

#include <gtest/gtest.h>

#include "agents/model/perf_model.h"

namespace paratune {
namespace {

TEST(CatalogTest, FindsAcceleratorsByNameAndGkeLabel) {
  const Accelerator* v5e = FindAccelerator("tpu-v5e");
  ASSERT_NE(v5e, nullptr);
  EXPECT_TRUE(v5e->tpu);
  EXPECT_EQ(FindAccelerator("tpu-v5-lite-podslice"), v5e);
  EXPECT_EQ(FindAccelerator("NVIDIA-H100-80GB"), FindAccelerator("nvidia-h100-80gb"));
  EXPECT_EQ(FindAccelerator("nvidia-k80"), nullptr);
  EXPECT_EQ(FindAccelerator("nvidia-tesla-v100"), FindAccelerator("nvidia-v100-16gb"));
  // Reference figures (vendor datasheets, see reference.md).
  EXPECT_DOUBLE_EQ(FindAccelerator("nvidia-a100-80gb")->bf16_tflops, 312);
  EXPECT_DOUBLE_EQ(FindAccelerator("nvidia-h100-80gb")->fp8_tflops, 1979);
  EXPECT_DOUBLE_EQ(FindAccelerator("tpu-v5p")->bf16_tflops, 459);
  EXPECT_DOUBLE_EQ(FindAccelerator("tpu-v6e")->hbm_gbps, 1638);
}

// V100 (BigScience's 1B3 benchmark tables, bench/measurements/bigscience-tr3m): 16-bit tensor
// cores for fp16 only, the capacity torch reports, and bf16 refused with torch's own text.
TEST(CatalogTest, V100TrainsInFp16AndRefusesBf16) {
  const Accelerator* v100 = FindAccelerator("nvidia-v100-32gb");
  ASSERT_NE(v100, nullptr);
  EXPECT_DOUBLE_EQ(v100->PeakTflops("fp16"), 125);
  EXPECT_DOUBLE_EQ(FindAccelerator("v100-16gb")->hbm_gib, 15.78);
  Workload w;
  w.model = *FindModelPreset("llama3-8b");
  w.training.seq_length = 2048;
  w.training.global_batch_size = 64;
  w.training.precision = "fp16";
  w.hardware.accelerator = "nvidia-v100-32gb";
  w.hardware.devices_per_node = 8;
  w.accel = v100;
  w.devices = 8;
  Config c;
  c["tp"] = ParamValue::Int(8);
  EXPECT_TRUE(CheckConstraints(w, c).empty());
  w.training.precision = "bf16";
  const Estimate e = EstimateConfig(w, c);
  EXPECT_FALSE(e.fits);
  ASSERT_EQ(e.violations.size(), 1u);
  EXPECT_EQ(e.violations[0], "precision bf16 is not supported by nvidia-v100-32gb; use fp16");
  w.accel = FindAccelerator("nvidia-a100-80gb");
  EXPECT_TRUE(CheckConstraints(w, c).empty());
}

TEST(CatalogTest, EveryEntryHasASourceAndTpusHaveTopologies) {
  for (const auto& a : Accelerators()) {
    EXPECT_FALSE(a.source.empty()) << a.name;
    EXPECT_GT(a.hbm_gib, 0) << a.name;
    EXPECT_EQ(a.tpu, !a.tpu_topologies.empty()) << a.name;
  }
  for (const auto& m : ModelPresets()) EXPECT_FALSE(m.source.empty()) << m.name;
  EXPECT_EQ(Accelerators().size(), 11u);  // + the 96 GB, 500 W H100 of torchtitan's tables
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
