// Redaction of what must never reach a model or a log: API keys, bearer tokens, passwords,
// cloud credentials, JWTs, long opaque tokens and IP addresses (v4 and v6). Applied to every
// log excerpt before it is put into a prompt, and to every error message that might echo a
// request. Pure functions; thread-safe.
#ifndef PARATUNE_AGENTS_LLM_REDACT_H_
#define PARATUNE_AGENTS_LLM_REDACT_H_

#include <string>
#include <string_view>
#include <vector>

namespace paratune::llm {

inline constexpr char kRedactedSecret[] = "[REDACTED]";
inline constexpr char kRedactedIp[] = "[IP]";

// Returns `text` with secrets replaced by "[REDACTED]" and IP addresses by "[IP]". Every
// occurrence of a string in `known_secrets` (e.g. the configured API key; empty ones ignored)
// is replaced too, whatever it looks like.
std::string Redact(std::string_view text, const std::vector<std::string>& known_secrets = {});

// Keeps at most the last `max_chars` characters of a log, cut at a line start, then redacts.
// What a diagnostician prompt sees of a failing trial's log.
std::string RedactLogTail(std::string_view log, size_t max_chars,
                          const std::vector<std::string>& known_secrets = {});

}  // namespace paratune::llm

#endif  // PARATUNE_AGENTS_LLM_REDACT_H_
