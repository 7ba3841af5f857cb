// libFuzzer target: what a language model answers, in every role (analyst, strategist,
// diagnostician, proposer), plus the name and value normalisers. A model's reply is untrusted
// text: any bytes must give a parse or a rejection reason, never a crash, a stack overflow in a
// regex, or a hang. Redaction (applied to replies and log tails) is fuzzed here too.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agents/llm/redact.h"
#include "agents/llm/reply_parser.h"

namespace pl = paratune::llm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view reply(reinterpret_cast<const char*>(data), size);
  (void)pl::StripReasoning(reply);
  (void)pl::ParseAnalystReply(reply);
  (void)pl::ParseStrategistReply(reply);
  (void)pl::ParseDiagnosticianReply(reply);
  (void)pl::ParseProposerReply(reply);
  // Every reply is redacted before it is recorded (agents/engines/llm_engine.cc), every log tail
  // before it reaches a prompt.
  (void)pl::Redact(reply, {"sk-fuzz-secret"});
  (void)pl::RedactLogTail(reply, 1024);
  if (size < 256) {
    if (auto name = pl::CanonicalParameterName(reply)) {
      (void)pl::ParseModelValue(*name, reply);
    }
    for (const char* param : {"tp", "recompute", "sequenceParallel", "remat"}) {
      (void)pl::ParseModelValue(param, reply);
    }
  }
  return 0;
}
