// OpenAiChatClient against the scripted OpenAI-compatible server on 127.0.0.1.
#include "agents/llm/openai_client.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "scripted_server.h"

namespace paratune::llm {
namespace {

using std::chrono::milliseconds;
using testing::ScriptedReply;
using testing::ScriptedServer;

constexpr char kKey[] = "sk-test-SECRET-0123456789abcdef";

class OpenAiClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = ScriptedServer::Start();
    ASSERT_NE(server_, nullptr);
  }
  std::unique_ptr<OpenAiChatClient> Client(int max_retries = 3,
                                           milliseconds timeout = milliseconds(5000)) {
    ChatClientOptions o;
    o.endpoint = server_->endpoint();
    o.model = "qwen2.5-72b-instruct";
    o.api_key = kKey;
    o.timeout = timeout;
    o.max_retries = max_retries;
    o.backoff_base = milliseconds(100);
    o.backoff_cap = milliseconds(10000);
    o.clock = &clock_;
    o.random = [] { return 0.5; };
    auto c = OpenAiChatClient::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(*c);
  }
  static ChatRequest Request(bool schema = false) {
    ChatRequest r;
    r.messages = {{"system", "You are the Analyst."}, {"user", "tp=1"}};
    if (schema) r.json_schema = nlohmann::json{{"type", "object"}};
    return r;
  }
  std::unique_ptr<ScriptedServer> server_;
  FakeTimeSource clock_{FakeSleep::kAdvancesClock};
};

TEST_F(OpenAiClientTest, WellFormedReplySendsKeyOnlyInHeaderAndRecordsUsage) {
  server_->Push(ScriptedReply::Chat("Change TP from 1 to 2.", 321, 17));
  auto reply = Client()->Complete(Request());
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->text, "Change TP from 1 to 2.");
  EXPECT_EQ(reply->usage.prompt_tokens, 321);
  EXPECT_EQ(reply->usage.completion_tokens, 17);
  EXPECT_EQ(reply->http_status, 200);
  auto reqs = server_->requests();
  ASSERT_EQ(reqs.size(), 1u);
  EXPECT_EQ(reqs[0].path, "/v1/chat/completions");
  EXPECT_EQ(reqs[0].headers["authorization"], std::string("Bearer ") + kKey);
  auto body = nlohmann::json::parse(reqs[0].body);
  EXPECT_EQ(body["model"], "qwen2.5-72b-instruct");
  EXPECT_EQ(body["messages"][0]["role"], "system");
  EXPECT_FALSE(body.contains("response_format"));
  EXPECT_EQ(reqs[0].body.find(kKey), std::string::npos);
}

TEST_F(OpenAiClientTest, HonoursRetryAfterOn429) {
  server_->Push(ScriptedReply::Error(429, "rate limited", "3"));
  server_->Push(ScriptedReply::Chat("ok"));
  auto reply = Client()->Complete(Request());
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  EXPECT_EQ(reply->attempts, 2);
  ASSERT_EQ(clock_.sleeps().size(), 1u);
  EXPECT_EQ(clock_.sleeps()[0], milliseconds(3000));
}

TEST_F(OpenAiClientTest, BacksOffExponentiallyWithJitterOn5xx) {
  server_->Push(ScriptedReply::Error(500, "boom"));
  server_->Push(ScriptedReply::Error(503, "overloaded"));
  server_->Push(ScriptedReply::Chat("ok"));
  auto reply = Client()->Complete(Request());
  ASSERT_TRUE(reply.ok());
  EXPECT_EQ(reply->attempts, 3);
  // Equal jitter with u = 0.5: 3/4 of 100 ms, then of 200 ms.
  ASSERT_EQ(clock_.sleeps().size(), 2u);
  EXPECT_EQ(clock_.sleeps()[0], milliseconds(75));
  EXPECT_EQ(clock_.sleeps()[1], milliseconds(150));
}

TEST_F(OpenAiClientTest, GivesUpAfterMaxRetriesWithoutLeakingTheKey) {
  for (int i = 0; i < 3; ++i) {
    server_->Push(ScriptedReply::Error(500, std::string("bad key ") + kKey + " from 10.1.2.3"));
  }
  auto reply = Client(/*max_retries=*/2)->Complete(Request());
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(server_->requests().size(), 3u);
  EXPECT_EQ(reply.status().message().find(kKey), std::string::npos);
  EXPECT_EQ(reply.status().message().find("10.1.2.3"), std::string::npos);
  EXPECT_NE(reply.status().message().find("HTTP 500"), std::string::npos);
}

TEST_F(OpenAiClientTest, UnauthorizedIsNotRetried) {
  server_->Push(ScriptedReply::Error(401, "invalid api key"));
  auto reply = Client()->Complete(Request());
  EXPECT_EQ(reply.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(server_->requests().size(), 1u);
  EXPECT_TRUE(clock_.sleeps().empty());
}

TEST_F(OpenAiClientTest, SlowReplyTimesOut) {
  ScriptedReply slow = ScriptedReply::Chat("late");
  slow.delay = milliseconds(2000);
  server_->Push(slow);
  auto start = std::chrono::steady_clock::now();
  auto reply = Client(3, milliseconds(300))->Complete(Request());
  EXPECT_EQ(reply.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1900));
  EXPECT_EQ(server_->requests().size(), 1u);
}

TEST_F(OpenAiClientTest, MalformedBodyIsInvalid) {
  server_->Push({200, "this is not json", {}, {}});
  auto reply = Client()->Complete(Request());
  EXPECT_EQ(reply.status().code(), StatusCode::kInvalidArgument);
  server_->Push({200, R"({"choices": []})", {}, {}});
  EXPECT_EQ(Client()->Complete(Request()).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(OpenAiClientTest, FallsBackToFreeTextWhenStructuredOutputIsRefused) {
  server_->Push(ScriptedReply::Error(400, "response_format json_schema is not supported"));
  server_->Push(ScriptedReply::Chat("TP: 2"));
  server_->Push(ScriptedReply::Chat("TP: 4"));
  auto client = Client();
  auto first = client->Complete(Request(/*schema=*/true));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_FALSE(first->structured);
  ASSERT_TRUE(client->Complete(Request(true)).ok());
  auto reqs = server_->requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_TRUE(nlohmann::json::parse(reqs[0].body).contains("response_format"));
  EXPECT_FALSE(nlohmann::json::parse(reqs[1].body).contains("response_format"));
  EXPECT_FALSE(nlohmann::json::parse(reqs[2].body).contains("response_format"));
}

TEST_F(OpenAiClientTest, StructuredRequestCarriesTheSchema) {
  server_->Push(ScriptedReply::Chat(R"({"config": {"tp": 2}})"));
  auto reply = Client()->Complete(Request(true));
  ASSERT_TRUE(reply.ok());
  EXPECT_TRUE(reply->structured);
  auto body = nlohmann::json::parse(server_->requests()[0].body);
  EXPECT_EQ(body["response_format"]["type"], "json_schema");
  EXPECT_EQ(body["response_format"]["json_schema"]["schema"]["type"], "object");
}

TEST(OpenAiClientCreateTest, RejectsBadOptionsNamingTheField) {
  ChatClientOptions o;
  o.endpoint = "ftp://x";
  o.model = "m";
  auto c = OpenAiChatClient::Create(o);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("spec.agents.llm.endpoint"), std::string::npos);
  o.endpoint = "https://api.example.com/v1";
  o.model = "";
  EXPECT_NE(OpenAiChatClient::Create(o).status().message().find("spec.agents.llm.model"),
            std::string::npos);
}

TEST(OpenAiClientCreateTest, ConnectionRefusedIsUnavailable) {
  int port = 0;
  {
    auto s = ScriptedServer::Start();  // take a free port, then close it
    port = s->port();
  }
  ChatClientOptions o;
  o.endpoint = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  o.model = "m";
  o.max_retries = 1;
  FakeTimeSource clock(FakeSleep::kAdvancesClock);
  o.clock = &clock;
  auto c = OpenAiChatClient::Create(o);
  ASSERT_TRUE(c.ok());
  ChatRequest r;
  r.messages = {{"user", "hi"}};
  auto reply = (*c)->Complete(r);
  EXPECT_EQ(reply.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(clock.sleeps().size(), 1u);
}

}  // namespace
}  // namespace paratune::llm
