// The framework rules by version (agents/core/framework_rules.h): one test per rule, the image
// table, version parsing, canonicalization and the vpp flag mapping.
#include "agents/core/framework_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agents/core/campaign.h"

namespace paratune {
namespace {

using ::testing::HasSubstr;

FrameworkVersion V(const char* text) {
  auto v = ParseFrameworkVersion(text, "spec.training.frameworkVersion");
  EXPECT_TRUE(v.ok()) << v.status().ToString();
  return v.ok() ? *v : FrameworkVersion{};
}

RuleInputs Megatron() {
  RuleInputs in;
  in.framework = "megatron-lm";
  in.devices = 16;
  in.num_layers = 32;
  in.global_batch_size = 512;
  return in;
}

std::vector<std::string> Rules(const FrameworkVersion& v, const RuleInputs& in) {
  std::vector<std::string> out;
  for (const auto& r : CheckFrameworkRules(v, in)) {
    EXPECT_FALSE(r.source.empty()) << r.rule << " cites no source";
    EXPECT_FALSE(r.keys.empty()) << r.rule << " names no key";
    out.push_back(r.rule);
  }
  return out;
}

TEST(FrameworkVersionTest, ParsesReleaseTagsAndDates) {
  EXPECT_EQ(V("0.8").parts, (std::vector<int>{0, 8}));
  EXPECT_EQ(V("core_v0.14.0").parts, (std::vector<int>{0, 14, 0}));
  EXPECT_EQ(V("core_r0.8.0").parts, (std::vector<int>{0, 8, 0}));
  EXPECT_EQ(V("v0.2.2").parts, (std::vector<int>{0, 2, 2}));
  EXPECT_EQ(V("2026-04-22").parts, (std::vector<int>{2026, 4, 22}));
  EXPECT_TRUE(V("0.8").Before({0, 9}));
  EXPECT_FALSE(V("0.15.0").Before({0, 15}));
  EXPECT_FALSE(FrameworkVersion{}.Before({0, 15}));  // unknown: no old-version-only rule
  for (const char* bad : {"", "latest", "0", "1.2.3.4", "0..8", "v", "0.8rc1"}) {
    auto v = ParseFrameworkVersion(bad, "spec.training.frameworkVersion");
    ASSERT_FALSE(v.ok()) << bad;
    EXPECT_THAT(v.status().message(), HasSubstr("spec.training.frameworkVersion"));
  }
}

TEST(FrameworkVersionTest, KnownNemoImagesCarryTheirMegatronCore) {
  EXPECT_EQ(VersionFromImage("megatron-lm", "nvcr.io/nvidia/nemo:24.07").text, "0.8.0");
  EXPECT_EQ(VersionFromImage("megatron-lm", "nvcr.io/nvidia/nemo:25.09").text, "0.14.0");
  EXPECT_EQ(VersionFromImage("megatron-lm", "nvcr.io/nvidia/nemo:26.06.01").text, "0.18.0");
  EXPECT_THAT(VersionFromImage("megatron-lm", "nvcr.io/nvidia/nemo:24.07").source,
              HasSubstr("nemo:24.07"));
  // Not in the table: custom builds, other frameworks, the PyTorch container (no Megatron-core).
  EXPECT_FALSE(
      VersionFromImage("megatron-lm", "nvcr.io/nvidia/nemo:25.11.nemotron_3_nano").known());
  EXPECT_FALSE(VersionFromImage("maxtext", "nvcr.io/nvidia/nemo:24.07").known());
  EXPECT_EQ(
      VersionFromImage("maxtext",
                       "us-docker.pkg.dev/cloud-tpu-images/maxtext-images/tpu_pre_training:0.2.3")
          .text,
      "0.2.3");
  EXPECT_FALSE(VersionFromImage("megatron-lm", "nvcr.io/nvidia/pytorch:25.09-py3").known());
}

// NeMo 24.05 and 24.07 ship Transformer Engine 1.6.0.dev0 and 1.8.0.dev0 (before v1.8:
// FlashAttention-2 first), 24.09 ships 1.10 (cuDNN's fused attention first on Hopper); torchtitan
// ranks cuDNN first from v0.2.0.
TEST(FrameworkVersionTest, TheFlashKernelOfAVersionOrImage) {
  auto kernel = [](const char* framework, const char* version, const char* image) {
    return ResolveFlashKernel(framework, version, image).kernel;
  };
  EXPECT_EQ(kernel("megatron-lm", "", "nvcr.io/nvidia/nemo:24.07"), "flash2");
  EXPECT_THAT(ResolveFlashKernel("megatron-lm", "", "nvcr.io/nvidia/nemo:24.07").reason,
              HasSubstr("Transformer Engine 1.8.0.dev0"));
  EXPECT_EQ(kernel("megatron-lm", "", "nvcr.io/nvidia/nemo:24.05.01"), "flash2");
  EXPECT_EQ(kernel("megatron-lm", "", "nvcr.io/nvidia/nemo:24.09"), "");
  EXPECT_EQ(kernel("megatron-lm", "", "nvcr.io/nvidia/nemo:26.06"), "");
  EXPECT_EQ(kernel("megatron-lm", "", "nvcr.io/nvidia/pytorch:24.07-py3"), "");
  EXPECT_EQ(kernel("torchtitan", "0.2.2", "nvcr.io/nvidia/pytorch:26.01-py3"), "cudnn");
  EXPECT_EQ(kernel("torchtitan", "0.2.0", ""), "cudnn");
  EXPECT_EQ(kernel("torchtitan", "0.1.0", ""), "");  // cuDNN first on B200 only
  EXPECT_EQ(kernel("torchtitan", "", ""), "");       // unknown: SDPA's default, FlashAttention-2
  EXPECT_EQ(kernel("maxtext", "0.2.3", ""), "");
}

TEST(FrameworkVersionTest, ExplicitVersionWinsOverTheImage) {
  nlohmann::json tmpl = {
      {"spec",
       {{"template", {{"spec", {{"containers", {{{"image", "nvcr.io/nvidia/nemo:24.07"}}}}}}}}}}};
  auto from_image = ResolveFrameworkVersion("megatron-lm", "", tmpl);
  ASSERT_TRUE(from_image.ok());
  EXPECT_EQ(from_image->text, "0.8.0");
  auto explicit_version = ResolveFrameworkVersion("megatron-lm", "0.14.0", tmpl);
  ASSERT_TRUE(explicit_version.ok());
  EXPECT_EQ(explicit_version->text, "0.14.0");
  EXPECT_EQ(explicit_version->source, "spec.training.frameworkVersion");
}

TEST(MegatronRulesTest, OverlapParamGatherNeedsOverlapGradReduceAndDistributedOptimizer) {
  RuleInputs in = Megatron();
  in.overlap_param_gather = true;
  in.distributed_optimizer = true;
  EXPECT_THAT(Rules(V("0.14.0"), in), ::testing::ElementsAre("megatron-overlap-param-gather"));
  const auto v = CheckFrameworkRules(V("0.8"), in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_THAT(v[0].keys, ::testing::Contains("overlapGradReduce"));
  EXPECT_THAT(v[0].framework_error, HasSubstr("--overlap-grad-reduce"));
  in.overlap_grad_reduce = true;
  EXPECT_TRUE(Rules(V("0.8"), in).empty());
  in.distributed_optimizer = false;
  EXPECT_THAT(CheckFrameworkRules(V("0.18.0"), in)[0].keys,
              ::testing::Contains("distributedOptimizer"));
}

TEST(MegatronRulesTest, SequenceParallelAtTp1IsTheSameRun) {
  Config with = {{"tp", ParamValue::Int(1)}, {"sequenceParallel", ParamValue::Bool(true)}};
  Config without = {{"tp", ParamValue::Int(1)}, {"sequenceParallel", ParamValue::Bool(false)}};
  EXPECT_EQ(CanonicalConfigKey("megatron-lm", with), CanonicalConfigKey("megatron-lm", without));
  Config no_tp = {{"sequenceParallel", ParamValue::Bool(true)}};  // tp absent: 1
  EXPECT_EQ(CanonicalConfigKey("megatron-lm", no_tp), CanonicalConfigKey("megatron-lm", {}));
  with["tp"] = without["tp"] = ParamValue::Int(2);
  EXPECT_NE(CanonicalConfigKey("megatron-lm", with), CanonicalConfigKey("megatron-lm", without));
  // torchtitan has no such switch in the vocabulary mapping: nothing folds.
  with["tp"] = without["tp"] = ParamValue::Int(1);
  EXPECT_NE(CanonicalConfigKey("torchtitan", with), CanonicalConfigKey("torchtitan", without));
}

TEST(MegatronRulesTest, ExpertWithTensorParallelNeedsSequenceParallelBeforeCore015) {
  RuleInputs in = Megatron();
  in.ep = 2;
  in.tp = 2;
  in.sequence_parallel = false;
  EXPECT_THAT(Rules(V("0.8"), in),
              ::testing::ElementsAre("megatron-moe-tp-needs-sequence-parallel"));
  EXPECT_THAT(Rules(V("0.14.0"), in),
              ::testing::ElementsAre("megatron-moe-tp-needs-sequence-parallel"));
  EXPECT_TRUE(Rules(V("0.15.0"), in).empty());  // a warning from 0.15
  in.sequence_parallel = true;
  EXPECT_TRUE(Rules(V("0.8"), in).empty());
  in.sequence_parallel = false;
  in.tp = 1;
  EXPECT_TRUE(Rules(V("0.8"), in).empty());
}

TEST(MegatronRulesTest, InterleavedScheduleMicroBatchCountByVersion) {
  RuleInputs in = Megatron();
  in.pp = 4;
  in.vpp = 2;
  in.num_microbatches = 6;  // not a multiple of pp 4
  auto old_rules = CheckFrameworkRules(V("0.8"), in);
  ASSERT_EQ(old_rules.size(), 1u);
  EXPECT_EQ(old_rules[0].rule, "megatron-interleaved-microbatches");
  EXPECT_THAT(old_rules[0].framework_error, HasSubstr("is not divisible by"));
  auto new_rules = CheckFrameworkRules(V("0.14.0"), in);
  ASSERT_EQ(new_rules.size(), 1u);
  EXPECT_THAT(new_rules[0].framework_error, HasSubstr("The remainder of M"));
  in.num_microbatches = 2;  // fewer than pp: from 0.10 the group size pp exceeds M
  EXPECT_THAT(CheckFrameworkRules(V("0.10.0"), in)[0].framework_error, HasSubstr("should range"));
  in.num_microbatches = 8;
  EXPECT_TRUE(Rules(V("0.8"), in).empty());
  EXPECT_TRUE(Rules(V("0.18.0"), in).empty());
  in.vpp = 1;
  in.num_microbatches = 6;  // no interleaving: no rule
  EXPECT_TRUE(Rules(V("0.8"), in).empty());
}

TEST(MegatronRulesTest, VirtualPipelineFlagConvertsChunksPerStageForOldVersions) {
  // 32 layers, pp 4: 8 layers per stage; vpp 2 chunks per stage = 4 layers per chunk.
  auto old_flag = MegatronVirtualPipelineFlag(V("0.8"), 2, 8);
  EXPECT_EQ(old_flag.flag, "--num-layers-per-virtual-pipeline-stage");
  EXPECT_EQ(old_flag.value, 4);
  auto new_flag = MegatronVirtualPipelineFlag(V("0.11.0"), 2, 8);
  EXPECT_EQ(new_flag.flag, "--num-virtual-stages-per-pipeline-rank");
  EXPECT_EQ(new_flag.value, 2);
  EXPECT_TRUE(MegatronVirtualPipelineFlag(V("0.8"), 1, 8).flag.empty());
}

TEST(MegatronRulesTest, UnevenPipelineStagesNeedCore09) {
  RuleInputs in = Megatron();
  in.pp = 4;
  in.first_stage_layers_set = true;
  auto v = CheckFrameworkRules(V("0.8"), in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, "megatron-uneven-pipeline-flags");
  EXPECT_THAT(v[0].keys, ::testing::ElementsAre("firstPipelineStageLayers"));
  EXPECT_THAT(v[0].sentence, HasSubstr("firstPipelineStageLayers"));
  in.first_stage_layers_set = false;
  in.last_stage_layers_set = true;
  EXPECT_THAT(CheckFrameworkRules(V("0.8"), in)[0].keys,
              ::testing::ElementsAre("lastPipelineStageLayers"));
  EXPECT_TRUE(Rules(V("0.9.0"), in).empty());
}

TEST(TorchtitanRulesTest, DataParallelSplitIsTorchtitansOnly) {
  EXPECT_TRUE(CheckParameterApplies("torchtitan", "dpShard", "f").ok());
  auto s =
      CheckParameterApplies("megatron-lm", "dpReplicate", "spec.searchSpace.parameters[2].name");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("spec.searchSpace.parameters[2].name: dpReplicate"));
  EXPECT_TRUE(CheckParameterApplies("megatron-lm", "tp", "f").ok());
}

TEST(TorchtitanRulesTest, MeshProductEqualsWorldSize) {
  RuleInputs in;
  in.framework = "torchtitan";
  in.devices = 16;
  in.global_batch_size = 64;
  in.tp = 2;
  in.dp_shard = -1;  // fills 8
  EXPECT_TRUE(Rules({}, in).empty());
  in.dp_shard = 4;  // 4 x 2 = 8 != 16
  EXPECT_THAT(Rules({}, in), ::testing::ElementsAre("torchtitan-mesh"));
  in.dp_replicate = 2;  // 2 x 4 x 2 = 16
  EXPECT_TRUE(Rules({}, in).empty());
  in.tp = 3;
  in.dp_shard = -1;  // 16 / 6: no whole shard degree
  EXPECT_THAT(Rules({}, in), ::testing::ElementsAre("torchtitan-mesh"));
}

TEST(TorchtitanRulesTest, ExpertDegreeDividesShardTimesCpTimesTp) {
  RuleInputs in;
  in.framework = "torchtitan";
  in.devices = 8;
  in.global_batch_size = 64;
  in.pp = 2;
  in.dp_shard = 4;
  in.ep = 8;  // dp_shard x cp x tp = 4
  auto v = CheckFrameworkRules({}, in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, "torchtitan-expert-mesh");
  EXPECT_THAT(v[0].framework_error, HasSubstr("must divide dp_shard * cp * tp (4)"));
  in.ep = 4;
  EXPECT_TRUE(Rules({}, in).empty());
}

TEST(TorchtitanRulesTest, GlobalBatchIsAMultipleOfLocalBatchTimesDataParallel) {
  RuleInputs in;
  in.framework = "torchtitan";
  in.devices = 8;
  in.global_batch_size = 24;
  in.mbs = 2;  // 2 x 8 = 16 does not divide 24
  EXPECT_THAT(Rules({}, in), ::testing::ElementsAre("torchtitan-batch"));
  in.mbs = 3;
  EXPECT_TRUE(Rules({}, in).empty());
}

TEST(TorchtitanRulesTest, LocalBatchIsAMultipleOfThePipelineMicrobatch) {
  RuleInputs in;
  in.framework = "torchtitan";
  in.devices = 8;
  in.global_batch_size = 64;
  in.pp = 2;
  in.mbs = 8;
  in.pp_microbatch = 3;
  auto v = CheckFrameworkRules({}, in);
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0].rule, "torchtitan-pipeline-microbatch");
  EXPECT_EQ(v[0].framework_error, "AssertionError: (8, 3)");
  EXPECT_THAT(v[0].source, HasSubstr("build_pipeline_schedule"));
  in.pp_microbatch = 2;
  EXPECT_TRUE(Rules({}, in).empty());
  in.pp = 1;  // no pipeline schedule: the flag is not read
  in.pp_microbatch = 3;
  EXPECT_TRUE(Rules({}, in).empty());
  // Without a pipeline two candidates that differ only in it are one run.
  const Config a{{"pp", ParamValue::Int(1)}, {"ppMicrobatchSize", ParamValue::Int(2)}};
  const Config b{{"pp", ParamValue::Int(1)}};
  EXPECT_EQ(CanonicalConfigKey("torchtitan", a), CanonicalConfigKey("torchtitan", b));
  const Config c{{"pp", ParamValue::Int(2)}, {"ppMicrobatchSize", ParamValue::Int(2)}};
  const Config d{{"pp", ParamValue::Int(2)}};
  EXPECT_NE(CanonicalConfigKey("torchtitan", c), CanonicalConfigKey("torchtitan", d));
  const Config e{{"pp", ParamValue::Int(2)}, {"ppMicrobatchSize", ParamValue::Int(1)}};
  EXPECT_EQ(CanonicalConfigKey("torchtitan", d), CanonicalConfigKey("torchtitan", e));
  auto s = CheckParameterApplies("megatron-lm", "ppMicrobatchSize", "f");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.message(), HasSubstr("f: ppMicrobatchSize is torchtitan's"));
}

TEST(MaxTextRulesTest, SequenceAxisGoneSince20260422) {
  RuleInputs in;
  in.framework = "maxtext";
  in.devices = 16;
  in.global_batch_size = 64;
  in.ici_sequence = 2;
  EXPECT_TRUE(Rules(V("2026-01-15"), in).empty());
  EXPECT_TRUE(Rules(V("maxtext-v0.2.1"), in).empty());
  EXPECT_THAT(Rules(V("0.2.2"), in), ::testing::ElementsAre("maxtext-sequence-axis"));
  EXPECT_THAT(Rules(V("2026-04-22"), in), ::testing::ElementsAre("maxtext-sequence-axis"));
  EXPECT_TRUE(Rules({}, in).empty());  // unknown: older releases have the axis
}

TEST(FrameworkVersionCampaignTest, ReadFromTheSpecOrTheImageErrorsNameTheField) {
  const std::string head = R"(
spec:
  model: {preset: llama3-8b}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 1, devicesPerNode: 8}
  searchSpace: {parameters: [{name: tp, values: [1, 2]}]}
  trialTemplate: {spec: {template: {spec: {containers: [{name: t, image: "nvcr.io/nvidia/nemo:24.07"}]}}}}
)";
  auto from_image =
      CampaignFromYaml(head + "  training: {framework: megatron-lm, globalBatchSize: 64}\n");
  ASSERT_TRUE(from_image.ok()) << from_image.status().ToString();
  EXPECT_EQ(from_image->training.framework_version, "0.8.0");
  EXPECT_THAT(from_image->training.framework_version_source, HasSubstr("nemo:24.07"));
  EXPECT_EQ(WorkloadJson(*from_image)["training"]["frameworkVersion"], "0.8.0");
  auto pinned = CampaignFromYaml(head +
                                 "  training: {framework: megatron-lm, globalBatchSize: 64, "
                                 "frameworkVersion: core_v0.14.0}\n");
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(pinned->training.framework_version, "core_v0.14.0");
  auto bad = CampaignFromYaml(
      head +
      "  training: {framework: megatron-lm, globalBatchSize: 64, frameworkVersion: latest}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("spec.training.frameworkVersion"));
  auto foreign = CampaignFromYaml(R"(
spec:
  model: {preset: llama3-8b}
  training: {framework: megatron-lm, globalBatchSize: 64}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 1, devicesPerNode: 8}
  searchSpace: {parameters: [{name: tp, values: [1, 2]}, {name: dpShard, values: [4, 8]}]}
)");
  ASSERT_FALSE(foreign.ok());
  EXPECT_THAT(foreign.status().message(),
              HasSubstr("spec.searchSpace.parameters[1].name: dpShard"));
}

}  // namespace
}  // namespace paratune
