// libFuzzer target: what an OpenAI-compatible server sends back: the 200 body
// (choices[0].message.content, usage), an error body (redacted into a Status) and the
// Retry-After header. The server is outside our control: no input may crash or hang us.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "agents/llm/openai_wire.h"

namespace pl = paratune::llm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  (void)pl::ParseChatBody(body);
  for (int http : {400, 401, 429, 503}) {
    (void)pl::StatusForHttp(http, body, "sk-fuzz-0123456789abcdef");
  }
  (void)pl::RejectsStructuredOutput(422, body);
  const auto now = std::chrono::system_clock::time_point(std::chrono::seconds(1795000000));
  (void)pl::ParseRetryAfter(body, now, std::chrono::milliseconds(60000));
  return 0;
}
