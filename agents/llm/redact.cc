#include "agents/llm/redact.h"

#include <regex>

namespace paratune::llm {
namespace {

struct Rule {
  std::regex pattern;
  std::string replacement;
};

// Order matters: key=value forms first so the key name survives, then token shapes, then IPs.
const std::vector<Rule>& Rules() {
  static const auto* rules = new std::vector<Rule>{
      {std::regex(R"((authorization\s*[:=]\s*)(bearer|basic|token)?\s*[^\s,;'"]+)",
                  std::regex::icase),
       "$1[REDACTED]"},
      {std::regex(R"(\bbearer\s+[A-Za-z0-9._~+/=-]{6,})", std::regex::icase), "Bearer [REDACTED]"},
      {std::regex(R"(((?:api[_-]?key|apikey|access[_-]?key|secret[_-]?key|secret|token|password|)"
                  R"(passwd|pwd|credentials?|private[_-]?key)["']?\s*[:=]\s*["']?)[^\s,;'"&]+)",
                  std::regex::icase),
       "$1[REDACTED]"},
      {std::regex(R"(\b(?:sk|pk|rk)-[A-Za-z0-9_-]{12,})"), "[REDACTED]"},
      {std::regex(R"(\b(?:hf|ghp|gho|ghs|ghu|glpat|xox[abprs])[_-][A-Za-z0-9_-]{12,})"),
       "[REDACTED]"},
      {std::regex(R"(\b(?:AKIA|ASIA)[0-9A-Z]{16}\b)"), "[REDACTED]"},
      {std::regex(R"(\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"), "[REDACTED]"},
      {std::regex(R"(-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----)"),
       "[REDACTED]"},
      // Long opaque tokens (32+ characters mixing letters and digits): hashes and keys alike;
      // paths and identifiers survive because '/' and '.' end a token.
      {std::regex(R"(\b(?=[A-Za-z_-]*\d)(?=[0-9_-]*[A-Za-z])[A-Za-z0-9_-]{32,}={0,2})"),
       "[REDACTED]"},
      {std::regex(R"(\b(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}\b)"),
       "[IP]"},
      // IPv6: the full eight-group form, or a compressed form containing "::" and at least one
      // group (so "12:34:56" timestamps and C++ "std::" survive).
      {std::regex(R"(\b(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}\b)"), "[IP]"},
      {std::regex(R"(\b[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6}::)"
                  R"((?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6}\b)?)"),
       "[IP]"},
      {std::regex(R"((^|[^\w:])::[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6}\b)"), "$1[IP]"},
  };
  return *rules;
}

void ReplaceAll(std::string& s, const std::string& what, const std::string& with) {
  if (what.empty()) return;
  for (size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + with.size())) {
    s.replace(pos, what.size(), with);
  }
}

}  // namespace

std::string Redact(std::string_view text, const std::vector<std::string>& known_secrets) {
  std::string out(text);
  for (const auto& secret : known_secrets) ReplaceAll(out, secret, kRedactedSecret);
  for (const auto& rule : Rules()) {
    out = std::regex_replace(out, rule.pattern, rule.replacement);
  }
  return out;
}

std::string RedactLogTail(std::string_view log, size_t max_chars,
                          const std::vector<std::string>& known_secrets) {
  if (log.size() > max_chars) {
    size_t start = log.size() - max_chars;
    size_t nl = log.find('\n', start);
    // Start at a line boundary unless that would leave nothing.
    log = nl == std::string_view::npos || nl + 1 >= log.size() ? log.substr(start)
                                                               : log.substr(nl + 1);
  }
  return Redact(log, known_secrets);
}

}  // namespace paratune::llm
