// A device-level memory reading (nvidia-smi: allocator reserve + CUDA context + communication
// buffers) is an upper bound of the allocated peak (docs/api.md section 11): the memory fit
// never takes it for the peak itself.
#include <gtest/gtest.h>

#include "agents/core/campaign.h"
#include "agents/predict/memory_fit.h"
#include "agents/sim_campaign/replay.h"

namespace paratune {
namespace {

MemoryFeatures Features(double activations_gib) {
  MemoryFeatures f;
  f.overhead_gib = 2.0;
  f.static_gib = 30.0;
  f.activations_gib = activations_gib;
  return f;
}

CalibrationState Fitted(const std::vector<MemoryObservation>& obs) {
  CalibrationState c;
  FitMemoryModel(obs, &c);
  return c;
}

TEST(MemoryBoundTest, AReadingAboveThePredictionTeachesNothing) {
  const CalibrationState cold = Fitted({});
  const MemoryFeatures small = Features(10.0), large = Features(20.0);
  ASSERT_NEAR(LearnedPeakGiB(small, cold), 42.0, 1e-9);
  // nvidia-smi read 61 where the model predicts 42: the peak is at most 61, which the model
  // already says. Read as the peak itself, the same figure would add ~19 GiB somewhere.
  MemoryObservation bound{small, false, 0, 0, 61.0};
  const CalibrationState b = Fitted({bound});
  EXPECT_NEAR(LearnedPeakGiB(small, b), 42.0, 1e-9);
  EXPECT_NEAR(LearnedPeakGiB(large, b), LearnedPeakGiB(large, cold), 1e-9);
  MemoryObservation peak{small, false, 61.0, 0, 0};
  const CalibrationState p = Fitted({peak});
  EXPECT_GT(LearnedPeakGiB(small, p), 55.0);
  EXPECT_GT(LearnedPeakGiB(large, p), LearnedPeakGiB(large, cold) + 10.0);
}

TEST(MemoryBoundTest, AReadingBelowThePredictionCapsIt) {
  // The device held less than the model predicts for this configuration: the fit comes down
  // to the reading, and no further.
  MemoryObservation bound{Features(10.0), false, 0, 0, 36.0};
  const CalibrationState b = Fitted({bound});
  const double learned = LearnedPeakGiB(Features(10.0), b);
  EXPECT_LE(learned, 36.0 + 0.3);
  EXPECT_GT(learned, 35.0);
}

TEST(MemoryBoundTest, AnOomStillWinsOverABoundElsewhere) {
  // A run at 10 GiB of activations read 61 on the device; the same run at 40 GiB ran out of
  // 79 GiB: the fit must lift the larger one past capacity without breaking the bound.
  MemoryObservation ran{Features(10.0), false, 0, 0, 61.0};
  MemoryObservation oom{Features(40.0), true, 0, 79.0, 0};
  const CalibrationState c = Fitted({ran, oom});
  EXPECT_GE(LearnedPeakGiB(Features(40.0), c), 79.0);
  EXPECT_LE(LearnedPeakGiB(Features(10.0), c), 61.0 + 0.3);
}

TEST(MemoryBoundTest, MeasuredLinesKeepTheReadingApartFromThePeak) {
  auto spec = CampaignFromYaml(
      "spec: {model: {preset: llama3-8b}, training: {seqLength: 4096, globalBatchSize: 32}, "
      "hardware: {accelerator: nvidia-a100-80gb, nodes: 1, "
      "devicesPerNode: 8}, searchSpace: {parameters: [{name: mbs, values: [1, 2]}]}}");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto trials = ParseMeasurements(
      "{\"config\": {\"mbs\": 1}, \"outcome\": \"succeeded\", \"metrics\": {\"stepTimeSeconds\": "
      "2.0, \"tokensPerSecondPerDevice\": 100.0, \"deviceMemoryUsedGiB\": 61.0}}\n"
      "{\"config\": {\"mbs\": 2}, \"outcome\": \"succeeded\", \"metrics\": {\"stepTimeSeconds\": "
      "2.0, \"tokensPerSecondPerDevice\": 200.0, \"peakMemoryGiB\": 48.45}}\n",
      *spec, "t.jsonl");
  ASSERT_TRUE(trials.ok()) << trials.status().ToString();
  ASSERT_EQ(trials->size(), 2u);
  EXPECT_EQ((*trials)[0].metrics.peak_memory_gib, 0.0);
  EXPECT_EQ((*trials)[0].metrics.device_memory_used_gib, 61.0);
  EXPECT_EQ((*trials)[0].metrics.ToJson().value("deviceMemoryUsedGiB", 0.0), 61.0);
  // A line without the reading writes no such key (the TrialRun metrics stay as they were).
  EXPECT_FALSE((*trials)[1].metrics.ToJson().contains("deviceMemoryUsedGiB"));
}

}  // namespace
}  // namespace paratune
