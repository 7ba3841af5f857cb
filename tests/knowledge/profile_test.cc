// Profile parsers: the contract's summary JSON and real profiler exports.
#include "agents/knowledge/profile.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "agents/knowledge/profile_parsers.h"

namespace paratune {
namespace {

std::string Read(const std::string& name) {
  std::ifstream in(std::string(PARATUNE_SOURCE_DIR) + "/tests/knowledge/testdata/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(ProfileTest, ContractSummaryParses) {
  auto p = ParseProfile(Read("contract_profile.json"), "summary");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_DOUBLE_EQ(p->step_time_seconds, 2.5165);
  EXPECT_DOUBLE_EQ(p->hbm_peak_fraction, 0.93);
  ASSERT_EQ(p->top_ops.size(), 3u);
  EXPECT_EQ(p->top_ops[0].name, "all-reduce.12");
  EXPECT_TRUE(p->top_ops[0].IsCollective());
  EXPECT_EQ(GetInt(p->config, "iciSequence", 0), 4);
}

TEST(ProfileTest, SummaryErrorsNameTheField) {
  auto p = ParseProfile(R"({"topOps": [{"name": "x", "category": "gemm"}]})", "summary");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("profile.topOps[0].category"), std::string::npos)
      << p.status().message();
  p = ParseProfile(R"({"deviceDutyCycle": 1.7})", "summary");
  EXPECT_NE(p.status().message().find("profile.deviceDutyCycle"), std::string::npos);
  EXPECT_FALSE(ParseProfile("{}", "perfetto").ok());
}

TEST(ProfileTest, PytorchKeyAveragesTableUsesKernelRowsOnce) {
  auto p = ParseProfile(Read("pytorch_key_averages.txt"), "pytorch-table");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_GE(p->top_ops.size(), 4u);
  EXPECT_EQ(p->top_ops[0].category, "all-reduce");
  EXPECT_NEAR(p->top_ops[0].time_fraction, 3.112 / 8.102, 0.01);  // aten::mm not double counted
  EXPECT_EQ(p->top_ops[1].category, "matmul");
  EXPECT_EQ(p->top_ops[2].category, "attention");
  EXPECT_NEAR(p->communication_fraction, 0.384, 0.01);
}

TEST(ProfileTest, NsightSystemsKernelSummaryCsv) {
  auto p = ParseProfile(Read("nsys_cuda_gpu_kern_sum.csv"), "nsys-csv");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->top_ops.size(), 4u);
  EXPECT_EQ(p->top_ops[0].category, "all-reduce");
  EXPECT_NEAR(p->communication_fraction, 0.412, 0.005);
  EXPECT_NE(p->top_ops[0].name.find("ncclWork *"), std::string::npos);  // quoted commas kept
  EXPECT_FALSE(ParseProfile("a,b\n1,2\n", "nsys-csv").ok());
}

TEST(ProfileTest, XlaOpProfileWithOverview) {
  auto p = ParseProfile(Read("op_profile.json"), "xla-op-profile");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_NEAR(p->device_duty_cycle, 0.987, 1e-9);
  EXPECT_NEAR(p->step_time_seconds, 1.83, 1e-9);
  EXPECT_NEAR(p->communication_fraction, 0.31, 1e-9);
  EXPECT_EQ(p->top_ops[0].name, "fusion.101");
  EXPECT_EQ(p->top_ops[0].category, "matmul");
  EXPECT_EQ(p->top_ops[1].bottleneck, "hbm");  // 86% HBM bandwidth, 5% FLOPs
}

TEST(ProfileTest, ChromeTraceGivesStepTimeAndDutyCycle) {
  std::string trace = R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 1000},
    {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16", "ts": 0, "dur": 500},
    {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL", "ts": 400, "dur": 300},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 20}]})";
  auto p = ParseProfile(trace, "pytorch-trace");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_NEAR(p->step_time_seconds, 1e-3, 1e-12);
  EXPECT_NEAR(p->device_duty_cycle, 0.7, 1e-9);  // union of [0,500) and [400,700)
  EXPECT_NEAR(p->communication_fraction, 0.375, 1e-9);
}

TEST(ProfileTest, DurationsAndCategories) {
  double s = 0;
  EXPECT_TRUE(ParseDurationText("500.000ms", &s));
  EXPECT_DOUBLE_EQ(s, 0.5);
  EXPECT_TRUE(ParseDurationText("12.5us", &s));
  EXPECT_DOUBLE_EQ(s, 12.5e-6);
  EXPECT_FALSE(ParseDurationText("fast", &s));
  EXPECT_EQ(CategorizeOpName("ncclDevKernel_ReduceScatter_Sum_bf16"), "reduce-scatter");
  EXPECT_EQ(CategorizeOpName("all-to-all.3"), "all-to-all");
  EXPECT_EQ(CategorizeOpName("collective-permute-start.1"), "collective-permute");
}

}  // namespace
}  // namespace paratune
