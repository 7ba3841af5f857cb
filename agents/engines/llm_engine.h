// The LLM and hybrid strategy engines: an OpenAI-compatible model plays the Analyst and the
// Strategist (the Proposer when several trials are wanted) behind hard guardrails, and the
// Diagnostician for failures the built-in one cannot explain.
//
//  - llm:    the model's candidates are used when they pass every guardrail.
//  - hybrid: the model proposes, the built-in engine ranks them with the calibrated model and
//            vetoes any predicted to fall more than `veto_margin` short of its own best.
//
// Guardrails, whatever the model says: a candidate naming a parameter outside the search space,
// a value outside it, a duplicate, a known failure or anything the Validator rejects is
// recorded in the pool as a rejected candidate with the reason and never runs; nothing the
// model writes is executed; logs and pool text are redacted before they reach the model; the
// API key never leaves the HTTP header. On timeout, error, exhausted budget, garbage or
// rejection of every candidate, the built-in engine takes the iteration and the exchange is
// recorded with fallback = true. Every exchange (role, prompt, reply, parse result, latency,
// tokens) goes into the message pool.
//
// Built by MakeEngineFactory (agents/engines/engine_factory.h) for the operator and the CLI alike.
// Not thread-safe (one session drives one engine).
#ifndef PARATUNE_AGENTS_ENGINES_LLM_ENGINE_H_
#define PARATUNE_AGENTS_ENGINES_LLM_ENGINE_H_

#include <chrono>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "agents/engines/strategy_engine.h"
#include "agents/llm/budgeted_client.h"
#include "agents/llm/chat_client.h"
#include "agents/llm/llm_agents.h"
#include "agents/llm/openai_client.h"
#include "agents/llm/replay_client.h"
#include "agents/trials/failure_analyzer.h"

namespace paratune {

class KnowledgeBase;

// Where and how to reach the model.
struct LlmEngineConfig {
  std::string endpoint;
  std::string model;
  std::string api_key;  // never logged
  std::chrono::milliseconds timeout{60000};
  int max_retries = 3;
  llm::LlmBudget budget;
  // The chat client's options for this configuration (endpoint, model, key, timeout, retries);
  // callers add their own bounds.
  llm::ChatClientOptions ChatOptions() const;
};

// Overrides from the command line (`--llm-endpoint`, `--llm-model`, `--llm-timeout`); empty
// fields keep the campaign's spec.agents.llm values.
struct LlmCliOverrides {
  std::string endpoint;
  std::string model;
  std::chrono::milliseconds timeout{0};  // 0: default
  // `--llm-replay FILE`: answer from the exchanges recorded in a simulate JSON (or a pool JSON)
  // instead of calling a model; endpoint and model are then not needed.
  std::string replay_from;
  // The key used when the campaign names no Secret (the CLI passes $OPENAI_API_KEY).
  std::string api_key;
  // The site's knowledge documents for the prompts, beside the embedded ones ("" : none).
  std::string knowledge_dir;
};

// The replies recorded in a simulate JSON ({"pool": {"llmExchanges": [...]}}) or a pool JSON
// ({"llmExchanges": [...]}), in order. kInvalidArgument naming `field` when there are none.
Result<std::vector<llm::RecordedReply>> RecordedReplies(const nlohmann::json& j,
                                                        const std::string& field);

// The config for a campaign: spec.agents.llm plus overrides; the key from `api_key` (the
// campaign's Secret, resolved by the operator) or else `env_api_key` (OPENAI_API_KEY). Fails
// with kInvalidArgument naming spec.agents.llm.endpoint / .model when they are missing.
Result<LlmEngineConfig> LlmEngineConfigFor(const CampaignSpec& spec, const LlmCliOverrides& cli,
                                           const std::string& api_key, const char* env_api_key);

enum class LlmEngineMode { kLlm, kHybrid };

struct LlmEngineDeps {
  std::unique_ptr<llm::ChatClient> client;  // usually an OpenAiChatClient; budget added here
  llm::LlmBudget budget;
  MessagePool* pool = nullptr;                     // exchanges and rejections; may be null
  std::shared_ptr<const KnowledgeBase> knowledge;  // retrieval for the prompts; may be null
  std::vector<std::string> secrets;                // scrubbed from everything sent or recorded
  double veto_margin = 0.10;  // hybrid: relative shortfall the ranker tolerates
  uint64_t seed = 1;
};

class LlmEngine : public StrategyEngine {
 public:
  LlmEngine(LlmEngineMode mode, LlmEngineDeps deps);
  std::string name() const override { return mode_ == LlmEngineMode::kLlm ? "llm" : "hybrid"; }
  // Never fails for a model problem: the built-in engine takes over and the reason is recorded.
  Result<EngineProposal> Propose(const EngineContext& ctx) override;

  llm::LlmUsage usage() const { return client_->usage(); }
  // Exchanges recorded so far (also in the pool when one was given).
  const std::vector<LlmExchange>& exchanges() const { return exchanges_; }
  int64_t fallbacks() const { return fallbacks_; }

 private:
  struct Round;
  llm::PromptContext MakePromptContext(const EngineContext& ctx) const;
  void Record(const EngineContext& ctx, const llm::RoleExchange& ex, bool fallback,
              const std::string& note);
  // Asks the model about failed trials it has not seen yet; adopts its diagnosis when the
  // built-in one is unsure (Unknown, or less confident) and the model names a known category.
  void DiagnoseNewFailures(const EngineContext& ctx);
  // The reason `c` may not run ("" when it may). `seen` holds this round's accepted keys.
  std::string GuardrailVerdict(const EngineContext& ctx, Config& c,
                               const std::vector<std::string>& seen) const;
  Result<EngineProposal> Fallback(const EngineContext& ctx, const std::string& why);

  LlmEngineMode mode_;
  std::unique_ptr<llm::BudgetedChatClient> client_;
  llm::LlmAgents agents_;
  MessagePool* pool_;
  std::shared_ptr<const KnowledgeBase> knowledge_;
  std::vector<std::string> secrets_;
  double veto_margin_;
  uint64_t seed_;
  std::vector<LlmExchange> exchanges_;
  std::set<std::string> diagnosed_;  // trial names already shown to the diagnostician
  int64_t fallbacks_ = 0;
};

}  // namespace paratune

#endif  // PARATUNE_AGENTS_ENGINES_LLM_ENGINE_H_
