// Contract "Workload fields": model.activation, model.tiedEmbeddings, model.headDim,
// training.attention, training.dropout and training.framework: transformers.
#include <gtest/gtest.h>

#include <string>

#include "agents/core/campaign.h"

namespace paratune {
namespace {

std::string Spec(const std::string& model_extra, const std::string& training_extra) {
  return "spec: {model: {preset: llama3-8b" + model_extra + "}, training: {globalBatchSize: 8" +
         training_extra +
         "}, hardware: {accelerator: nvidia-h100-80gb}, searchSpace: {parameters: [{name: mbs, "
         "values: [1]}]}}";
}

TEST(WorkloadFieldsTest, ParsesEveryFieldAndCarriesItToTrials) {
  auto c = CampaignFromYaml(Spec(", activation: gelu, tiedEmbeddings: true, headDim: 96",
                                 ", framework: transformers, attention: unfused, dropout: 0.1"));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->model.activation, "gelu");
  ASSERT_TRUE(c->model.tied_embeddings.has_value());
  EXPECT_TRUE(*c->model.tied_embeddings);
  EXPECT_EQ(c->model.head_dim, 96);
  EXPECT_EQ(c->training.framework, "transformers");
  EXPECT_EQ(c->training.attention, "unfused");
  ASSERT_TRUE(c->training.dropout.has_value());
  EXPECT_DOUBLE_EQ(*c->training.dropout, 0.1);
  // A transformers job's own output (Trainer progress bar, log dicts) is read by hf-trainer,
  // which reads JSON lines too (issue 35).
  EXPECT_EQ(c->metrics_collector, "hf-trainer");
  // PARATUNE_WORKLOAD round trip: the trial sees the same workload.
  const nlohmann::json w = WorkloadJson(*c);
  EXPECT_EQ(w["model"]["activation"], "gelu");
  EXPECT_EQ(w["model"]["tiedEmbeddings"], true);
  EXPECT_EQ(w["model"]["headDim"], 96);
  EXPECT_EQ(w["training"]["attention"], "unfused");
  EXPECT_DOUBLE_EQ(w["training"]["dropout"].get<double>(), 0.1);
}

TEST(WorkloadFieldsTest, UnsetFieldsKeepThePresets) {
  auto c = CampaignFromYaml(Spec("", ""));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->model.activation.empty());
  EXPECT_FALSE(c->model.tied_embeddings.has_value());
  EXPECT_FALSE(c->model.head_dim.has_value());
  EXPECT_EQ(c->training.attention, "flash");
  EXPECT_FALSE(c->training.dropout.has_value());
  const nlohmann::json w = WorkloadJson(*c);
  EXPECT_FALSE(w["model"].contains("activation"));
  EXPECT_FALSE(w["training"].contains("dropout"));
}

TEST(WorkloadFieldsTest, BadValuesNameTheField) {
  const std::pair<std::string, std::string> cases[] = {
      {Spec(", activation: relu", ""), "spec.model.activation"},
      {Spec(", tiedEmbeddings: maybe", ""), "spec.model.tiedEmbeddings"},
      {Spec(", headDim: 0", ""), "spec.model.headDim"},
      {Spec("", ", attention: sparse"), "spec.training.attention"},
      {Spec("", ", dropout: 1.5"), "spec.training.dropout"},
      {Spec("", ", dropout: high"), "spec.training.dropout"},
      {Spec("", ", framework: deepspeed"), "spec.training.framework"},
  };
  for (const auto& [yaml, field] : cases) {
    auto c = CampaignFromYaml(yaml);
    ASSERT_FALSE(c.ok()) << yaml;
    EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(c.status().message().find(field), std::string::npos) << c.status().message();
  }
}

}  // namespace
}  // namespace paratune
