#include "agents/llm/replay_client.h"

#include "agents/llm/prompts.h"

namespace paratune::llm {

ReplayChatClient::ReplayChatClient(std::vector<RecordedReply> log) {
  for (auto& r : log) by_role_[r.role].push_back(std::move(r));
}

Result<ChatReply> ReplayChatClient::Complete(const ChatRequest& request) {
  const std::string role = RoleOfRequest(request);
  std::lock_guard<std::mutex> lock(mu_);
  auto& list = by_role_[role];
  size_t& i = next_[role];
  if (i >= list.size()) {
    return Status::Precondition("replay: no recorded reply left for role \"" + role + "\"");
  }
  const RecordedReply& r = list[i++];
  if (!r.error.empty()) {
    if (r.error.find("DeadlineExceeded") != std::string::npos) return Status::Deadline(r.error);
    return Status::Unavailable(r.error);
  }
  ChatReply reply;
  reply.text = r.reply;
  reply.usage = {r.prompt_tokens, r.completion_tokens};
  reply.http_status = 200;
  return reply;
}

}  // namespace paratune::llm
