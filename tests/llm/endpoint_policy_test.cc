// Where the operator may send prompts and keys: the administrator's allowlist, matched at URL
// boundaries, and no key over plain http except to loopback.
#include "agents/llm/endpoint_policy.h"

#include <gtest/gtest.h>

#include "base/strings.h"

namespace paratune::llm {
namespace {

TEST(EndpointPolicyTest, PrefixesMatchOnlyAtUrlBoundaries) {
  EXPECT_TRUE(EndpointMatchesPrefix("https://llm.corp/v1", "https://llm.corp"));
  EXPECT_TRUE(EndpointMatchesPrefix("https://llm.corp:8443/v1", "https://llm.corp"));
  EXPECT_TRUE(EndpointMatchesPrefix("https://llm.corp/team-a/v1", "https://llm.corp/team-a/"));
  EXPECT_FALSE(EndpointMatchesPrefix("https://llm.corp.evil.io/v1", "https://llm.corp"));
  EXPECT_FALSE(EndpointMatchesPrefix("https://llm.corp@evil.io/v1", "https://llm.corp"));
  EXPECT_FALSE(EndpointMatchesPrefix("https://llm.corp:1@evil.io/v1", "https://llm.corp"));
  EXPECT_FALSE(EndpointMatchesPrefix("https://llm.corp/team-ab/v1", "https://llm.corp/team-a"));
  EXPECT_FALSE(EndpointMatchesPrefix("http://llm.corp/v1", "https://llm.corp"));
  EXPECT_FALSE(EndpointMatchesPrefix("https://llm.corp:9/v1", "https://llm.corp:8443"));
}

TEST(EndpointPolicyTest, EmptyAllowlistAdmitsOnlyTheOperatorEndpoint) {
  EndpointPolicy p;
  p.operator_endpoint = "http://vllm.llm.svc:8000/v1";
  EXPECT_TRUE(CheckEndpointAllowed("http://vllm.llm.svc:8000/v1/", p).ok());
  EXPECT_TRUE(CheckEndpointAllowed("http://vllm.llm.svc:8000/v1/chat/completions", p).ok());
  Status metadata = CheckEndpointAllowed("http://169.254.169.254/latest/meta-data", p);
  ASSERT_FALSE(metadata.ok());
  EXPECT_EQ(metadata.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(metadata.message().rfind("spec.agents.llm.endpoint: ", 0), 0u) << metadata.message();
  p.allowed_prefixes = {"https://llm.corp/"};
  EXPECT_TRUE(CheckEndpointAllowed("https://llm.corp/v1", p).ok());
  EXPECT_FALSE(CheckEndpointAllowed("http://kubernetes.default.svc/api", p).ok());
  EXPECT_FALSE(CheckEndpointAllowed("", EndpointPolicy()).ok());
}

TEST(EndpointPolicyTest, KeysTravelOnlyOverTlsOrToLoopback) {
  EXPECT_TRUE(IsLoopbackUrl("http://127.0.0.1:8080/v1"));
  EXPECT_TRUE(IsLoopbackUrl("http://localhost/v1"));
  EXPECT_TRUE(IsLoopbackUrl("http://[::1]:80/v1"));
  EXPECT_FALSE(IsLoopbackUrl("http://127.0.0.1.evil.io/v1"));
  EXPECT_FALSE(IsLoopbackUrl("http://127.0.0.1@evil.io/v1"));
  EXPECT_FALSE(IsLoopbackUrl("http://10.0.0.1/v1"));
  EXPECT_TRUE(CheckKeyTransport("https://llm.corp/v1", true).ok());
  EXPECT_TRUE(CheckKeyTransport("http://127.0.0.1:9/v1", true).ok());
  EXPECT_TRUE(CheckKeyTransport("http://vllm:8000/v1", false).ok());
  Status clear = CheckKeyTransport("http://vllm:8000/v1", true);
  ASSERT_FALSE(clear.ok());
  EXPECT_EQ(clear.message().rfind("spec.agents.llm.endpoint: ", 0), 0u);
}

TEST(EndpointPolicyTest, SplitsCommaLists) {
  EXPECT_EQ(SplitList(" a, ,b ,"), (std::vector<std::string>{"a", "b"}));
  EXPECT_TRUE(SplitList("").empty());
}

}  // namespace
}  // namespace paratune::llm
