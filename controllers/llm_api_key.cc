#include "controllers/llm_api_key.h"

#include <cctype>
#include <string>

namespace paratune::controllers {

Result<std::string> DecodeBase64(const std::string& text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t bits = 0;
  int nbits = 0;
  bool padding = false;
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) continue;
    if (c == '=') {
      padding = true;
      continue;
    }
    int v = value(c);
    if (v < 0 || padding) return Status::Invalid("not base64");
    bits = (bits << 6) | static_cast<uint32_t>(v);
    nbits += 6;
    if (nbits >= 8) {
      nbits -= 8;
      out.push_back(static_cast<char>((bits >> nbits) & 0xFF));
    }
  }
  return out;
}

Result<std::string> ReadLlmApiKey(kube::KubeClient* client, const CampaignSpec& spec) {
  const SecretKeyRef& ref = spec.agents.llm_api_key;
  if (ref.name.empty()) return std::string();
  const std::string key = ref.key.empty() ? "apiKey" : ref.key;
  const std::string where =
      "spec.agents.llm.apiKeySecretRef: Secret " + spec.namespace_ + "/" + ref.name + " key " + key;
  // By label and name: an unlabelled Secret is never sent to the operator at all.
  kube::ListOptions opts;
  opts.label_selector = std::string(kLlmApiKeyLabel) + "=true";
  opts.field_selector = "metadata.name=" + ref.name;
  auto list = client->List(kube::resources::kSecrets, spec.namespace_, opts);
  if (!list.ok()) return list.status().WithPrefix(where);
  if (list->items.empty()) {
    return Status::Invalid(where + ": no such Secret carries the label " + kLlmApiKeyLabel +
                           "=\"true\" (someone who may write Secrets in the namespace sets it)");
  }
  const auto& data = list->items.front()["data"];
  if (!data.is_object() || !data.contains(key) || !data[key].is_string()) {
    return Status::Invalid(where + ": no such key in the Secret");
  }
  auto decoded = DecodeBase64(data[key].get<std::string>());
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
