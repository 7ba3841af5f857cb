#include "controllers/operator_engines.h"

#include <memory>

#include "agents/engines/llm_engine.h"
#include "agents/knowledge/knowledge_base.h"
#include "agents/llm/openai_client.h"

namespace paratune::controllers {

namespace {

Result<std::unique_ptr<StrategyEngine>> MakeLlmEngine(kube::KubeClient* client, TimeSource* clock,
                                                      const LlmAccessOptions& llm,
                                                      const CampaignKnowledge* knowledge,
                                                      uint64_t seed, const CampaignSpec& spec,
                                                      MessagePool* pool) {
  PARATUNE_RETURN_IF_ERROR(llm::CheckEndpointAllowed(spec.agents.llm_endpoint, llm.endpoints));
  auto key = ResolveLlmApiKey(client, spec, llm);
  if (!key.ok()) return key.status();
  auto cfg = LlmEngineConfigFor(spec, {}, *key, nullptr);
  if (!cfg.ok()) return cfg.status();
  llm::ChatClientOptions co = cfg->ChatOptions();
  co.max_response_bytes = llm.max_response_bytes;
  co.include_error_body = false;  // status codes only reach Events and the pool
  co.clock = clock;
  auto chat = llm::OpenAiChatClient::Create(co);
  if (!chat.ok()) return chat.status();
  LlmEngineDeps deps;
  deps.client = std::move(*chat);
  deps.budget = cfg->budget;
  deps.pool = pool;
  deps.seed = seed;
  if (!cfg->api_key.empty()) deps.secrets.push_back(cfg->api_key);
  // The site's documents and the campaign's knowledge ConfigMaps (read again only when one of
  // them changed); the site's alone when they cannot be read now.
  auto campaign_knowledge = knowledge->For(spec.namespace_, spec);
  deps.knowledge =
      campaign_knowledge.ok() ? campaign_knowledge->knowledge : knowledge->Site().knowledge;
  const LlmEngineMode mode =
      spec.agents.engine == "llm" ? LlmEngineMode::kLlm : LlmEngineMode::kHybrid;
  return std::unique_ptr<StrategyEngine>(new LlmEngine(mode, std::move(deps)));
}

}  // namespace

EngineFactory MakeOperatorEngineFactory(kube::KubeClient* client, TimeSource* clock,
                                        LlmAccessOptions llm, const CampaignKnowledge* knowledge,
                                        uint64_t seed) {
  return
      [client, clock, llm = std::move(llm), knowledge, seed](
          const CampaignSpec& spec, MessagePool* pool) -> Result<std::unique_ptr<StrategyEngine>> {
        if (spec.agents.engine == "llm" || spec.agents.engine == "hybrid") {
          return MakeLlmEngine(client, clock, llm, knowledge, seed, spec, pool);
        }
        EngineOptions o;
        o.spec = &spec;
        o.seed = seed;
        o.pool = pool;
        return CreateStrategyEngine(spec.agents.engine, o);
      };
}

}  // namespace paratune::controllers
