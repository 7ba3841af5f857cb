#include "agents/health/anomaly.h"

#include <gtest/gtest.h>

#include <random>

namespace paratune::health {
namespace {

// Step times with 2% noise around `base`, the first one a slow warm-up.
std::vector<double> Noisy(double base, int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.02);
  std::vector<double> v{base * 3};
  for (int i = 0; i < n; ++i) v.push_back(base * (1 + noise(rng)));
  return v;
}

TEST(AnomalyTest, HealthyNoisyRunsAreNotFlagged) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    EXPECT_FALSE(DetectStepTimeAnomaly(Noisy(10, 9, seed)).has_value()) << "seed " << seed;
  }
}

TEST(AnomalyTest, AThermalThrottleRampIsDrift) {
  // One GPU at 70% of its clock, ramping in over the first third of the run.
  std::vector<double> v = Noisy(10, 9, 7);
  const double full = 10 / 0.7;
  for (size_t i = 1; i < v.size(); ++i) {
    const double ramp = std::min(1.0, static_cast<double>(i) / 3.0);
    v[i] = (10 + ramp * (full - 10)) * (v[i] / 10);
  }
  auto a = DetectStepTimeAnomaly(v);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->kind, AnomalyKind::kStepTimeDrift);
  EXPECT_LT(a->ratio, 0.9);
  EXPECT_GT(a->observed, a->expected);
  EXPECT_NE(a->summary.find("drifted"), std::string::npos) << a->summary;
}

TEST(AnomalyTest, RepeatedSpikesAreFlaggedButTheWarmUpAndOneSpikeAreNot) {
  std::vector<double> v = Noisy(10, 9, 3);
  v[0] = 100;  // warm-up: ignored
  EXPECT_FALSE(DetectStepTimeAnomaly(v).has_value());
  v[4] = 30;  // one slow interval (a checkpoint): not enough
  EXPECT_FALSE(DetectStepTimeAnomaly(v).has_value());
  v[7] = 25;
  auto a = DetectStepTimeAnomaly(v);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->kind, AnomalyKind::kStepTimeSpikes);
  EXPECT_NEAR(a->observed, 30, 1e-9);
}

TEST(AnomalyTest, TooShortRunsAreNotJudged) {
  EXPECT_FALSE(DetectStepTimeAnomaly({50, 10, 30, 30, 10}).has_value());
  EXPECT_FALSE(DetectStepTimeAnomaly({}).has_value());
}

TEST(AnomalyTest, SlowerThanPredictedNeedsCalibrationAndHonoursTheDirection) {
  // mfu 0.31 against a calibrated 0.52: flagged once two healthy successes calibrated the model.
  EXPECT_FALSE(DetectSlowerThanPredicted("mfu", 0.31, 0.52, true, 1).has_value());
  auto a = DetectSlowerThanPredicted("mfu", 0.31, 0.52, true, 2);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->kind, AnomalyKind::kSlowerThanPredicted);
  EXPECT_NEAR(a->ratio, 0.31 / 0.52, 1e-9);
  EXPECT_NE(a->summary.find("mfu 0.31 is 60% of the calibrated 0.52"), std::string::npos)
      << a->summary;
  // 10% below the prediction is ordinary model error.
  EXPECT_FALSE(DetectSlowerThanPredicted("mfu", 0.47, 0.52, true, 5).has_value());
  // Lower is better for step time: 14 s against a predicted 9 s is slow.
  auto s = DetectSlowerThanPredicted("stepTimeSeconds", 14, 9, false, 3);
  ASSERT_TRUE(s.has_value());
  EXPECT_NEAR(s->ratio, 9.0 / 14.0, 1e-9);
  EXPECT_FALSE(DetectSlowerThanPredicted("stepTimeSeconds", 8, 9, false, 3).has_value());
  EXPECT_FALSE(DetectSlowerThanPredicted("mfu", 0.1, 0, true, 3).has_value());
}

TEST(AnomalyTest, SlowerThanPredictedAllowsForThePredictionsMeasuredSpread) {
  // 70% of the calibrated prediction: flagged when the campaign's predictions are tight...
  EXPECT_TRUE(DetectSlowerThanPredicted("mfu", 0.35, 0.5, true, 4, {}, 0.05).has_value());
  // ...but not when this prediction is known to miss by 15% (log spread): 3 spreads = 0.45.
  EXPECT_FALSE(DetectSlowerThanPredicted("mfu", 0.35, 0.5, true, 4, {}, 0.15).has_value());
  // A node at half speed stands out even from a loose prediction.
  EXPECT_TRUE(DetectSlowerThanPredicted("mfu", 0.2, 0.5, true, 4, {}, 0.15).has_value());
}

TEST(AnomalyTest, JsonRoundTripsTheContractObject) {
  Anomaly a = *DetectSlowerThanPredicted("mfu", 0.31, 0.52, true, 2);
  a.node_names = {"paratune-gpu-2"};
  const nlohmann::json j = a.ToJson();
  EXPECT_EQ(j["kind"], "SlowerThanPredicted");
  EXPECT_EQ(j["nodeNames"][0], "paratune-gpu-2");
  EXPECT_DOUBLE_EQ(j["ratio"].get<double>(), 0.5962);
  auto b = Anomaly::FromJson(nlohmann::json::parse(j.dump()));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->kind, a.kind);
  EXPECT_EQ(b->summary, a.summary);
  EXPECT_EQ(b->node_names, a.node_names);
  EXPECT_DOUBLE_EQ(b->observed, 0.31);
}

TEST(AnomalyTest, BadJsonIsRefusedNamingTheField) {
  auto kind = Anomaly::FromJson({{"kind", "Slow"}});
  ASSERT_FALSE(kind.ok());
  EXPECT_NE(kind.status().message().find("anomaly.kind: must be one of"), std::string::npos)
      << kind.status().message();
  auto missing = Anomaly::FromJson({{"observed", 1}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("anomaly.kind: required"), std::string::npos);
  auto ratio = Anomaly::FromJson({{"kind", "StepTimeDrift"}, {"ratio", "low"}});
  ASSERT_FALSE(ratio.ok());
  EXPECT_NE(ratio.status().message().find("anomaly.ratio: must be a number"), std::string::npos);
  auto nodes = Anomaly::FromJson({{"kind", "StepTimeDrift"}, {"nodeNames", {1}}});
  ASSERT_FALSE(nodes.ok());
  EXPECT_NE(nodes.status().message().find("anomaly.nodeNames[0]"), std::string::npos);
  auto typo = Anomaly::FromJson({{"kind", "StepTimeDrift"}, {"nodes", {"a"}}});
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("anomaly.nodes: unknown field"), std::string::npos);
}

}  // namespace
}  // namespace paratune::health
