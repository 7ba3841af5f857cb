// Reads the LLM API key a campaign names in spec.agents.llm.apiKeySecretRef from its Secret, so
// the LLM engine never needs the key in the campaign, the pool, status or logs.
#ifndef PARATUNE_CONTROLLERS_LLM_API_KEY_H_
#define PARATUNE_CONTROLLERS_LLM_API_KEY_H_

#include <string>

#include "agents/core/campaign.h"
#include "agents/core/status.h"
#include "operator/kube_client.h"

namespace paratune::controllers {

// The key for `spec`: "" when the campaign names no Secret (the engine then falls back to
// OPENAI_API_KEY); kNotFound when the Secret or its key is missing; kInvalidArgument when the
// value is not base64. Errors name the Secret and key, never the value. `client` is not owned
// and must outlive every call; thread-safe as far as the client is.
Result<std::string> ReadLlmApiKey(kube::KubeClient* client, const CampaignSpec& spec);

// Standard base64 (RFC 4648, padding optional, whitespace ignored); kInvalidArgument otherwise.
Result<std::string> DecodeBase64(const std::string& text);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_LLM_API_KEY_H_
