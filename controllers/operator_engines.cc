#include "controllers/operator_engines.h"

#include <memory>

#include "agents/knowledge/knowledge_base.h"

namespace paratune::controllers {

EngineFactory MakeOperatorEngineFactory(kube::KubeClient* client, TimeSource* clock,
                                        LlmAccessOptions llm, const CampaignKnowledge* knowledge,
                                        uint64_t seed) {
  EngineFactoryOptions o;
  o.seed = seed;
  o.endpoints = llm.endpoints;
  o.max_response_bytes = llm.max_response_bytes;
  o.include_error_body = false;  // status codes only reach Events and the pool
  o.clock = clock;
  o.api_key = [client, llm](const CampaignSpec& spec) {
    return ResolveLlmApiKey(client, spec, llm);
  };
  // The site's documents and the campaign's knowledge ConfigMaps (read again only when one of
  // them changed); the site's alone when they cannot be read now.
  o.knowledge = [knowledge](const CampaignSpec& spec) -> std::shared_ptr<const KnowledgeBase> {
    auto campaign_knowledge = knowledge->For(spec.namespace_, spec);
    return campaign_knowledge.ok() ? campaign_knowledge->knowledge : knowledge->Site().knowledge;
  };
  return MakeEngineFactory(std::move(o));
}

}  // namespace paratune::controllers
