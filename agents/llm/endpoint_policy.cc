#include "agents/llm/endpoint_policy.h"

#include <sstream>

namespace paratune::llm {

namespace {

std::string Authority(const std::string& url) {
  const size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  const size_t start = scheme + 3;
  const size_t end = url.find_first_of("/?#", start);
  return url.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::string Normalized(std::string e) {
  while (!e.empty() && e.back() == '/') e.pop_back();
  const std::string suffix = "/chat/completions";
  if (e.size() >= suffix.size() &&
      e.compare(e.size() - suffix.size(), suffix.size(), suffix) == 0) {
    e.resize(e.size() - suffix.size());
  }
  while (!e.empty() && e.back() == '/') e.pop_back();
  return e;
}

}  // namespace

bool EndpointMatchesPrefix(const std::string& endpoint, const std::string& prefix) {
  if (prefix.empty() || endpoint.compare(0, prefix.size(), prefix) != 0) return false;
  if (Authority(endpoint).find('@') != std::string::npos) return false;
  if (prefix.back() == '/' || endpoint.size() == prefix.size()) return true;
  const char next = endpoint[prefix.size()];
  if (next == '/') return true;
  // A port after a prefix that ends at the host: "https://llm.corp" admits ":8443".
  return next == ':' && Authority(prefix) == prefix.substr(prefix.find("://") + 3) &&
         Authority(prefix).find(':') == std::string::npos;
}

bool SameEndpoint(const std::string& a, const std::string& b) {
  return !a.empty() && Normalized(a) == Normalized(b);
}

Status CheckEndpointAllowed(const std::string& endpoint, const EndpointPolicy& policy) {
  if (SameEndpoint(endpoint, policy.operator_endpoint)) return Status::Ok();
  for (const auto& prefix : policy.allowed_prefixes) {
    if (EndpointMatchesPrefix(endpoint, prefix)) return Status::Ok();
  }
  std::string allowed;
  for (const auto& p : policy.allowed_prefixes) allowed += (allowed.empty() ? "" : ", ") + p;
  if (allowed.empty()) {
    allowed = policy.operator_endpoint.empty()
                  ? "none: the operator has no llm.endpoint and no llm.allowedEndpoints"
                  : "only the operator-wide endpoint " + policy.operator_endpoint;
  }
  return Status::Invalid("spec.agents.llm.endpoint: \"" + endpoint +
                         "\" is not an allowed LLM endpoint (allowed: " + allowed +
                         "; an administrator sets llm.allowedEndpoints)");
}

bool IsLoopbackUrl(const std::string& url) {
  std::string host = Authority(url);
  if (host.find('@') != std::string::npos) return false;
  if (!host.empty() && host.front() == '[') {
    return host.rfind("[::1]", 0) == 0;
  }
  host = host.substr(0, host.find(':'));
  if (host == "localhost") return true;
  if (host.rfind("127.", 0) != 0) return false;
  int dots = 0;
  for (char c : host) {
    if (c == '.')
      ++dots;
    else if (c < '0' || c > '9')
      return false;
  }
  return dots == 3;
}

Status CheckKeyTransport(const std::string& endpoint, bool has_key) {
  if (!has_key || endpoint.rfind("http://", 0) != 0 || IsLoopbackUrl(endpoint)) {
    return Status::Ok();
  }
  return Status::Invalid(
      "spec.agents.llm.endpoint: an API key is sent only over https:// (or "
      "to a loopback address), not to \"" +
      endpoint + "\"");
}

}  // namespace paratune::llm
