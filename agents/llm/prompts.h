// Role prompts in the style of the published multi-agent tuning systems: an inception system
// prompt per role (duty, context, what to weigh most, output constraints, chain of thought
// inside <think> tags) and a user message carrying the campaign, the search space, the
// message-pool summary, knowledge retrieval results and the performance model's estimates.
// Everything that comes from outside paratune (logs, pool text, knowledge) is redacted and
// fenced as data the model must not obey. Each request carries a JSON schema for structured
// output; the free-text forms stay parseable when the server ignores it. Pure; thread-safe.
#ifndef PARATUNE_AGENTS_LLM_PROMPTS_H_
#define PARATUNE_AGENTS_LLM_PROMPTS_H_

#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/core/config.h"
#include "agents/llm/chat_client.h"

namespace paratune::llm {

enum class Role { kAnalyst, kStrategist, kDiagnostician, kProposer };
const char* RoleName(Role role);  // "analyst", "strategist", "diagnostician", "proposer"

struct PromptContext {
  const CampaignSpec* spec = nullptr;  // required; not owned
  Config current;                      // the configuration under analysis (best so far)
  std::string current_result;          // its measured outcome, one line
  std::string pool_summary;            // trials so far, one line each
  std::vector<std::string> knowledge;  // retrieval results, most relevant first
  std::string estimates;               // the performance model's view of candidates
  std::vector<std::string> analysis;   // strategist/proposer: the analyst's ranked changes
  std::vector<std::string> rejected;   // configurations already rejected, with reasons
  std::string failure_log;             // diagnostician: the failing trial's log (raw)
  Config failed_config;                // diagnostician: the configuration that failed
  std::vector<std::string> secrets;    // extra strings to scrub (e.g. the API key)
  size_t max_log_chars = 6000;
  size_t max_pool_chars = 8000;
};

// The request for `role`: system + user messages, the JSON schema, temperature 0.2.
ChatRequest BuildRoleRequest(Role role, const PromptContext& ctx);

// The role a request built by BuildRoleRequest is for ("" when it is not one of ours).
std::string RoleOfRequest(const ChatRequest& request);

// The search space as prompt text: "- tp (tensor-parallel size): 1, 2, 4, 8".
std::string DescribeSearchSpace(const CampaignSpec& spec);

}  // namespace paratune::llm

#endif  // PARATUNE_AGENTS_LLM_PROMPTS_H_
