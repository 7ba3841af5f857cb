#include "controllers/llm_api_key.h"

#include <gtest/gtest.h>

#include "base/base64.h"
#include "testing/fakes/fake_kube_client.h"

namespace paratune::controllers {
namespace {

CampaignSpec SpecWithRef(const std::string& name, const std::string& key) {
  CampaignSpec spec;
  spec.namespace_ = "ns";
  spec.agents.llm_api_key = {name, key};
  return spec;
}

nlohmann::json Secret(const std::string& name, bool labelled) {
  nlohmann::json s = {{"apiVersion", "v1"},
                      {"kind", "Secret"},
                      {"metadata", {{"name", name}, {"namespace", "ns"}}},
                      {"data", {{"apiKey", "c2stdGVzdC0xMjM0NQo="}}}};  // "sk-test-12345\n"
  if (labelled) s["metadata"]["labels"][kLlmApiKeyLabel] = "true";
  return s;
}

TEST(LlmApiKeyTest, DecodesTheNamedKeyOfTheSecret) {
  kube::FakeKubeClient client;
  ASSERT_TRUE(client.Create(kube::resources::kSecrets, "ns", Secret("llm-key", true)).ok());
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
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("ns/absent"), std::string::npos);
  EXPECT_EQ(missing.status().message().rfind("spec.agents.llm.apiKeySecretRef", 0), 0u);
}

TEST(LlmApiKeyTest, AnUnlabelledSecretIsNeitherReadNorUsed) {
  kube::FakeKubeClient client;
  ASSERT_TRUE(client.Create(kube::resources::kSecrets, "ns", Secret("db-password", false)).ok());
  auto key = ReadLlmApiKey(&client, SpecWithRef("db-password", "apiKey"));
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(key.status().message().find(kLlmApiKeyLabel), std::string::npos);
  EXPECT_EQ(key.status().message().find("sk-test"), std::string::npos);
}

// Least privilege (docs/security.md): one `get` by name, never a list or watch of Secrets.
TEST(LlmApiKeyTest, TheSecretIsReadByNameNeverListed) {
  kube::FakeKubeClient client;
  ASSERT_TRUE(client.Create(kube::resources::kSecrets, "ns", Secret("llm-key", true)).ok());
  client.ResetCalls();
  ASSERT_TRUE(ReadLlmApiKey(&client, SpecWithRef("llm-key", "apiKey")).ok());
  EXPECT_EQ(client.Calls("get"), 1);
  EXPECT_EQ(client.Calls("list"), 0);
  EXPECT_EQ(client.Calls("watch"), 0);
}

// A namespace that granted the operator nothing: a spec error naming the field and saying who
// grants it, not a transient error retried forever.
TEST(LlmApiKeyTest, ADeniedGetNamesTheFieldAndTheGrant) {
  kube::FakeKubeClient client;
  ASSERT_TRUE(client.Create(kube::resources::kSecrets, "ns", Secret("llm-key", true)).ok());
  client.InjectError("get", "secrets", Status(StatusCode::kPermissionDenied, "forbidden"));
  auto key = ReadLlmApiKey(&client, SpecWithRef("llm-key", "apiKey"));
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(key.status().message().rfind("spec.agents.llm.apiKeySecretRef", 0), 0u);
  EXPECT_NE(key.status().message().find("Role"), std::string::npos) << key.status().message();
  // A transient error stays transient (retried), still naming the field.
  client.InjectError("get", "secrets", Status::Unavailable("etcd leader changed"));
  key = ReadLlmApiKey(&client, SpecWithRef("llm-key", "apiKey"));
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.status().code(), StatusCode::kUnavailable);
}

TEST(LlmAccessTest, TheOperatorKeyGoesOnlyToTheOperatorEndpoint) {
  kube::FakeKubeClient client;
  LlmAccessOptions opts;
  opts.endpoints.operator_endpoint = "https://llm.corp/v1";
  opts.endpoints.allowed_prefixes = {"https://team-llm.corp/"};
  opts.operator_api_key = "sk-operator";
  CampaignSpec spec = SpecWithRef("", "");
  spec.agents.engine = "llm";
  spec.agents.llm_endpoint = "https://llm.corp/v1/";
  EXPECT_EQ(*ResolveLlmApiKey(&client, spec, opts), "sk-operator");
  EXPECT_TRUE(CheckLlmAccess(&client, spec, opts).ok());
  spec.agents.llm_endpoint = "https://team-llm.corp/v1";
  EXPECT_EQ(*ResolveLlmApiKey(&client, spec, opts), "") << "allowed, but not the operator's";
  EXPECT_TRUE(CheckLlmAccess(&client, spec, opts).ok());
  spec.agents.llm_endpoint = "http://169.254.169.254/v1";
  Status refused = CheckLlmAccess(&client, spec, opts);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.message().rfind("spec.agents.llm.endpoint", 0), 0u) << refused.message();
  spec.agents.engine = "builtin";
  EXPECT_TRUE(CheckLlmAccess(&client, spec, opts).ok()) << "no LLM, nothing to check";
}

TEST(LlmAccessTest, ACampaignKeyNeedsTheLabelAndTls) {
  kube::FakeKubeClient client;
  ASSERT_TRUE(client.Create(kube::resources::kSecrets, "ns", Secret("mine", true)).ok());
  ASSERT_TRUE(client.Create(kube::resources::kSecrets, "ns", Secret("theirs", false)).ok());
  LlmAccessOptions opts;
  opts.endpoints.allowed_prefixes = {"https://team-llm.corp/", "http://plain.corp/"};
  CampaignSpec spec = SpecWithRef("theirs", "apiKey");
  spec.agents.engine = "hybrid";
  spec.agents.llm_endpoint = "https://team-llm.corp/v1";
  Status s = CheckLlmAccess(&client, spec, opts);
  EXPECT_EQ(s.message().rfind("spec.agents.llm.apiKeySecretRef", 0), 0u) << s.message();
  spec.agents.llm_api_key.name = "mine";
  EXPECT_TRUE(CheckLlmAccess(&client, spec, opts).ok());
  EXPECT_EQ(*ResolveLlmApiKey(&client, spec, opts), "sk-test-12345");
  spec.agents.llm_endpoint = "http://plain.corp/v1";
  s = CheckLlmAccess(&client, spec, opts);
  EXPECT_EQ(s.message().rfind("spec.agents.llm.endpoint", 0), 0u) << "a key in clear";
}

TEST(LlmApiKeyTest, Base64) {
  EXPECT_EQ(*Base64Decode("aGVsbG8="), "hello");
  EXPECT_EQ(*Base64Decode("aGVs bG8"), "hello");
  EXPECT_FALSE(Base64Decode("a*b").ok());
  EXPECT_FALSE(Base64Decode("aGV=sbG8").ok());
}

}  // namespace
}  // namespace paratune::controllers
