#include "agents/llm/budgeted_client.h"

namespace paratune::llm {

nlohmann::json LlmUsage::ToJson() const {
  return {{"calls", calls},
          {"failedCalls", failed_calls},
          {"refusedCalls", refused_calls},
          {"promptTokens", prompt_tokens},
          {"completionTokens", completion_tokens},
          {"totalTokens", prompt_tokens + completion_tokens},
          {"latencyMs", latency_ms}};
}

Result<ChatReply> BudgetedChatClient::Complete(const ChatRequest& request) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t tokens = usage_.prompt_tokens + usage_.completion_tokens;
    if (budget_.max_calls > 0 && usage_.calls >= budget_.max_calls) {
      ++usage_.refused_calls;
      return Status::Exhausted("LLM call budget spent (" + std::to_string(budget_.max_calls) +
                               " calls)");
    }
    if (budget_.max_tokens > 0 && tokens >= budget_.max_tokens) {
      ++usage_.refused_calls;
      return Status::Exhausted("LLM token budget spent (" + std::to_string(tokens) + " of " +
                               std::to_string(budget_.max_tokens) + " tokens)");
    }
    ++usage_.calls;  // counted before the call so concurrent callers respect the budget
  }
  auto reply = inner_->Complete(request);
  std::lock_guard<std::mutex> lock(mu_);
  if (!reply.ok()) {
    ++usage_.failed_calls;
    return reply;
  }
  usage_.prompt_tokens += reply->usage.prompt_tokens;
  usage_.completion_tokens += reply->usage.completion_tokens;
  usage_.latency_ms += reply->latency.count();
  return reply;
}

LlmUsage BudgetedChatClient::usage() const {
  std::lock_guard<std::mutex> lock(mu_);
  return usage_;
}

}  // namespace paratune::llm
