// The one factory of strategy engines, used by the operator (controllers/operator_engines.h adds
// its Secret and knowledge lookups) and by the CLI (simulate, tune). Everything an engine needs
// (overrides, the API key, the endpoint policy, the clock, the knowledge) is passed in: nothing
// is kept process-wide.
//
//  - llm, hybrid: an OpenAiChatClient (or, with overrides.replay_from, the replies recorded in an
//    earlier run) behind LlmEngine (agents/engines/llm_engine.h);
//  - every other name: the built-in engines (CreateStrategyEngine).
#ifndef PARATUNE_AGENTS_ENGINES_ENGINE_FACTORY_H_
#define PARATUNE_AGENTS_ENGINES_ENGINE_FACTORY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "agents/core/campaign.h"
#include "agents/engines/llm_engine.h"
#include "agents/engines/strategy_engine.h"
#include "agents/llm/endpoint_policy.h"
#include "agents/trials/message_pool.h"
#include "base/status.h"
#include "base/time_source.h"

namespace paratune {

class KnowledgeBase;

// Makes the strategy engine spec.agents.engine names for a campaign; `pool` (may be null)
// receives the LLM exchanges. Errors: an unknown engine, a missing endpoint or model, a refused
// endpoint or key (kInvalidArgument naming the field); others from the key lookup.
using EngineFactory = std::function<Result<std::unique_ptr<StrategyEngine>>(
    const CampaignSpec& spec, MessagePool* pool)>;

// One of the built-in engines. kInvalidArgument listing the known names when `name` is unknown,
// and for llm and hybrid (MakeEngineFactory builds those). Thread-safe.
Result<std::unique_ptr<StrategyEngine>> CreateStrategyEngine(const std::string& name,
                                                             const EngineOptions& options);
// Every engine name MakeEngineFactory knows, sorted.
std::vector<std::string> StrategyEngineNames();

struct EngineFactoryOptions {
  uint64_t seed = 1;
  // The command line's --llm-* overrides, the replay file, the key to fall back on (the CLI's
  // $OPENAI_API_KEY) and the site's knowledge folder.
  LlmCliOverrides overrides;
  // The key for a campaign's requests (the operator reads the campaign's Secret); null, or ""
  // returned: overrides.api_key.
  std::function<Result<std::string>(const CampaignSpec&)> api_key;
  // Endpoints a campaign may reach (the operator's allowlist); none: any.
  std::optional<llm::EndpointPolicy> endpoints;
  // The knowledge the prompts retrieve from; null: the embedded documents plus those of
  // overrides.knowledge_dir (the embedded alone when a site document is malformed).
  std::function<std::shared_ptr<const KnowledgeBase>(const CampaignSpec&)> knowledge;
  // Bounds on the chat client (none: its defaults); error bodies echoed into messages or not.
  std::optional<size_t> max_response_bytes;
  bool include_error_body = true;
  // The LLM client's retries and timing; borrowed; null: the process clock.
  TimeSource* clock = nullptr;
};

// The factory for `options` (copied into it). Thread-safe as far as the callbacks are.
EngineFactory MakeEngineFactory(EngineFactoryOptions options);

// `spec` with spec.agents.engine set to `name` (the CLI's --strategy): what to hand a factory
// when the command line picks the engine.
CampaignSpec WithEngine(const CampaignSpec& spec, const std::string& name);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_ENGINES_ENGINE_FACTORY_H_
