// What an LLM endpoint can push back into the operator: replies are size-bounded, and with
// include_error_body off an error reply contributes its status code only (no echo of its text
// into Events or the pool). Keys never go over plain http except to loopback.
#include <gtest/gtest.h>

#include <string>

#include "agents/llm/openai_client.h"
#include "scripted_server.h"

namespace paratune::llm {
namespace {

using testing::ScriptedReply;
using testing::ScriptedServer;

ChatClientOptions Options(const std::string& endpoint) {
  ChatClientOptions o;
  o.endpoint = endpoint;
  o.model = "m";
  o.max_retries = 0;  // no retry, so no backoff sleep
  return o;
}

ChatRequest Hello() {
  ChatRequest r;
  r.messages = {{"user", "hi"}};
  return r;
}

TEST(OpenAiBoundsTest, AnOversizedReplyFailsWithoutBeingKept) {
  auto server = ScriptedServer::Start();
  ASSERT_NE(server, nullptr);
  server->Push(ScriptedReply::Chat(std::string(200000, 'x')));
  ChatClientOptions o = Options(server->endpoint());
  o.max_response_bytes = 64 * 1024;
  auto client = OpenAiChatClient::Create(o);
  ASSERT_TRUE(client.ok());
  auto reply = (*client)->Complete(Hello());
  ASSERT_FALSE(reply.ok());
  EXPECT_EQ(reply.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(reply.status().message().find("xxxx"), std::string::npos);
  // The same reply within the bound is read.
  server->Push(ScriptedReply::Chat(std::string(200000, 'x')));
  o.max_response_bytes = 1 << 20;
  auto roomy = OpenAiChatClient::Create(o);
  ASSERT_TRUE(roomy.ok());
  auto ok = (*roomy)->Complete(Hello());
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->text.size(), 200000u);
}

TEST(OpenAiBoundsTest, ErrorBodiesAreNotEchoedWhenTheOperatorSaysSo) {
  auto server = ScriptedServer::Start();
  ASSERT_NE(server, nullptr);
  const std::string probe = "ami-id instance-id internal-service-banner";
  server->Push(ScriptedReply::Error(404, probe));
  ChatClientOptions o = Options(server->endpoint());
  o.include_error_body = false;
  auto client = OpenAiChatClient::Create(o);
  ASSERT_TRUE(client.ok());
  auto reply = (*client)->Complete(Hello());
  ASSERT_FALSE(reply.ok());
  EXPECT_NE(reply.status().message().find("HTTP 404"), std::string::npos);
  EXPECT_EQ(reply.status().message().find("instance-id"), std::string::npos)
      << reply.status().message();
  // The CLI (default) still shows the server's explanation to the person who chose the server.
  server->Push(ScriptedReply::Error(404, probe));
  auto cli = OpenAiChatClient::Create(Options(server->endpoint()));
  ASSERT_TRUE(cli.ok());
  EXPECT_NE((*cli)->Complete(Hello()).status().message().find("instance-id"), std::string::npos);
}

TEST(OpenAiBoundsTest, NoKeyOverPlainHttpExceptToLoopback) {
  ChatClientOptions o = Options("http://vllm.llm.svc:8000/v1");
  o.api_key = "sk-secret";
  auto refused = OpenAiChatClient::Create(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message().rfind("spec.agents.llm.endpoint: ", 0), 0u);
  EXPECT_EQ(refused.status().message().find("sk-secret"), std::string::npos);
  o.endpoint = "https://vllm.llm.svc:8000/v1";
  EXPECT_TRUE(OpenAiChatClient::Create(o).ok());
  o.endpoint = "http://127.0.0.1:8000/v1";
  EXPECT_TRUE(OpenAiChatClient::Create(o).ok());
  o.endpoint = "http://vllm.llm.svc:8000/v1";
  o.api_key = "";
  EXPECT_TRUE(OpenAiChatClient::Create(o).ok()) << "no key, nothing to protect";
}

}  // namespace
}  // namespace paratune::llm
