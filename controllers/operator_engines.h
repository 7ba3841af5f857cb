// The strategy engines the operator runs (contract section 12): the one engine factory
// (agents/engines/engine_factory.h, which the CLI uses too) with the LLM access rules of
// controllers/llm_api_key.h (allowed endpoint, key routing, bounded replies whose error bodies
// are never echoed) and the campaign's knowledge.
#ifndef PARATUNE_CONTROLLERS_OPERATOR_ENGINES_H_
#define PARATUNE_CONTROLLERS_OPERATOR_ENGINES_H_

#include <cstdint>

#include "agents/engines/engine_factory.h"
#include "base/time_source.h"
#include "controllers/campaign_knowledge.h"
#include "controllers/llm_api_key.h"
#include "operator/kube_client.h"

namespace paratune::controllers {

// The factory the campaign reconciler calls once per reconcile. `client`, `clock` (the LLM
// client's retries and timing) and `knowledge` (the prompts' retrieval: the site's documents and
// those of the campaign's knowledge ConfigMaps) are borrowed and must outlive the factory.
// Errors: those of CheckLlmAccess (kInvalidArgument naming the field) and of the chat client.
// Thread-safe.
EngineFactory MakeOperatorEngineFactory(kube::KubeClient* client, TimeSource* clock,
                                        LlmAccessOptions llm, const CampaignKnowledge* knowledge,
                                        uint64_t seed);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_OPERATOR_ENGINES_H_
