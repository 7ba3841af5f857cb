#include "agents/model/workload.h"

#include <gtest/gtest.h>

namespace paratune {
namespace {

CampaignSpec Spec(const std::string& yaml) {
  auto spec = CampaignFromYaml(yaml);
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return spec.ok() ? *spec : CampaignSpec{};
}

const char* kBase = R"(
spec:
  model: {preset: llama3-8b, numLayers: 16}
  training: {seqLength: 4096, globalBatchSize: 64}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 2, devicesPerNode: 8}
  searchSpace: {parameters: [{name: tp, values: [1, 2]}]}
)";

TEST(WorkloadTest, PresetWithOverrides) {
  auto w = ResolveWorkload(Spec(kBase));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->model.num_layers, 16);
  EXPECT_EQ(w->model.hidden_size, 4096);
  EXPECT_EQ(w->model.num_query_groups, 8);
  EXPECT_EQ(w->devices, 16);
  EXPECT_EQ(w->accel->name, "nvidia-h100-80gb");
}

TEST(WorkloadTest, UnknownPresetAndAcceleratorNameTheField) {
  CampaignSpec s = Spec(kBase);
  s.model.preset = "llama9-1t";
  auto w = ResolveWorkload(s);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(w.status().message().find("spec.model.preset"), std::string::npos);
  s = Spec(kBase);
  s.hardware.accelerator = "nvidia-k80";
  w = ResolveWorkload(s);
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("spec.hardware.accelerator"), std::string::npos);
}

TEST(WorkloadTest, TpuTopologyMustBeASliceOfThatChip) {
  auto ok = ResolveWorkload(Spec(R"(
spec:
  model: {preset: llama2-7b}
  training: {seqLength: 2048, globalBatchSize: 64}
  hardware: {accelerator: tpu-v5-lite-podslice, tpuTopology: 4x4, devicesPerNode: 4}
  searchSpace: {parameters: [{name: iciFsdp, values: [16]}]}
)"));
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->devices, 16);
  EXPECT_EQ(ok->training.framework, "maxtext");
  auto bad = ResolveWorkload(Spec(R"(
spec:
  model: {preset: llama2-7b}
  training: {seqLength: 2048, globalBatchSize: 64}
  hardware: {accelerator: tpu-v5e, tpuTopology: 4x4x4}
  searchSpace: {parameters: [{name: iciFsdp, values: [16]}]}
)"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.hardware.tpuTopology"), std::string::npos);
}

TEST(WorkloadTest, FromWorkloadJsonRoundTrip) {
  CampaignSpec s = Spec(kBase);
  auto w = WorkloadFromJson(WorkloadJson(s));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->model.num_layers, 16);
  EXPECT_EQ(w->devices, 16);
  auto bad = WorkloadFromJson(nlohmann::json{{"model", {{"preset", "llama3-8b"}}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("training"), std::string::npos);
}

}  // namespace
}  // namespace paratune
