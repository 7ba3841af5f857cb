// LlmAgents: the four roles played by a model. Each call builds the role's prompt, asks the
// ChatClient, parses the reply and returns both the parsed value (when the reply was usable)
// and an RoleExchange recording role, prompt, reply, parse result, latency and tokens for the
// message pool. Nothing the model writes is executed: replies only ever become parsed values
// that the engines validate further.
//
// Thread-safety: as thread-safe as the ChatClient it wraps (it keeps no state of its own).
#ifndef PARATUNE_AGENTS_LLM_LLM_AGENTS_H_
#define PARATUNE_AGENTS_LLM_LLM_AGENTS_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agents/llm/chat_client.h"
#include "agents/llm/prompts.h"
#include "agents/llm/reply_parser.h"

namespace paratune::llm {

// One exchange with the model, as kept in the message pool (JSON keys camelCase).
struct RoleExchange {
  std::string role;
  std::vector<ChatMessage> prompt;
  std::string reply;         // raw text ("" when the call failed)
  bool ok = false;           // the call succeeded and the reply parsed
  std::string parse_result;  // "parsed: ..." or the reason the reply or the call was rejected
  std::string error;         // the call's error ("" when the model answered)
  int64_t latency_ms = 0;
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int http_status = 0;
  int attempts = 0;
  bool structured = false;
  nlohmann::json ToJson() const;
  static RoleExchange FromJson(const nlohmann::json& j);  // lenient: missing keys stay default
};

template <typename T>
struct RoleOutcome {
  std::optional<T> value;  // set when the exchange is ok
  Status status;           // why not, otherwise
  RoleExchange exchange;
};

class LlmAgents {
 public:
  // `client` is not owned and must outlive this object.
  explicit LlmAgents(ChatClient* client) : client_(client) {}

  RoleOutcome<std::vector<SuggestedChange>> Analyze(const PromptContext& ctx);
  RoleOutcome<Config> Strategize(const PromptContext& ctx);
  RoleOutcome<FailureDiagnosis> Diagnose(const PromptContext& ctx);
  RoleOutcome<ProposerReply> Propose(const PromptContext& ctx);

  // "Change tp from 1 to 2. reason" lines for a strategist/proposer context.
  static std::vector<std::string> DescribeChanges(const std::vector<SuggestedChange>& changes);

 private:
  ChatClient* client_;
};

}  // namespace paratune::llm

#endif  // PARATUNE_AGENTS_LLM_LLM_AGENTS_H_
