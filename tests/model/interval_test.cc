// Estimates with an interval (issue 36, contract section 14): bands learned from residuals, the
// verdict with margin, the published tables as fit data, and the effects added for them.
#include "agents/model/interval.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/model/catalog.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"
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

TEST(IntervalTest, TorchtitanKernelFactorIsTheOneTheFitDataGive) {
  auto rows = LoadFitData(kData);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  EXPECT_NEAR(ModelConstants::Defaults().torchtitan_kernel_factor, FitTorchtitanKernelFactor(*rows),
              0.0015)
      << "rerun bench/model_published_bench";
  // Each of the profile's two sources alone gives about the same factor (both stacks are PyTorch
  // FSDP2 with their own kernels); without either, the other decides it.
  const double without_torchtitan = FitTorchtitanKernelFactor(*rows, "torchtitan_llama3_h100");
  const double without_automodel = FitTorchtitanKernelFactor(*rows, "nemo_automodel_h100_bf16");
  EXPECT_LT(std::fabs(without_torchtitan - without_automodel), 0.05);
  EXPECT_LT(without_torchtitan, 0.95);
  EXPECT_DOUBLE_EQ(FitTorchtitanKernelFactor({}), 1.0);
}

TEST(IntervalTest, TorchtitanKernelFactorScalesOnlyThatProfile) {
  ModelConstants slow = ModelConstants::Defaults();
  slow.torchtitan_kernel_factor *= 0.5;
  for (const char* framework : {"torchtitan", "megatron-lm"}) {
    SCOPED_TRACE(framework);
    auto w = testing::ProfileWorkload(framework);
    const ParallelPlan p = PlanFromConfig(w, {{"mbs", ParamValue::Int(1)}});
    const Estimate a = EstimatePlan(w, p, {}, ModelConstants::Defaults());
    const Estimate b = EstimatePlan(w, p, {}, slow);
    if (std::string(framework) == "torchtitan") {
      EXPECT_GT(b.time.compute, 1.5 * a.time.compute);
    } else {
      EXPECT_DOUBLE_EQ(b.step_time_seconds, a.step_time_seconds);
    }
    EXPECT_DOUBLE_EQ(b.peak_memory_gib, a.peak_memory_gib);
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

// The published rows of one source, estimated with the default bands under `k`.
double MeanAbsThroughputError(const std::string& source,
                              const ModelConstants& k = ModelConstants::Defaults()) {
  auto rows = LoadPublishedTables(kData + "/published/tables.yaml");
  EXPECT_TRUE(rows.ok());
  double sum = 0;
  int n = 0;
  for (const auto& r : rows.ok() ? *rows : std::vector<PublishedRow>{}) {
    if (r.source != source || !r.not_modeled.empty()) continue;
    sum += std::fabs(ThroughputError(r, EstimatePublishedRow(r, DefaultIntervals(), nullptr, k)));
    ++n;
  }
  EXPECT_GT(n, 0) << source;
  return n ? sum / n : 1.0;
}

// Leave-one-source-out: the torchtitan kernel factor refitted without the source, measured on it.
TEST(IntervalTest, Fsdp2SourcesHoldTheGeneralizationTargetLeftOut) {
  auto rows = LoadFitData(kData);
  ASSERT_TRUE(rows.ok()) << rows.status().ToString();
  for (const char* source : {"torchtitan_llama3_h100", "nemo_automodel_h100_bf16"}) {
    ModelConstants k = ModelConstants::Defaults();
    k.torchtitan_kernel_factor = FitTorchtitanKernelFactor(*rows, source);
    EXPECT_LT(MeanAbsThroughputError(source, k), 0.15) << source;
  }
}

TEST(IntervalTest, NemoSourcesHoldTheGeneralizationTarget) {
  // NeMo's Transformer Engine ran FlashAttention-2 (`attention: flash2`); the target of
  // issue 36 is 15% mean |error| per source.
  EXPECT_LT(MeanAbsThroughputError("nemo_perf_summary_24_07_h100_fp8"), 0.15);
  EXPECT_LT(MeanAbsThroughputError("nemo_long_sequence_llama2_7b_h100_fp8"), 0.15);
}

TEST(IntervalTest, TorchCompileGainIsTorchtitansFusedTraffic) {
  // torchtitan measured +15.7% (8 GPUs) and +16.2% (128) for torch.compile on Llama 3.1 8B,
  // s 8192, local batch 2; the op counts of its eager and compiled blocks give about that.
  auto rows = LoadPublishedTables(kData + "/published/tables.yaml");
  ASSERT_TRUE(rows.ok());
  double eager = 0, compiled = 0;
  for (const auto& r : *rows) {
    if (r.source != "torchtitan_llama3_h100" || r.workload.devices != 8 ||
        r.workload.training.precision != "bf16") {
      continue;
    }
    const double tps =
        EstimatePublishedRow(r, DefaultIntervals(), nullptr).tokens_per_second_per_device;
    (r.config.count("torchCompile") ? compiled : eager) = tps;
  }
  ASSERT_GT(eager, 0);
  EXPECT_GT(compiled / eager, 1.10);
  EXPECT_LT(compiled / eager, 1.25);
}

TEST(IntervalTest, FlashAttention2IsSlowerOnHopperOnly) {
  for (const char* accel : {"nvidia-h100-80gb", "nvidia-a100-80gb"}) {
    Workload w = testing::ProfileWorkload("megatron-lm");
    w.hardware.accelerator = accel;
    w.accel = FindAccelerator(accel);
    ASSERT_NE(w.accel, nullptr);
    w.training.seq_length = 32768;
    w.training.global_batch_size = 8;
    const Config c = {{"cp", ParamValue::Int(2)}};
    const double cudnn = EstimateConfig(w, c).step_time_seconds;
    w.training.attention = "flash2";
    const double fa2 = EstimateConfig(w, c).step_time_seconds;
    if (std::string(accel) == "nvidia-h100-80gb") {
      EXPECT_GT(fa2, 1.2 * cudnn) << accel;
    } else {
      EXPECT_DOUBLE_EQ(fa2, cudnn) << accel;
    }
  }
}

// The MoE dispatch a campaign states (spec.training.moeDispatcher, moeRouting) reaches the model.
TEST(IntervalTest, DeepEpSendsATokenOncePerDestination) {
  auto expert_time = [](const std::string& training) {
    auto spec = CampaignFromYaml(
        "spec: {model: {preset: qwen3-moe-a0.6b}, training: {framework: torchtitan, seqLength: "
        "4096, globalBatchSize: 32" +
        training +
        "}, hardware: {accelerator: nvidia-h100-80gb, nodes: 4, devicesPerNode: 8}, "
        "searchSpace: {parameters: [{name: mbs, values: [1]}]}}");
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    if (!spec.ok()) return 0.0;
    auto w = ResolveWorkload(*spec);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    if (!w.ok()) return 0.0;
    EXPECT_TRUE(w->model.IsMoe());
    return EstimateConfig(*w, {{"ep", ParamValue::Int(16)}}).time.expert_parallel;
  };
  const double per_expert = expert_time("");
  const double random = expert_time(", moeDispatcher: deepep");
  const double contiguous = expert_time(", moeDispatcher: deepep, moeRouting: fake-balanced");
  EXPECT_GT(per_expert, 0);
  EXPECT_LT(random, per_expert);  // one copy per node over RDMA, at the link's rate
  EXPECT_LT(contiguous, random);  // the fake balanced gate packs a token's experts
}

// Each kernel field names itself when it cannot apply.
TEST(IntervalTest, KernelFieldsThatCannotApplyNameTheField) {
  auto resolve = [](const std::string& model, const std::string& training,
                    const std::string& accel) {
    auto spec = CampaignFromYaml("spec: {model: {preset: " + model +
                                 "}, training: {seqLength: 4096, globalBatchSize: 32" + training +
                                 "}, hardware: {accelerator: " + accel +
                                 "}, searchSpace: {parameters: [{name: mbs, values: [1]}]}}");
    if (!spec.ok()) return spec.status();
    auto w = ResolveWorkload(*spec);
    return w.ok() ? Status::Ok() : w.status();
  };
  auto message = [](const Status& s) { return s.ToString(); };
  EXPECT_TRUE(resolve("llama3-8b", ", attention: cudnn", "nvidia-h100-80gb").ok());
  EXPECT_THAT(message(resolve("llama3-8b", ", moeDispatcher: deepep", "nvidia-h100-80gb")),
              ::testing::HasSubstr("spec.training.moeDispatcher"));
  EXPECT_THAT(message(resolve("llama3-8b", ", moeRouting: fake-balanced", "nvidia-h100-80gb")),
              ::testing::HasSubstr("spec.training.moeRouting"));
  EXPECT_THAT(message(resolve("llama3-8b", ", transformerEngine: true", "nvidia-h100-80gb")),
              ::testing::HasSubstr("spec.training.transformerEngine"));
  EXPECT_TRUE(
      resolve("llama3-8b", ", framework: torchtitan, transformerEngine: true", "nvidia-h100-80gb")
          .ok());
  EXPECT_THAT(message(resolve("llama3-8b", ", attention: flash2", "tpu-v5p")),
              ::testing::HasSubstr("spec.training.attention"));
  EXPECT_THAT(message(resolve("llama3-8b", ", attention: fa3", "nvidia-h100-80gb")),
              ::testing::HasSubstr("spec.training.attention"));
}

}  // namespace
}  // namespace paratune
