#include "agents/core/campaign.h"

#include <gtest/gtest.h>

#include "base/yaml.h"

namespace paratune {
namespace {

const char* kMinimal = R"(
apiVersion: tuning.paratune.dev/v1alpha1
kind: TuningCampaign
metadata: {name: c1, namespace: ns}
spec:
  model: {preset: llama3-8b}
  training: {globalBatchSize: 256, seqLength: 4096}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 2}
  searchSpace:
    parameters:
    - {name: tp, values: [1, 2, 4]}
    - {name: recompute, values: [none, full]}
  baseline: {tp: 2, recompute: full}
)";

TEST(CampaignTest, ParsesSampleFileWithDefaults) {
  auto c = LoadCampaignFile(std::string(PARATUNE_SOURCE_DIR) +
                            "/manifests/samples/llama3-8b-h100x8.yaml");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->name, "llama3-8b-h100x8");
  EXPECT_EQ(c->model.preset, "llama3-8b");
  EXPECT_EQ(c->training.seq_length, 8192);
  EXPECT_EQ(c->hardware.TotalDevices(), 8);
  EXPECT_EQ(c->budget.trial_timeout_seconds, 1800);
  EXPECT_EQ(c->SearchSpaceSize(), 4 * 4 * 3 * 3 * 2 * 2);
  ASSERT_TRUE(c->baseline.has_value());
  EXPECT_EQ(GetEnum(*c->baseline, "recompute", ""), "full");
  EXPECT_TRUE(c->trial_template.contains("spec"));
}

TEST(CampaignTest, MinimalCampaignFillsDefaults) {
  auto c = CampaignFromYaml(kMinimal);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->namespace_, "ns");
  EXPECT_EQ(c->training.framework, "megatron-lm");
  EXPECT_EQ(c->metrics_collector, "megatron-lm");
  EXPECT_EQ(c->hardware.TotalDevices(), 16);
  EXPECT_EQ(c->budget.max_trials, 20);
  EXPECT_TRUE(c->objective.Maximize());
}

TEST(CampaignTest, TpuDefaultsToMaxTextAndTopologyChips) {
  auto c = CampaignFromYaml(R"(
spec:
  model: {preset: llama2-7b}
  training: {globalBatchSize: 64}
  hardware: {accelerator: tpu-v5e, tpuTopology: 4x4}
  searchSpace: {parameters: [{name: iciFsdp, values: [4, 16]}]}
)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->training.framework, "maxtext");
  EXPECT_EQ(c->hardware.TotalDevices(), 16);
  EXPECT_EQ(c->hardware.nodes, 4);
}

struct BadCase {
  const char* yaml_spec;
  const char* field;
};

class CampaignBadInputTest : public testing::TestWithParam<BadCase> {};

TEST_P(CampaignBadInputTest, ErrorNamesTheField) {
  auto c = CampaignFromYaml(GetParam().yaml_spec);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find(GetParam().field), std::string::npos) << c.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Fields, CampaignBadInputTest,
    testing::Values(
        BadCase{"spec: {model: {preset: x}, training: {globalBatchSize: 8}, hardware: "
                "{accelerator: a}, searchSpace: {parameters: []}}",
                "spec.searchSpace.parameters"},
        BadCase{"spec: {model: {preset: x}, training: {globalBatchSize: 8}, hardware: "
                "{accelerator: a}, searchSpace: {parameters: [{name: tp, values: [1]}]}, "
                "baseline: {tp: 2}}",
                "spec.baseline.tp"},
        BadCase{"spec: {model: {preset: x}, training: {globalBatchSize: 8}, hardware: "
                "{accelerator: a}, searchSpace: {parameters: [{name: tp, values: [1]}]}, "
                "objective: {metric: speed}}",
                "spec.objective.metric"},
        BadCase{"spec: {model: {preset: x}, training: {globalBatchSize: 8}, hardware: "
                "{accelerator: a}, searchSpace: {parameters: [{name: tpp, values: [1]}]}}",
                "spec.searchSpace.parameters[0].name"},
        BadCase{"spec: {model: {preset: x}, training: {globalBatchSize: 8}, hardware: "
                "{accelerator: a}, searchSpace: {parameters: [{name: tp, values: [1]}]}, "
                "budget: {maxTrials: -3}}",
                "spec.budget.maxTrials"},
        BadCase{"spec: {model: {preset: x}, training: {globalBatchSize: 8}, hardware: "
                "{accelerator: a}, searchSpace: {parameters: [{name: recompute, values: "
                "[sometimes]}]}}",
                "spec.searchSpace.parameters[0].values[0]"},
        BadCase{"spec: {model: {preset: x}, training: {}, hardware: {accelerator: a}, "
                "searchSpace: {parameters: [{name: tp, values: [1]}]}}",
                "spec.training.globalBatchSize"},
        BadCase{"spec: {model: {preset: x}, training: {globalBatchSize: 8}, hardware: "
                "{accelerator: a}, searchSpace: {parameters: [{name: tp, values: [1]}]}, "
                "budget: {trialTimeout: soon}}",
                "spec.budget.trialTimeout"},
        BadCase{"spec: {model: {preset: x}, training: {globalBatchSize: 8}, hardware: "
                "{accelerator: a}, searchSpace: {parameters: [{name: tp, values: [1]}]}, "
                "budgett: {}}",
                "spec.budgett"},
        BadCase{"spec: {model: {}, training: {globalBatchSize: 8}, hardware: "
                "{accelerator: a}, searchSpace: {parameters: [{name: tp, values: [1]}]}}",
                "spec.model"},
        BadCase{"spec: [unclosed", "yaml"}));

TEST(DurationTest, ParsesKubernetesStyleDurations) {
  EXPECT_EQ(*ParseDurationSeconds("30m", "f"), 1800);
  EXPECT_EQ(*ParseDurationSeconds("1h30m", "f"), 5400);
  EXPECT_EQ(*ParseDurationSeconds("90", "f"), 90);
  EXPECT_FALSE(ParseDurationSeconds("m", "f").ok());
  EXPECT_FALSE(ParseDurationSeconds("", "f").ok());
}

TEST(YamlToJsonTest, QuotedScalarsStayStrings) {
  auto j = YamlToJson("a: 1\nb: \"1\"\nc: true\nd: 1.5\ne: x");
  ASSERT_TRUE(j.ok());
  EXPECT_TRUE((*j)["a"].is_number_integer());
  EXPECT_TRUE((*j)["b"].is_string());
  EXPECT_TRUE((*j)["c"].is_boolean());
  EXPECT_TRUE((*j)["d"].is_number_float());
  EXPECT_EQ((*j)["e"], "x");
}

}  // namespace
}  // namespace paratune

namespace paratune {
namespace {

TEST(CampaignTest, ModelMayBeOmittedWhenNotRequired) {
  const char* yaml = R"(
spec:
  training: {globalBatchSize: 64}
  hardware: {accelerator: tpu-v5e, tpuTopology: 4x4}
  searchSpace: {parameters: [{name: iciFsdp, values: [16]}]}
)";
  EXPECT_FALSE(CampaignFromYaml(yaml).ok());
  CampaignParseOptions options;
  options.require_model = false;
  auto c = CampaignFromYaml(yaml, options);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->model.Described());
}

}  // namespace
}  // namespace paratune
