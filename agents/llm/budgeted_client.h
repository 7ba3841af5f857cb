// BudgetedChatClient: a ChatClient decorator that enforces a campaign's budget of calls and
// tokens and accounts for usage. Once either budget is spent, Complete answers
// kResourceExhausted without calling the model (the engines then fall back to the built-in
// one). A call in flight is never cut short: the token budget may be overshot by one reply.
//
// Thread-safety: Complete and usage() may be called concurrently.
#ifndef PARATUNE_AGENTS_LLM_BUDGETED_CLIENT_H_
#define PARATUNE_AGENTS_LLM_BUDGETED_CLIENT_H_

#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "agents/llm/chat_client.h"

namespace paratune::llm {

struct LlmBudget {
  int64_t max_calls = 200;       // 0 = unlimited
  int64_t max_tokens = 2000000;  // prompt + completion; 0 = unlimited
};

struct LlmUsage {
  int64_t calls = 0;          // calls that reached the model (successful or not)
  int64_t failed_calls = 0;   // of those, the ones that returned an error
  int64_t refused_calls = 0;  // refused because the budget was spent
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t latency_ms = 0;         // summed over calls
  nlohmann::json ToJson() const;  // {"calls", "failedCalls", "refusedCalls", "promptTokens", ...}
};

class BudgetedChatClient : public ChatClient {
 public:
  // `inner` is owned.
  BudgetedChatClient(std::unique_ptr<ChatClient> inner, LlmBudget budget)
      : inner_(std::move(inner)), budget_(budget) {}
  BudgetedChatClient(const BudgetedChatClient&) = delete;
  BudgetedChatClient& operator=(const BudgetedChatClient&) = delete;

  Result<ChatReply> Complete(const ChatRequest& request) override;
  LlmUsage usage() const;

 private:
  std::unique_ptr<ChatClient> inner_;
  const LlmBudget budget_;
  mutable std::mutex mu_;
  LlmUsage usage_;  // guarded by mu_
};

}  // namespace paratune::llm

#endif  // PARATUNE_AGENTS_LLM_BUDGETED_CLIENT_H_
