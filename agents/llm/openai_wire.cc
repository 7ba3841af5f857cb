#include "agents/llm/openai_wire.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "agents/llm/redact.h"

namespace paratune::llm {

using nlohmann::json;

json BuildChatBody(const ChatRequest& request, const std::string& default_model, bool with_schema) {
  json messages = json::array();
  for (const auto& m : request.messages) {
    messages.push_back({{"role", m.role}, {"content", m.content}});
  }
  json body = {{"model", request.model.empty() ? default_model : request.model},
               {"messages", messages},
               {"temperature", request.temperature},
               {"max_tokens", request.max_tokens}};
  if (with_schema && request.json_schema) {
    body["response_format"] = {
        {"type", "json_schema"},
        {"json_schema",
         {{"name", request.schema_name}, {"schema", *request.json_schema}, {"strict", true}}}};
  }
  return body;
}

Result<ChatReply> ParseChatBody(const std::string& body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Invalid("reply body is not a JSON object");
  }
  const json* content = nullptr;
  if (j.contains("choices") && j["choices"].is_array() && !j["choices"].empty()) {
    const json& c0 = j["choices"][0];
    if (c0.is_object() && c0.contains("message") && c0["message"].is_object() &&
        c0["message"].contains("content")) {
      content = &c0["message"]["content"];
    }
  }
  if (content == nullptr || !content->is_string()) {
    return Status::Invalid("reply: choices[0].message.content missing or not a string");
  }
  ChatReply reply;
  reply.text = content->get<std::string>();
  if (j.contains("usage") && j["usage"].is_object()) {
    const json& u = j["usage"];
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer()) {
      reply.usage.prompt_tokens = u["prompt_tokens"].get<int64_t>();
    }
    if (u.contains("completion_tokens") && u["completion_tokens"].is_number_integer()) {
      reply.usage.completion_tokens = u["completion_tokens"].get<int64_t>();
    }
  }
  if (j.contains("model") && j["model"].is_string()) reply.model = j["model"].get<std::string>();
  return reply;
}

std::optional<std::chrono::milliseconds> ParseRetryAfter(const std::string& header,
                                                         std::chrono::system_clock::time_point now,
                                                         std::chrono::milliseconds cap) {
  if (header.empty()) return std::nullopt;
  char* end = nullptr;
  double seconds = std::strtod(header.c_str(), &end);
  if (end != header.c_str() && *end == '\0') {
    if (!(seconds >= 0) || !std::isfinite(seconds)) return std::nullopt;
    auto ms = std::chrono::milliseconds(static_cast<int64_t>(std::min(seconds, 1e9) * 1000));
    return std::min(ms, cap);
  }
  std::tm tm{};
  if (strptime(header.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm) == nullptr) return std::nullopt;
  // In whole seconds, clamped before any conversion: a date centuries away ("6026") would
  // overflow system_clock's nanoseconds (found by openai_wire_fuzzer).
  const time_t when = timegm(&tm);
  if (when == static_cast<time_t>(-1)) return std::nullopt;
  const int64_t delta_s =
      static_cast<int64_t>(when) - static_cast<int64_t>(std::chrono::system_clock::to_time_t(now));
  const int64_t cap_s = std::chrono::duration_cast<std::chrono::seconds>(cap).count();
  if (delta_s <= 0) return std::chrono::milliseconds(0);
  if (delta_s >= cap_s) return cap;
  return std::min(std::chrono::milliseconds(delta_s * 1000), cap);
}

std::chrono::milliseconds BackoffDelay(int attempt, std::chrono::milliseconds base,
                                       std::chrono::milliseconds cap, double u) {
  double d = static_cast<double>(base.count()) * std::pow(2.0, std::min(attempt, 30));
  d = std::min(d, static_cast<double>(cap.count()));
  u = std::clamp(u, 0.0, 1.0);
  return std::chrono::milliseconds(static_cast<int64_t>(d / 2 + u * d / 2));
}

bool IsRetryableHttp(int http_status) { return http_status == 429 || http_status >= 500; }

bool RejectsStructuredOutput(int http_status, const std::string& body) {
  if (http_status != 400 && http_status != 422) return false;
  return body.find("response_format") != std::string::npos ||
         body.find("json_schema") != std::string::npos ||
         body.find("structured") != std::string::npos;
}

Status StatusForHttp(int http_status, const std::string& body, const std::string& api_key) {
  std::string detail = body;
  json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    detail = e.is_object() && e.contains("message") && e["message"].is_string()
                 ? e["message"].get<std::string>()
                 : e.dump();
  }
  if (detail.size() > 300) detail = detail.substr(0, 300) + "...";
  std::string msg = "LLM endpoint returned HTTP " + std::to_string(http_status);
  if (!detail.empty()) msg += ": " + Redact(detail, {api_key});
  switch (http_status) {
    case 401:
      return {StatusCode::kUnauthenticated, msg};
    case 403:
      return {StatusCode::kPermissionDenied, msg};
    case 408:
      return Status::Deadline(msg);
    default:
      break;
  }
  if (IsRetryableHttp(http_status)) return Status::Unavailable(msg);
  return Status::Invalid(msg);
}

}  // namespace paratune::llm
