// Estimates with an interval (issue 36, contract section 14): bands learned from residuals, the
// verdict with margin, the published tables as fit data, and the effects added for them.
#include "agents/model/interval.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "agents/model/perf_model.h"
#include "testing/eval/published_tables.h"
#include "tests/model/test_workloads.h"

namespace paratune {
namespace {

const std::string kData = std::string(PARATUNE_SOURCE_DIR) + "/tests/model/data";

TEST(IntervalTest, BandsAreTheResidualRangeWidenedToAMinimum) {
  const IntervalTable t = FitIntervals({{"megatron", false, 0.10},
                                        {"megatron", false, -0.20},
                                        {"megatron", false, 0.01},
                                        {"megatron", true, 0.01},
                                        {"megatron", true, 0.0},
                                        {"megatron", true, 0.005}});
  const ProfileBands& b = t.at("megatron");
  EXPECT_DOUBLE_EQ(b.step_time.low, -0.20);
  EXPECT_DOUBLE_EQ(b.step_time.high, 0.10);
  EXPECT_EQ(b.step_time.points, 3);
  EXPECT_NEAR(b.memory.low, -0.03, 1e-12);  // widened
  EXPECT_NEAR(b.memory.high, 0.03, 1e-12);
  // Two points say too little: the default band.
  const IntervalTable few = FitIntervals({{"maxtext", true, 0.5}, {"maxtext", true, 0.4}});
  EXPECT_EQ(few.at("maxtext").memory.points, 0);
  EXPECT_DOUBLE_EQ(few.at("maxtext").memory.high, DefaultBands().memory.high);
}

TEST(IntervalTest, VerdictHasAMargin) {
  auto w = testing::ProfileWorkload("megatron-lm");
  IntervalTable t;
  t["megatron"] = {{-0.1, 0.1, 5}, {-0.1, 0.1, 5}};
  Estimate e;
  e.capacity_gib = 80;
  e.step_time_seconds = 1.0;
  e.tokens_per_second_per_device = 1000;
  for (auto [peak, verdict] :
       {std::pair{70.0, "fits"}, {80.0, "marginal"}, {87.0, "marginal"}, {89.0, "does-not-fit"}}) {
    e.peak_memory_gib = peak;
    ApplyInterval(t, w, &e);
    EXPECT_EQ(e.verdict, verdict) << peak;
    EXPECT_EQ(e.fits, std::string(verdict) != "does-not-fit") << peak;
  }
  EXPECT_NEAR(e.step_time_range.low, std::exp(-0.1), 1e-12);
  EXPECT_NEAR(e.tokens_range.high, 1000 * std::exp(0.1), 1e-9);
  e.peak_memory_gib = 10;
  e.violations = {"tp 3 does not divide"};
  ApplyInterval(t, w, &e);
  EXPECT_EQ(e.verdict, "does-not-fit");
}

TEST(IntervalTest, EveryEstimateCarriesItsInterval) {
  auto w = testing::ProfileWorkload("megatron-lm");
  const Estimate e = EstimateConfig(w, {{"tp", ParamValue::Int(2)}});
  ASSERT_FALSE(e.verdict.empty());
  EXPECT_LT(e.peak_memory_range.low, e.peak_memory_gib);
  EXPECT_GT(e.peak_memory_range.high, e.peak_memory_gib);
  EXPECT_LT(e.step_time_range.low, e.step_time_seconds);
  const nlohmann::json j = e.ToJson();
  EXPECT_EQ(j.at("verdict"), e.verdict);
  EXPECT_EQ(j.at("interval").at("peakMemoryGiB").size(), 2u);
  EXPECT_TRUE(j.at("interval").contains("tokensPerSecondPerDevice"));
  EXPECT_TRUE(j.at("interval").contains("stepTimeSeconds"));
}

TEST(IntervalTest, FitDataLoadsEveryPublishedRow) {
  auto rows = LoadFitData(kData);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  int published = 0, unmodeled = 0, h100 = 0, campaigns = 0;
  for (const auto& r : *rows) {
    if (r.source == "h100-hf") {
      ++h100;
    } else if (r.source == "sc21" || r.source == "maxtext") {
      ++campaigns;
    } else {
      ++published;
      unmodeled += !r.not_modeled.empty();
      EXPECT_GT(r.measured, 0) << r.label;
    }
  }
  EXPECT_EQ(published, 43);
  EXPECT_EQ(unmodeled, 8);  // torchtune's single-device recipe
  EXPECT_EQ(h100, 25);
  EXPECT_EQ(campaigns, 18);
}

TEST(IntervalTest, DefaultBandsAreTheOnesTheFitDataGive) {
  auto rows = LoadFitData(kData);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  std::vector<Residual> all;
  for (const auto& r : *rows) {
    auto res = ResidualsOf(r, EstimatePublishedRow(r, IntervalTable{}, nullptr));
    all.insert(all.end(), res.begin(), res.end());
  }
  const IntervalTable fitted = FitIntervals(all);
  const IntervalTable& used = DefaultIntervals();
  ASSERT_EQ(fitted.size(), used.size()) << "rerun bench/model_published_bench";
  for (const auto& [profile, b] : fitted) {
    SCOPED_TRACE(profile);
    ASSERT_TRUE(used.count(profile));
    const ProfileBands& u = used.at(profile);
    EXPECT_NEAR(u.step_time.low, b.step_time.low, 0.0015);
    EXPECT_NEAR(u.step_time.high, b.step_time.high, 0.0015);
    EXPECT_NEAR(u.memory.low, b.memory.low, 0.0015);
    EXPECT_NEAR(u.memory.high, b.memory.high, 0.0015);
    EXPECT_EQ(u.step_time.points, b.step_time.points);
    EXPECT_EQ(u.memory.points, b.memory.points);
  }
}

TEST(IntervalTest, BadTableNamesTheField) {
  auto rows = LoadPublishedTables(kData + "/no-such-file.yaml");
  EXPECT_FALSE(rows.ok());
  EXPECT_NE(rows.status().message().find("no-such-file.yaml"), std::string::npos);
}

TEST(IntervalTest, TpCommOverlapHidesTensorParallelTimeAndNeedsSequenceParallel) {
  auto w = testing::ProfileWorkload("megatron-lm");
  const Config plain = {{"tp", ParamValue::Int(8)}};
  Config overlap = plain;
  overlap["tpCommOverlap"] = ParamValue::Bool(true);
  const Estimate a = EstimateConfig(w, plain), b = EstimateConfig(w, overlap);
  EXPECT_GT(a.time.tensor_parallel, 0);
  EXPECT_LT(b.time.tensor_parallel, 0.5 * a.time.tensor_parallel);
  EXPECT_LT(b.step_time_seconds, a.step_time_seconds);
  overlap["sequenceParallel"] = ParamValue::Bool(false);
  EXPECT_FALSE(CheckConstraints(w, overlap).empty());
}

TEST(IntervalTest, TorchCompileFusesTorchtitansElementwiseWork) {
  auto w = testing::ProfileWorkload("torchtitan");
  const Config eager = {{"mbs", ParamValue::Int(2)}};
  Config compiled = eager;
  compiled["torchCompile"] = ParamValue::Bool(true);
  EXPECT_LT(EstimateConfig(w, compiled).step_time_seconds,
            EstimateConfig(w, eager).step_time_seconds);
}

}  // namespace
}  // namespace paratune
