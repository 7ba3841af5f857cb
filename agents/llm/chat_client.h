// The chat interface every LLM-backed agent talks through. Tests inject a fake or point the
// OpenAI-compatible client at a scripted server; nothing outside openai_client.cc knows about
// HTTP. Plain value types; implementations state their own thread-safety.
#ifndef PARATUNE_AGENTS_LLM_CHAT_CLIENT_H_
#define PARATUNE_AGENTS_LLM_CHAT_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace paratune::llm {

struct ChatMessage {
  std::string role;  // system | user | assistant
  std::string content;
};

struct ChatRequest {
  std::vector<ChatMessage> messages;
  std::string model;  // "" = the client's default model
  double temperature = 0.2;
  int max_tokens = 1024;
  // When set, the request asks for structured output (response_format json_schema). Servers
  // that refuse it are asked again without it; the reply parsers accept both forms.
  std::optional<nlohmann::json> json_schema;
  std::string schema_name = "reply";
};

struct ChatUsage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t Total() const { return prompt_tokens + completion_tokens; }
};

struct ChatReply {
  std::string text;  // the first choice's message content
  ChatUsage usage;
  std::chrono::milliseconds latency{0};  // wall time of the call, retries included
  int http_status = 0;                   // of the last attempt
  int attempts = 1;
  bool structured = false;  // true when the server accepted the json_schema request
  std::string model;        // as the server reported it
};

// One chat completion. Success: the reply of the first choice. Failure: kUnavailable (429/5xx,
// connection refused, after retries), kDeadlineExceeded (per-call timeout), kUnauthenticated /
// kPermissionDenied (401/403), kInvalidArgument (400/422 or an unparseable reply body),
// kResourceExhausted (a budget is used up). Error messages never contain the API key.
class ChatClient {
 public:
  virtual ~ChatClient() = default;
  virtual Result<ChatReply> Complete(const ChatRequest& request) = 0;
};

// Uniform in [0, 1); jitter source.
using UnitRandom = std::function<double()>;

}  // namespace paratune::llm

#endif  // PARATUNE_AGENTS_LLM_CHAT_CLIENT_H_
