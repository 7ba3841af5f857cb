#include "controllers/llm_api_key.h"

#include <cctype>
#include <string>

#include "base/base64.h"

namespace paratune::controllers {

Result<std::string> ReadLlmApiKey(kube::KubeClient* client, const CampaignSpec& spec) {
  const SecretKeyRef& ref = spec.agents.llm_api_key;
  if (ref.name.empty()) return std::string();
  const std::string key = ref.key.empty() ? "apiKey" : ref.key;
  const std::string where =
      "spec.agents.llm.apiKeySecretRef: Secret " + spec.namespace_ + "/" + ref.name + " key " + key;
  // One `get` of the named Secret, with the rights a namespace administrator granted (a Role
  // bound in that namespace, docs/security.md): the operator holds no cluster-wide right on
  // Secrets and keeps no cache of them. The label is checked before anything else is read.
  auto secret = client->Get(kube::resources::kSecrets, spec.namespace_, ref.name);
  if (!secret.ok()) {
    const StatusCode code = secret.status().code();
    if (code == StatusCode::kPermissionDenied) {
      return Status::Invalid(where + ": the operator may not read it; an administrator of " +
                             "namespace " + spec.namespace_ + " grants `get` on it with a Role " +
                             "bound to the operator's ServiceAccount (docs/security.md, " +
                             "manifests/examples/llm-api-key-reader.yaml)");
    }
    if (code == StatusCode::kNotFound) return Status::Invalid(where + ": no such Secret");
    return secret.status().WithPrefix(where);
  }
  const kube::Json& labels =
      secret->value("metadata", kube::Json::object()).value("labels", kube::Json::object());
  if (!labels.is_object() || labels.value(kLlmApiKeyLabel, "") != "true") {
    return Status::Invalid(where + ": the Secret does not carry the label " + kLlmApiKeyLabel +
                           "=\"true\" (someone who may write Secrets in the namespace sets it)");
  }
  const kube::Json& data = (*secret)["data"];
  if (!data.is_object() || !data.contains(key) || !data[key].is_string()) {
    return Status::Invalid(where + ": no such key in the Secret");
  }
  auto decoded = Base64Decode(data[key].get<std::string>());
  if (!decoded.ok()) return Status::Invalid(where + ": " + decoded.status().message());
  while (!decoded->empty() && (decoded->back() == '\n' || decoded->back() == '\r')) {
    decoded->pop_back();  // `kubectl create secret --from-file` keeps the file's newline
  }
  return decoded;
}

Result<std::string> ResolveLlmApiKey(kube::KubeClient* client, const CampaignSpec& spec,
                                     const LlmAccessOptions& opts) {
  if (!spec.agents.llm_api_key.name.empty()) return ReadLlmApiKey(client, spec);
  if (llm::SameEndpoint(spec.agents.llm_endpoint, opts.endpoints.operator_endpoint)) {
    return opts.operator_api_key;
  }
  return std::string();
}

Status CheckLlmAccess(kube::KubeClient* client, const CampaignSpec& spec,
                      const LlmAccessOptions& opts) {
  if (spec.agents.engine != "llm" && spec.agents.engine != "hybrid") return Status::Ok();
  PARATUNE_RETURN_IF_ERROR(llm::CheckEndpointAllowed(spec.agents.llm_endpoint, opts.endpoints));
  auto key = ResolveLlmApiKey(client, spec, opts);
  if (!key.ok()) return key.status();
  return llm::CheckKeyTransport(spec.agents.llm_endpoint, !key->empty());
}

}  // namespace paratune::controllers
