// The OpenAI chat-completions wire format and the retry arithmetic, as pure functions so they
// are tested without a server. Used by OpenAiChatClient only. Thread-safe.
#ifndef PARATUNE_AGENTS_LLM_OPENAI_WIRE_H_
#define PARATUNE_AGENTS_LLM_OPENAI_WIRE_H_

#include <chrono>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agents/llm/chat_client.h"

namespace paratune::llm {

// The POST body: {"model", "messages", "temperature", "max_tokens"} plus, when `with_schema`
// and the request has one, response_format {"type": "json_schema", "json_schema": {"name",
// "schema", "strict": true}}.
nlohmann::json BuildChatBody(const ChatRequest& request, const std::string& default_model,
                             bool with_schema);

// Reads choices[0].message.content, usage and model from a 200 reply body. Missing usage
// counts zero tokens; a body without a string content is kInvalidArgument.
Result<ChatReply> ParseChatBody(const std::string& body);

// Retry-After: delta-seconds ("2", "0.5") or an HTTP-date relative to `now`. nullopt when
// absent or unparseable; capped at `cap`.
std::optional<std::chrono::milliseconds> ParseRetryAfter(const std::string& header,
                                                         std::chrono::system_clock::time_point now,
                                                         std::chrono::milliseconds cap);

// Exponential backoff with equal jitter: d = min(cap, base * 2^attempt); returns d/2 + u*d/2
// for u in [0, 1). attempt counts from 0.
std::chrono::milliseconds BackoffDelay(int attempt, std::chrono::milliseconds base,
                                       std::chrono::milliseconds cap, double u);

// The status for a non-2xx reply: 401 unauthenticated, 403 denied, 400/404/422 invalid (404:
// wrong endpoint or model), 408 deadline, 429/5xx unavailable. The message carries the
// server's error text, redacted, with `api_key` removed.
Status StatusForHttp(int http_status, const std::string& body, const std::string& api_key);

// True for the statuses worth another attempt (429, 5xx, connection failures).
bool IsRetryableHttp(int http_status);

// True when a 400/422 body says the server does not support response_format / json_schema.
bool RejectsStructuredOutput(int http_status, const std::string& body);

}  // namespace paratune::llm

#endif  // PARATUNE_AGENTS_LLM_OPENAI_WIRE_H_
