// The framework rules by version (agents/core/framework_rules.h) as the model applies them: a
// campaign's frameworkVersion (or its image) decides which candidates FindViolations refuses, and
// the reason names the rule.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "agents/core/campaign.h"
#include "agents/model/parallel_plan.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

Workload MoeWorkload(const std::string& training_extra, const std::string& image) {
  auto spec = CampaignFromYaml(R"(
spec:
  model: {preset: mixtral-8x7b}
  training: {framework: megatron-lm, seqLength: 4096, globalBatchSize: 256)" +
                               training_extra + R"(}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 2, devicesPerNode: 8}
  searchSpace:
    parameters: [{name: tp, values: [1, 2]}]
  trialTemplate:
    spec: {template: {spec: {containers: [{name: t, image: ")" +
                               image + R"("}]}}}
)");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  auto w = ResolveWorkload(*spec);
  EXPECT_TRUE(w.ok()) << w.status().ToString();
  return *w;
}

std::string Reasons(const Workload& w, const Config& c) {
  std::string all;
  for (const auto& v : FindViolations(w, PlanFromConfig(w, c))) all += v.sentence + "\n";
  return all;
}

const Config kEpTpNoSp = {{"tp", ParamValue::Int(2)},
                          {"ep", ParamValue::Int(2)},
                          {"sequenceParallel", ParamValue::Bool(false)}};

// `attention: flash` is the framework's own kernel: in a NeMo 24.07 image (Transformer Engine
// 1.8.0.dev0) that is FlashAttention-2, slower on Hopper than 24.09's cuDNN attention; the
// estimate equals the one of an explicit `attention: flash2`, and an explicit cudnn stays.
TEST(FrameworkVersionRulesTest, TheImagesTransformerEngineDecidesTheFlashKernel) {
  const Workload old_image = MoeWorkload("", "nvcr.io/nvidia/nemo:24.07");
  EXPECT_EQ(old_image.training.attention, "flash2");
  EXPECT_THAT(old_image.training.attention_source, HasSubstr("nemo:24.07"));
  const Workload newer = MoeWorkload("", "nvcr.io/nvidia/nemo:24.09");
  EXPECT_EQ(newer.training.attention, "flash");
  const Workload explicit_fa2 = MoeWorkload(", attention: flash2", "nvcr.io/nvidia/nemo:24.09");
  const Workload explicit_cudnn = MoeWorkload(", attention: cudnn", "nvcr.io/nvidia/nemo:24.07");
  EXPECT_EQ(explicit_cudnn.training.attention, "cudnn");
  const Config c = {{"tp", ParamValue::Int(2)}};
  const double fa2 = EstimateConfig(old_image, c).step_time_seconds;
  EXPECT_DOUBLE_EQ(fa2, EstimateConfig(explicit_fa2, c).step_time_seconds);
  EXPECT_GT(fa2, EstimateConfig(newer, c).step_time_seconds);
  EXPECT_DOUBLE_EQ(EstimateConfig(explicit_cudnn, c).step_time_seconds,
                   EstimateConfig(newer, c).step_time_seconds);
}

// torchtitan from v0.2.0 ranks cuDNN attention first: its `flash` is cudnn, faster on Hopper
// than the FlashAttention-2 an unknown version keeps.
TEST(FrameworkVersionRulesTest, TorchtitanFromV020RunsCudnnAttention) {
  auto workload = [](const std::string& version) {
    auto spec = CampaignFromYaml(R"(
spec:
  model: {preset: llama3-8b}
  training: {framework: torchtitan, seqLength: 8192, globalBatchSize: 16)" +
                                 version + R"(}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 1, devicesPerNode: 8}
  searchSpace: {parameters: [{name: mbs, values: [2]}]}
)");
    EXPECT_TRUE(spec.ok()) << spec.status().ToString();
    auto w = ResolveWorkload(*spec);
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return *w;
  };
  const Workload current = workload(", frameworkVersion: \"0.2.2\"");
  EXPECT_EQ(current.training.attention, "cudnn");
  EXPECT_THAT(current.training.attention_source, HasSubstr("torchtitan 0.2.2"));
  const Workload unknown = workload("");
  EXPECT_EQ(unknown.training.attention, "flash");
  const Config c = {{"mbs", ParamValue::Int(2)}};
  EXPECT_LT(EstimateConfig(current, c).step_time_seconds,
            EstimateConfig(unknown, c).step_time_seconds);
}

TEST(FrameworkVersionRulesTest, TheImagesMegatronCoreRefusesExpertAndTensorWithoutSequence) {
  const Workload old_image = MoeWorkload("", "nvcr.io/nvidia/nemo:24.07");  // core 0.8
  EXPECT_EQ(old_image.training.framework_version, "0.8.0");
  EXPECT_THAT(Reasons(old_image, kEpTpNoSp),
              HasSubstr("[rule megatron-moe-tp-needs-sequence-parallel]"));
  const Workload current = MoeWorkload("", "nvcr.io/nvidia/nemo:26.06");  // core 0.18
  EXPECT_THAT(Reasons(current, kEpTpNoSp), ::testing::Not(HasSubstr("megatron-moe")));
  // An explicit frameworkVersion wins over the image.
  const Workload pinned =
      MoeWorkload(", frameworkVersion: \"0.14.0\"", "nvcr.io/nvidia/nemo:26.06");
  EXPECT_THAT(Reasons(pinned, kEpTpNoSp), HasSubstr("megatron-moe-tp-needs-sequence-parallel"));
}

TEST(FrameworkVersionRulesTest, OverlapParamGatherWithoutOverlapGradReduceIsRefused) {
  const Workload w = MoeWorkload("", "nvcr.io/nvidia/nemo:26.06");
  Config c = {{"distributedOptimizer", ParamValue::Bool(true)},
              {"overlapParamGather", ParamValue::Bool(true)}};
  EXPECT_THAT(Reasons(w, c), HasSubstr("overlapParamGather needs overlapGradReduce"));
  c["overlapGradReduce"] = ParamValue::Bool(true);
  EXPECT_THAT(Reasons(w, c), ::testing::Not(HasSubstr("overlapParamGather")));
}

TEST(FrameworkVersionRulesTest, UnevenStagesOnCore08NameTheField) {
  const Workload w = MoeWorkload("", "nvcr.io/nvidia/nemo:24.07");
  const Config c = {{"pp", ParamValue::Int(4)},
                    {"firstPipelineStageLayers", ParamValue::Int(5)},
                    {"lastPipelineStageLayers", ParamValue::Int(9)}};
  EXPECT_THAT(Reasons(w, c), HasSubstr("firstPipelineStageLayers needs Megatron-core 0.9"));
}

}  // namespace
}  // namespace paratune
