#include "controllers/llm_api_key.h"

#include <gtest/gtest.h>

#include "operator/testing/fake_kube_client.h"

namespace paratune::controllers {
namespace {

CampaignSpec SpecWithRef(const std::string& name, const std::string& key) {
  CampaignSpec spec;
  spec.namespace_ = "ns";
  spec.agents.llm_api_key = {name, key};
  return spec;
}

TEST(LlmApiKeyTest, DecodesTheNamedKeyOfTheSecret) {
  kube::FakeKubeClient client;
  nlohmann::json secret = {{"apiVersion", "v1"},
                           {"kind", "Secret"},
                           {"metadata", {{"name", "llm-key"}, {"namespace", "ns"}}},
                           {"data", {{"apiKey", "c2stdGVzdC0xMjM0NQo="}}}};  // "sk-test-12345\n"
  ASSERT_TRUE(client.Create(kube::resources::kSecrets, "ns", secret).ok());
  auto key = ReadLlmApiKey(&client, SpecWithRef("llm-key", "apiKey"));
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(*key, "sk-test-12345");
}

TEST(LlmApiKeyTest, NoRefMeansNoKeyAndMissingSecretNamesItWithoutAValue) {
  kube::FakeKubeClient client;
  auto none = ReadLlmApiKey(&client, SpecWithRef("", ""));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, "");
  auto missing = ReadLlmApiKey(&client, SpecWithRef("absent", "apiKey"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("ns/absent"), std::string::npos);
}

TEST(LlmApiKeyTest, Base64) {
  EXPECT_EQ(*DecodeBase64("aGVsbG8="), "hello");
  EXPECT_EQ(*DecodeBase64("aGVs bG8"), "hello");
  EXPECT_FALSE(DecodeBase64("a*b").ok());
  EXPECT_FALSE(DecodeBase64("aGV=sbG8").ok());
}

}  // namespace
}  // namespace paratune::controllers
