// The operator's side of LLM access (contract section 12): which endpoint a campaign may reach,
// which API key goes with it, and reading a campaign's key Secret. Rules:
//  - spec.agents.llm.endpoint must be the operator-wide endpoint or start with one of the
//    administrator's allowed prefixes (--llm-allowed-endpoints);
//  - a Secret named by spec.agents.llm.apiKeySecretRef is used only when it carries the label
//    tuning.paratune.dev/llm-api-key: "true" (set by someone who may write Secrets there). It
//    is read with one `get` by name, which RBAC allows only in namespaces whose administrator
//    bound a Role granting it (no list, no watch, no cache of Secrets: docs/security.md);
//  - the operator-wide key goes only to the operator-wide endpoint;
//  - no key over plain http except to loopback.
#ifndef PARATUNE_CONTROLLERS_LLM_API_KEY_H_
#define PARATUNE_CONTROLLERS_LLM_API_KEY_H_

#include <string>

#include "agents/core/campaign.h"
#include "agents/llm/endpoint_policy.h"
#include "base/status.h"
#include "operator/kube_client.h"

namespace paratune::controllers {

inline constexpr const char* kLlmApiKeyLabel = "tuning.paratune.dev/llm-api-key";

struct LlmAccessOptions {
  llm::EndpointPolicy endpoints;  // the allowlist and the operator-wide endpoint
  std::string operator_api_key;   // never logged; sent only to endpoints.operator_endpoint
  size_t max_response_bytes = 1 << 20;
};

// The key `spec` names: "" when it names no Secret; kInvalidArgument naming
// spec.agents.llm.apiKeySecretRef when the Secret does not exist, the operator may not `get`
// it (HTTP 403: the namespace granted nothing), it lacks the opt-in label, the key is missing
// in it, or the value is not base64. Other errors are transient. Errors never hold the value.
// `client` is not owned; thread-safe as far as the client is.
Result<std::string> ReadLlmApiKey(kube::KubeClient* client, const CampaignSpec& spec);

// The key the operator sends with this campaign's requests: the campaign's Secret when it names
// one, else the operator-wide key when the endpoint is the operator-wide one, else "".
Result<std::string> ResolveLlmApiKey(kube::KubeClient* client, const CampaignSpec& spec,
                                     const LlmAccessOptions& opts);

// Admission for campaigns with engine llm|hybrid (OK for builtin): the endpoint is allowed, the
// Secret (if named) is labelled and the key would not travel in clear. kInvalidArgument naming
// the field; other codes are transient (the API server), to retry.
Status CheckLlmAccess(kube::KubeClient* client, const CampaignSpec& spec,
                      const LlmAccessOptions& opts);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_LLM_API_KEY_H_
