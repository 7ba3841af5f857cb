#include "controllers/trial_run_spec.h"

#include <gtest/gtest.h>

namespace paratune::controllers {
namespace {

using nlohmann::json;

TEST(TrialRunSpecTest, RoundTripsTheContractShape) {
  const json wire = json::parse(R"({
    "campaignRef": {"name": "llama"}, "iteration": 3,
    "config": {"tp": 2, "pp": 1, "recompute": "selective", "sequenceParallel": true},
    "proposal": {"rationale": "Change tp from 1 to 2", "proposedBy": "builtin"},
    "prediction": {"mfu": 0.51, "peakMemoryGiB": 61.5},
    "retryOf": "llama-t002", "avoidNodes": ["node-3", "node-7"]})");
  auto spec = TrialRunSpecFromJson(wire);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->campaign_name, "llama");
  EXPECT_EQ(spec->iteration, 3);
  EXPECT_EQ(spec->config.size(), 4u);
  EXPECT_EQ(spec->retry_of, "llama-t002");
  EXPECT_EQ(spec->avoid_nodes, (std::vector<std::string>{"node-3", "node-7"}));
  EXPECT_EQ(ToJson(*spec), wire);
}

TEST(TrialRunSpecTest, EmptyOptionalFieldsAndUnpredictedNumbersAreLeftOut) {
  TrialRunSpec spec;
  spec.campaign_name = "c";
  spec.iteration = 1;
  spec.prediction = {{"mfu", 0.4}, {"boundBy", "compute"}, {"stepTimeSeconds", nullptr}};
  const json wire = ToJson(spec);
  EXPECT_FALSE(wire.contains("retryOf"));
  EXPECT_FALSE(wire.contains("avoidNodes"));
  EXPECT_EQ(wire["prediction"], json({{"mfu", 0.4}}));  // the schema types these as numbers
}

TEST(TrialRunSpecTest, AbsentFieldsTakeTheDefaults) {
  auto spec = TrialRunSpecFromJson(json());
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->campaign_name, "");
  EXPECT_EQ(spec->iteration, 0);
  EXPECT_TRUE(spec->config.empty());
}

TEST(TrialRunSpecTest, AWrongTypeIsRefusedNamingTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"campaignRef": "llama"})", "spec.campaignRef"},
      {R"({"campaignRef": {"name": 7}})", "spec.campaignRef.name"},
      {R"({"iteration": "3"})", "spec.iteration"},
      {R"({"iteration": 2.5})", "spec.iteration"},
      {R"({"config": {"tp": [1]}})", "spec.config.tp"},
      {R"({"retryOf": 1})", "spec.retryOf"},
      {R"({"avoidNodes": "node-1"})", "spec.avoidNodes"},
      {R"({"avoidNodes": ["node-1", 2]})", "spec.avoidNodes[1]"},
      {R"({"proposal": []})", "spec.proposal"},
      {R"([1, 2])", "spec"},
  };
  for (const auto& [text, field] : cases) {
    auto spec = TrialRunSpecFromJson(json::parse(text));
    ASSERT_FALSE(spec.ok()) << text;
    EXPECT_EQ(spec.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_EQ(spec.status().message().rfind(std::string(field) + ":", 0), 0u)
        << text << " -> " << spec.status().message();
  }
}

}  // namespace
}  // namespace paratune::controllers
