#include "agents/core/config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace paratune {
namespace {

TEST(ConfigTest, EnvNamesAreUpperSnakeCase) {
  EXPECT_EQ(ParameterEnvName("tp"), "TP");
  EXPECT_EQ(ParameterEnvName("sequenceParallel"), "SEQUENCE_PARALLEL");
  EXPECT_EQ(ParameterEnvName("iciFsdp"), "ICI_FSDP");
  EXPECT_EQ(ParameterEnvName("perDeviceBatchSize"), "PER_DEVICE_BATCH_SIZE");
}

TEST(ConfigTest, KeyIsCanonicalAndJsonRoundTrips) {
  auto c = ConfigFromJson(
      nlohmann::json::parse(R"({"tp": 2, "recompute": "full", "sequenceParallel": true})"),
      "config");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(ConfigKey(*c), "recompute=full,sequenceParallel=true,tp=2");
  auto again = ConfigFromJson(ConfigToJson(*c), "config");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(ConfigKey(*again), ConfigKey(*c));
}

TEST(ConfigTest, TextValuesParseByType) {
  EXPECT_EQ(ParseParamText(*FindParameter("tp"), "4", "f")->AsInt(), 4);
  EXPECT_FALSE(ParseParamText(*FindParameter("tp"), "4x", "f").ok());
  EXPECT_TRUE(ParseParamText(*FindParameter("sequenceParallel"), "true", "f")->AsBool());
  EXPECT_FALSE(ParseParamText(*FindParameter("recompute"), "half", "f").ok());
}

TEST(ConfigTest, UnknownKeyIsRejectedWithItsName) {
  auto c = ConfigFromJson(nlohmann::json::parse(R"({"tq": 2})"), "spec.config");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("spec.config.tq"), std::string::npos);
}

TEST(ConfigTest, ChangedKeys) {
  Config a{{"tp", ParamValue::Int(1)}, {"pp", ParamValue::Int(2)}};
  Config b{{"tp", ParamValue::Int(2)}, {"pp", ParamValue::Int(2)}};
  EXPECT_EQ(ChangedKeys(a, b), std::vector<std::string>{"tp"});
}

// A TrialRun's spec.config comes from the API server as JSON: a float far outside int64 (or a
// fraction) must be refused naming the field, never converted (undefined behaviour).
TEST(ConfigTest, HugeOrFractionalNumbersForIntegersAreRefused) {
  for (const char* text : {R"({"tp": 1e300})", R"({"tp": -1e300})", R"({"tp": 2.5})"}) {
    auto c = ConfigFromJson(nlohmann::json::parse(text), "spec.config");
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_NE(c.status().message().find("spec.config"), std::string::npos) << c.status().message();
  }
  auto ok = ConfigFromJson(nlohmann::json::parse(R"({"tp": 4.0})"), "spec.config");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
}

}  // namespace
}  // namespace paratune
