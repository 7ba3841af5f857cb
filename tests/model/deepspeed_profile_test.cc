// The megatron-deepspeed profile (docs/model.md "Framework profiles"): DeepSpeed's optimizer
// wrappers lay out the training states as their source does (microsoft/DeepSpeed
// runtime/bf16_optimizer.py, zero/stage_1_and_2.py, fp16/fused_optimizer.py); the expected
// bytes below are counted by hand from those allocations, per parameter of the device.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "agents/model/perf_model.h"
#include "agents/model/workload.h"
#include "tests/model/test_workloads.h"

namespace paratune {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kBucket = 5e8;  // DeepSpeed's default reduce / all-reduce bucket, elements

Config Zero(bool stage1) {
  return {{"tp", ParamValue::Int(1)},
          {"mbs", ParamValue::Int(1)},
          {"distributedOptimizer", ParamValue::Bool(stage1)}};
}

struct Bytes {
  double weights, grads, optimizer, activations;
};

// The estimate's state terms in bytes per parameter (tp 1, pp 1: the device holds them all).
Bytes PerParam(const Estimate& e, double params) {
  return {e.memory.parameters_gib * kGiB / params, e.memory.gradients_gib * kGiB / params,
          e.memory.optimizer_gib * kGiB / params, e.memory.activations_gib * kGiB / params};
}

TEST(DeepSpeedProfileTest, Bf16OptimizerKeepsAnUnshardedFp32GradientBuffer) {
  const Workload w = testing::ProfileWorkload("megatron-deepspeed", "bf16");
  const double p = w.model.TotalParams();
  const double d = 8;  // 8 devices, tp 1, pp 1
  for (bool stage1 : {true, false}) {
    const Bytes b = PerParam(EstimateConfig(w, Zero(stage1)), p);
    // bf16_groups_flat (2); the bf16 .grad the backward writes (2) + fp32_groups_gradients_flat
    // (zeros_like the whole bf16 flat buffer, 4); fp32_groups_flat_partition (4/d) + Adam's two
    // fp32 moments on it (8/d). BF16_Optimizer partitions at ZeRO 0 and 1 alike.
    EXPECT_NEAR(b.weights, 2.0, 1e-9) << stage1;
    EXPECT_NEAR(b.grads, 2.0 + 4.0, 1e-9) << stage1;
    // The fp32 all-reduce bucket (4 bytes x 5e8) comes after the activations are freed: it
    // adds only what exceeds them.
    const double bucket = 4.0 * std::min(p, kBucket) / p;
    EXPECT_NEAR(b.optimizer, 12.0 / d + std::max(0.0, bucket - b.activations), 1e-9) << stage1;
  }
  // Megatron-LM's distributed optimizer for the same run: fp32 main grads only (4), 6 + 12/d.
  const Bytes m =
      PerParam(EstimateConfig(testing::ProfileWorkload("megatron-lm", "bf16"), Zero(true)), p);
  const Bytes ds = PerParam(EstimateConfig(w, Zero(true)), p);
  EXPECT_NEAR(ds.grads - m.grads, 2.0, 1e-9);
  EXPECT_NEAR(ds.activations, m.activations, 1e-9);
}

TEST(DeepSpeedProfileTest, Fp16ZeroOneShardsMasterWeightsAndAdam) {
  const Workload w = testing::ProfileWorkload("megatron-deepspeed", "fp16");
  const double p = w.model.TotalParams();
  const double d = 8;
  const Bytes b = PerParam(EstimateConfig(w, Zero(true)), p);
  // stage_1_and_2.py: fp16 weights and .grad (2 + 2), single_partition_of_fp32_groups (4/d) and
  // Adam on it (8/d); at the step, single_grad_partition cast to fp32 (4/d), after the fp16
  // ipg_buffer of reduce_bucket_size elements.
  EXPECT_NEAR(b.weights, 2.0, 1e-9);
  EXPECT_NEAR(b.grads, 2.0, 1e-9);
  const double step = std::max(4.0 / d, 2.0 * std::min(p, kBucket) / p);
  EXPECT_NEAR(b.optimizer, 12.0 / d + std::max(0.0, step - b.activations), 1e-9);
}

TEST(DeepSpeedProfileTest, Fp16ZeroZeroCountsTheStepsFp32Copies) {
  const Workload w = testing::ProfileWorkload("megatron-deepspeed", "fp16");
  const double p = w.model.TotalParams();
  const Estimate e = EstimateConfig(w, Zero(false));
  const Bytes b = PerParam(e, p);
  // fused_optimizer.py: fp16 weights and .grad (2 + 2), fp32_groups_flat (4) + Adam (8), and at
  // the step every grad cast to fp32 and flattened into one more fp32 buffer (4 + 4).
  EXPECT_NEAR(b.weights, 2.0, 1e-9);
  EXPECT_NEAR(b.grads, 2.0, 1e-9);
  // 8 bytes per parameter outweigh this run's activations: the step is the peak moment.
  ASSERT_LT(b.activations, 8.0);
  EXPECT_NEAR(b.optimizer, 12.0 + 8.0 - b.activations, 1e-9);
  EXPECT_NEAR(e.peak_memory_gib * kGiB / p - e.memory.other_gib * kGiB / p, 2 + 2 + 12 + 8, 1e-9);
}

TEST(DeepSpeedProfileTest, Bf16AllReducesFp32GradientsUnoverlapped) {
  Config c = Zero(true);
  c["overlapGradReduce"] = ParamValue::Bool(true);
  c["overlapParamGather"] = ParamValue::Bool(true);
  const Estimate ds = EstimateConfig(testing::ProfileWorkload("megatron-deepspeed", "bf16"), c);
  const Estimate m = EstimateConfig(testing::ProfileWorkload("megatron-lm", "bf16"), c);
  // An fp32 all-reduce (2 x 4 bytes) and a bf16 all-gather, none hidden behind the backward,
  // against Megatron-LM's overlapped fp32 reduce-scatter + bf16 all-gather.
  EXPECT_GT(ds.time.data_parallel, 2.0 * m.time.data_parallel);
  EXPECT_NEAR(ds.time.compute, m.time.compute, 1e-12);
}

TEST(DeepSpeedProfileTest, CampaignNamesTheFrameworkAndItsLimits) {
  const std::string base =
      "spec: {model: {preset: llama3-8b}, training: {framework: megatron-deepspeed, seqLength: "
      "4096, "
      "globalBatchSize: 32, "
      "precision: PREC}, hardware: {accelerator: nvidia-h100-80gb, nodes: 1, devicesPerNode: "
      "8}, searchSpace: {parameters: [{name: mbs, values: [1]}]}}";
  auto with = [&](const std::string& prec) {
    std::string y = base;
    y.replace(y.find("PREC"), 4, prec);
    return CampaignFromYaml(y);
  };
  auto ok = with("bf16");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->training.framework, "megatron-deepspeed");
  // Megatron-DeepSpeed prints Megatron-LM's log lines: the same collector reads them.
  EXPECT_EQ(ok->metrics_collector, "megatron-lm");
  auto fp8 = with("fp8");
  ASSERT_FALSE(fp8.ok());
  EXPECT_NE(fp8.status().message().find("megatron-deepspeed"), std::string::npos);
}

}  // namespace
}  // namespace paratune
