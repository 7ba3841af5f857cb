// ReplayChatClient: answers each role's requests with the replies recorded in a message pool,
// in order, so an LLM-driven campaign can be re-run offline and audited exactly (same seed, same
// replies, same decisions). No network.
//
// Thread-safety: Complete may be called concurrently (a mutex guards the cursors).
#ifndef PARATUNE_AGENTS_LLM_REPLAY_CLIENT_H_
#define PARATUNE_AGENTS_LLM_REPLAY_CLIENT_H_

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "agents/llm/chat_client.h"

namespace paratune::llm {

struct RecordedReply {
  std::string role;   // analyst | strategist | diagnostician | proposer
  std::string reply;  // the model's text ("" when the call failed)
  std::string error;  // the call's error as recorded ("" when the model answered)
  int64_t prompt_tokens = 0, completion_tokens = 0;
};

class ReplayChatClient : public ChatClient {
 public:
  explicit ReplayChatClient(std::vector<RecordedReply> log);
  // The next recorded reply for the request's role (from its system prompt). A recorded error
  // comes back as kDeadlineExceeded (timeouts) or kUnavailable; nothing left for the role is
  // kFailedPrecondition naming it.
  Result<ChatReply> Complete(const ChatRequest& request) override;

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<RecordedReply>> by_role_;  // guarded by mu_
  std::map<std::string, size_t> next_;                         // guarded by mu_
};

}  // namespace paratune::llm

#endif  // PARATUNE_AGENTS_LLM_REPLAY_CLIENT_H_
