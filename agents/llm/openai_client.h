// OpenAiChatClient: ChatClient over the OpenAI-compatible chat-completions API (vLLM, Ollama,
// llama.cpp's server, OpenAI, ...), HTTP or HTTPS (TLS with certificate verification). The only
// file that knows cpprestsdk. Retries 429/5xx and connection failures with exponential backoff
// and jitter, honouring Retry-After; each attempt is bounded by the per-call timeout. Asks for
// JSON-schema structured output when the request has a schema and, once a server refuses it,
// stops asking. The API key goes only into the Authorization header: it never appears in an
// error message.
//
// Thread-safety: Complete may be called from several threads at once.
#ifndef PARATUNE_AGENTS_LLM_OPENAI_CLIENT_H_
#define PARATUNE_AGENTS_LLM_OPENAI_CLIENT_H_

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "agents/llm/chat_client.h"
#include "base/time_source.h"

namespace paratune::llm {

struct ChatClientOptions {
  // Base URL, e.g. "http://vllm.llm.svc:8000/v1"; "/chat/completions" is appended unless the
  // URL already ends with it.
  std::string endpoint;
  std::string model;
  std::string api_key;                       // "" = no Authorization header
  std::chrono::milliseconds timeout{60000};  // per attempt
  int max_retries = 3;                       // extra attempts after the first
  std::chrono::milliseconds backoff_base{500};
  std::chrono::milliseconds backoff_cap{30000};
  bool retry_on_timeout = false;  // a slow model usually stays slow: fail fast by default
  std::string ca_file;            // extra CA bundle for https ("" = system store)
  bool insecure_skip_verify = false;
  // A reply body larger than this fails the call (kResourceExhausted) without being kept.
  size_t max_response_bytes = 4 << 20;
  // false (the operator): a non-2xx reply's body is not copied into the error, only the HTTP
  // status, so an endpoint cannot echo text into Events or the pool.
  bool include_error_body = true;
  // Injected; defaults are the process clock (RealTimeSource) and std::mt19937_64. The clock
  // times the call, sleeps between retries and reads a Retry-After date against its wall time.
  TimeSource* clock = nullptr;
  UnitRandom random;
};

class OpenAiChatClient : public ChatClient {
 public:
  // Fails (kInvalidArgument naming the option) when the endpoint is not an http(s) URL, the
  // model is empty, or a key would go over plain http to a host that is not loopback.
  static Result<std::unique_ptr<OpenAiChatClient>> Create(ChatClientOptions options);
  ~OpenAiChatClient() override;
  OpenAiChatClient(const OpenAiChatClient&) = delete;
  OpenAiChatClient& operator=(const OpenAiChatClient&) = delete;

  Result<ChatReply> Complete(const ChatRequest& request) override;

  // The endpoint the client posts to (for status and logs; never holds the key).
  const std::string& url() const { return url_; }

 private:
  struct Impl;
  struct Attempt;
  OpenAiChatClient(ChatClientOptions options, std::string url, std::unique_ptr<Impl> impl);
  Attempt Post(const ChatRequest& request, bool with_schema);

  ChatClientOptions options_;
  std::string url_;
  std::unique_ptr<Impl> impl_;
  std::atomic<bool> schema_unsupported_{false};
};

}  // namespace paratune::llm

#endif  // PARATUNE_AGENTS_LLM_OPENAI_CLIENT_H_
