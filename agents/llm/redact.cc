#include "agents/llm/redact.h"

#include <algorithm>
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

// libstdc++'s std::regex recurses once per character a match attempt covers, so a long line
// (a printed tensor, a base64 blob) would overflow the stack. Lines are redacted in pieces of
// at most this many bytes, cut at whitespace where there is some (a token never spans a cut).
constexpr size_t kMaxRegexBytes = 2048;

// PEM private keys span lines, so they are found by plain search before the per-line rules:
// "-----BEGIN [A-Z ]*PRIVATE KEY-----" through the next "PRIVATE KEY-----" footer, or through
// the end of the text when the footer was cut off (a log tail).
void RedactPrivateKeys(std::string& s) {
  static constexpr std::string_view kBegin = "-----BEGIN ";
  static constexpr std::string_view kKey = "PRIVATE KEY-----";
  size_t pos = 0;
  for (size_t b = s.find(kBegin, pos); b != std::string::npos; b = s.find(kBegin, pos)) {
    // The label, [A-Z ]*, must end in "PRIVATE KEY" and be followed by "-----".
    const size_t label = b + kBegin.size();
    size_t k = label;
    while (k < s.size() && ((s[k] >= 'A' && s[k] <= 'Z') || s[k] == ' ')) ++k;
    const size_t key_at = k - std::min(k - label, kKey.size() - 5);  // where "PRIVATE KEY" is
    if (s.compare(key_at, kKey.size(), kKey) != 0) {
      pos = label;
      continue;
    }
    const size_t body = key_at + kKey.size();
    const size_t footer = s.find(kKey, body);
    const size_t stop = footer == std::string::npos ? s.size() : footer + kKey.size();
    s.replace(b, stop - b, kRedactedSecret);
    pos = b + std::string_view(kRedactedSecret).size();
  }
}

// Applies the regex rules to one line, in pieces of at most kMaxRegexBytes.
void RedactLine(std::string_view line, std::string* out) {
  while (!line.empty()) {
    size_t n = line.size();
    if (n > kMaxRegexBytes) {
      n = kMaxRegexBytes;
      const size_t ws = line.substr(0, n).find_last_of(" \t\r");
      if (ws != std::string_view::npos && ws > 0) n = ws;
    }
    std::string piece(line.substr(0, n));
    for (const auto& rule : Rules()) {
      piece = std::regex_replace(piece, rule.pattern, rule.replacement);
    }
    out->append(piece);
    line.remove_prefix(n);
  }
}

void ReplaceAll(std::string& s, const std::string& what, const std::string& with) {
  if (what.empty()) return;
  for (size_t pos = s.find(what); pos != std::string::npos; pos = s.find(what, pos + with.size())) {
    s.replace(pos, what.size(), with);
  }
}

}  // namespace

std::string Redact(std::string_view text, const std::vector<std::string>& known_secrets) {
  std::string in(text);
  for (const auto& secret : known_secrets) ReplaceAll(in, secret, kRedactedSecret);
  RedactPrivateKeys(in);
  std::string out;
  out.reserve(in.size());
  std::string_view rest(in);
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    RedactLine(rest.substr(0, nl), &out);
    if (nl == std::string_view::npos) break;
    out += '\n';
    rest.remove_prefix(nl + 1);
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
