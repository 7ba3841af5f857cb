// The cold model (no calibration) against real runs on one H100 80GB with Hugging Face
// transformers (tests/model/data/h100-hf, copied from the shared measurement set). Bounds:
// fit/OOM right for at least 23 of the 25 configurations, step time within 20% and peak
// memory within 10% where the configuration ran (bench/RESULTS.md lists every row).
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "testing/eval/measured_check.h"

namespace paratune {
namespace {

const std::string kDir = std::string(PARATUNE_SOURCE_DIR) + "/tests/model/data/h100-hf/";
const char* kCampaigns[] = {"llama3-8b-16l-s4096-gbs16", "llama32-1b-s4096-gbs32",
                            "llama32-1b-s8192-gbs16", "qwen25-05b-s4096-gbs32",
                            "qwen25-3b-s4096-gbs16"};

MeasuredCheck Load(const std::string& name) {
  auto check = CheckAgainstMeasurements(kDir + name + ".yaml", kDir + name + ".jsonl");
  EXPECT_TRUE(check.ok()) << check.status().ToString();
  return check.ok() ? *check : MeasuredCheck{};
}

TEST(MeasuredH100Test, ColdModelCallsFitAndPredictsTimeAndMemory) {
  int rows = 0, right = 0, ran = 0;
  for (const char* name : kCampaigns) {
    for (const auto& r : Load(name).rows) {
      ++rows;
      right += r.FitCalledRight();
      const std::string what = std::string(name) + " " + ConfigKey(r.config);
      if (!r.measured_ok) {
        EXPECT_GT(r.predicted.peak_memory_gib, 0) << what;
        continue;
      }
      ++ran;
      EXPECT_LE(std::fabs(r.StepTimeErrorPct()), 20.0)
          << what << ": predicted " << r.predicted.step_time_seconds << " s, measured "
          << r.measured_step_seconds << " s";
      EXPECT_LE(std::fabs(r.PeakMemoryErrorPct()), 10.0)
          << what << ": predicted " << r.predicted.peak_memory_gib << " GiB, measured "
          << r.measured_peak_gib << " GiB";
    }
  }
  EXPECT_EQ(rows, 25);
  EXPECT_EQ(ran, 9);
  EXPECT_GE(right, 23);
}

// An OOM'd configuration must never look lighter than one that ran at a smaller micro-batch
// with the same recomputation: the model's memory grows with the micro-batch.
TEST(MeasuredH100Test, PredictedMemoryGrowsWithMicroBatch) {
  const MeasuredCheck c = Load("llama32-1b-s4096-gbs32");
  for (const auto& a : c.rows) {
    for (const auto& b : c.rows) {
      if (GetEnum(a.config, "recompute", "") != GetEnum(b.config, "recompute", "")) continue;
      if (a.config.at("mbs").AsInt() < b.config.at("mbs").AsInt()) {
        EXPECT_LT(a.predicted.peak_memory_gib, b.predicted.peak_memory_gib);
      }
    }
  }
}

// The 0.5B model is 50% slower at mbs 1 than at mbs 4 for the same tokens: eager PyTorch's
// host dispatch, not the GPU, bounds a small micro-batch.
TEST(MeasuredH100Test, SmallModelPaysThePerMicroBatchFloor) {
  const MeasuredCheck c = Load("qwen25-05b-s4096-gbs32");
  double mbs1 = 0, mbs4 = 0;
  for (const auto& r : c.rows) {
    if (GetEnum(r.config, "recompute", "") != "none") continue;
    if (r.config.at("mbs").AsInt() == 1) mbs1 = r.predicted.step_time_seconds;
    if (r.config.at("mbs").AsInt() == 4) mbs4 = r.predicted.step_time_seconds;
  }
  ASSERT_GT(mbs4, 0);
  EXPECT_GT(mbs1 / mbs4, 1.3);
}

}  // namespace
}  // namespace paratune
