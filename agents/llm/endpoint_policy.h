// Where an LLM request may go, as pure functions (agents/llm; no I/O, thread-safe). The
// operator sends prompts, and sometimes an API key, to the endpoint a campaign names, so the
// administrator bounds that set: an allowlist of URL prefixes, and an API key never over plain
// HTTP except to the loopback interface (docs/security.md).
#ifndef PARATUNE_AGENTS_LLM_ENDPOINT_POLICY_H_
#define PARATUNE_AGENTS_LLM_ENDPOINT_POLICY_H_

#include <string>
#include <vector>

#include "base/status.h"

namespace paratune::llm {

struct EndpointPolicy {
  // URL prefixes a campaign's endpoint must start with. Empty: only `operator_endpoint`.
  std::vector<std::string> allowed_prefixes;
  // The operator-wide endpoint (Helm llm.endpoint); always allowed; "" when none.
  std::string operator_endpoint;
};

// True when `endpoint` starts with `prefix` at a URL boundary: the prefix ends with '/', or
// the endpoint continues with '/', ':' (a port, when the prefix names none) or ends there. So
// "https://llm.corp" admits "https://llm.corp/v1" but not "https://llm.corp.evil.io/v1". An
// endpoint with userinfo ('@' before the path) never matches: the host would be elsewhere.
bool EndpointMatchesPrefix(const std::string& endpoint, const std::string& prefix);

// OK, or kInvalidArgument naming spec.agents.llm.endpoint when the endpoint is not allowed.
Status CheckEndpointAllowed(const std::string& endpoint, const EndpointPolicy& policy);

// Two endpoints that name the same URL (trailing '/' and a "/chat/completions" suffix aside).
bool SameEndpoint(const std::string& a, const std::string& b);

// True for http(s) URLs whose host is localhost, ::1 or in 127.0.0.0/8.
bool IsLoopbackUrl(const std::string& url);

// OK unless a key would travel in clear: kInvalidArgument naming spec.agents.llm.endpoint for
// an http:// endpoint that is not loopback when `has_key`.
Status CheckKeyTransport(const std::string& endpoint, bool has_key);

}  // namespace paratune::llm

#endif  // PARATUNE_AGENTS_LLM_ENDPOINT_POLICY_H_
