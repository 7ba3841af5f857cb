#include "agents/knowledge/signatures.h"

#include <algorithm>
#include <cctype>
#include <functional>

#include "agents/core/campaign.h"
#include "agents/core/failure_category.h"
#include "agents/core/results.h"
#include "base/json_fields.h"
#include "base/strings.h"
#include "base/yaml.h"

namespace paratune {

namespace {

Status ParseTier(const JsonFields& f, SignatureTier* tier) {
  std::string t = "root";
  PARATUNE_RETURN_IF_ERROR(f.ReadEnum("tier", {"root", "secondary", "symptom"}, &t));
  *tier = t == "root" ? SignatureTier::kRoot
                      : (t == "secondary" ? SignatureTier::kSecondary : SignatureTier::kSymptom);
  return Status::Ok();
}

Status ParseCaptures(const JsonFields& f, FailureSignature* sig) {
  const nlohmann::json& c = f.Get("captures");
  if (c.is_null()) return Status::Ok();
  if (!c.is_object()) return Status::Invalid(f.Path("captures") + ": must be a map name: group");
  for (const auto& [name, group] : c.items()) {
    if (!group.is_number_integer() || group.get<int>() < 0) {
      return Status::Invalid(f.Path("captures") + "." + name + ": must be a group number >= 0");
    }
    sig->captures[name] = group.get<int>();
  }
  return Status::Ok();
}

// The longest literal run at nesting depth 0 of an ECMAScript pattern: text every match must
// contain. "" when the pattern alternates at top level or has no run of 3+ characters.
std::string RequiredLiteral(const std::string& re) {
  std::string best, run;
  int depth = 0;
  auto flush = [&] {
    if (run.size() > best.size()) best = run;
    run.clear();
  };
  for (size_t i = 0; i < re.size(); ++i) {
    char c = re[i];
    if (c == '\\') {
      flush();
      ++i;
      continue;
    }
    if (c == '[') {  // a character class: skip to its closing bracket
      flush();
      size_t j = i + 1;
      if (j < re.size() && re[j] == '^') ++j;
      if (j < re.size() && re[j] == ']') ++j;
      while (j < re.size() && re[j] != ']') j += re[j] == '\\' ? 2 : 1;
      i = j;
      continue;
    }
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == '|' && depth == 0) return "";
    bool literal = depth == 0 && (std::isalnum(static_cast<unsigned char>(c)) || c == ' ' ||
                                  c == '_' || c == ':' || c == '-' || c == '/' || c == '=');
    bool optional = i + 1 < re.size() && (re[i + 1] == '?' || re[i + 1] == '*' || re[i + 1] == '{');
    if (literal && !optional) {
      run.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    } else {
      flush();
    }
  }
  flush();
  return best.size() >= 3 ? best : "";
}

Status CompilePatterns(const JsonFields& f, FailureSignature* sig) {
  for (auto& s : sig->contains) {
    s = Lower(s);
    sig->contains_bytes.push_back(FailureSignature::BytesOf(s));
  }
  for (size_t i = 0; i < sig->regex.size(); ++i) {
    try {
      sig->compiled.emplace_back(sig->regex[i],
                                 std::regex::ECMAScript | std::regex::icase | std::regex::optimize);
      sig->required_literals.push_back(RequiredLiteral(sig->regex[i]));
      sig->literal_bytes.push_back(FailureSignature::BytesOf(sig->required_literals.back()));
    } catch (const std::regex_error& e) {
      return Status::Invalid(f.Path("regex") + "[" + std::to_string(i) +
                             "]: invalid regular expression: " + e.what());
    }
  }
  if (sig->contains.empty() && sig->regex.empty()) {
    return Status::Invalid(f.Path("contains") + ": a signature needs contains or regex");
  }
  return Status::Ok();
}

Result<FailureSignature> ParseOne(const nlohmann::json& j, const std::string& path,
                                  bool allow_regex) {
  JsonFields f(j, path);
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.CheckKnownKeys(
      {"key", "category", "tier", "contains", "regex", "error", "cause", "remedy", "parameters",
       "attribution", "captures", "retryable", "confidence", "reference"}));
  FailureSignature sig;
  PARATUNE_RETURN_IF_ERROR(f.ReadString("key", &sig.key));
  if (sig.key.empty()) return Status::Invalid(f.Path("key") + ": required");
  const std::vector<std::string> categories = FailureCategoryNames();
  PARATUNE_RETURN_IF_ERROR(f.ReadEnum("category", categories, &sig.category));
  if (sig.category.empty()) return Status::Invalid(f.Path("category") + ": required");
  PARATUNE_RETURN_IF_ERROR(ParseTier(f, &sig.tier));
  PARATUNE_RETURN_IF_ERROR(f.ReadStringList("contains", &sig.contains));
  PARATUNE_RETURN_IF_ERROR(f.ReadStringList("regex", &sig.regex));
  if (!allow_regex && !sig.regex.empty()) {
    return Status::Invalid(f.Path("regex") +
                           ": a campaign's knowledge matches with `contains` only (a regular "
                           "expression from a namespace could stall the operator); the site's "
                           "knowledge may use regex");
  }
  PARATUNE_RETURN_IF_ERROR(f.ReadString("error", &sig.error_type));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("cause", &sig.cause));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("remedy", &sig.remedy));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("reference", &sig.reference));
  PARATUNE_RETURN_IF_ERROR(f.ReadStringList("parameters", &sig.parameters));
  PARATUNE_RETURN_IF_ERROR(f.ReadEnum(
      "attribution", {"none", "memory", "tpu-memory", "divisibility", "mesh"}, &sig.attribution));
  PARATUNE_RETURN_IF_ERROR(ParseCaptures(f, &sig));
  PARATUNE_RETURN_IF_ERROR(f.ReadBool("retryable", &sig.retryable));
  int64_t conf = sig.confidence;
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("confidence", 0, 100, &conf));
  sig.confidence = static_cast<int>(conf);
  PARATUNE_RETURN_IF_ERROR(CompilePatterns(f, &sig));
  return sig;
}

}  // namespace

namespace {

// Regexes run on at most this many bytes of a line: std::regex backtracks from every start
// position, so a window keeps diagnosis linear in the log size on hostile long lines.
constexpr size_t kRegexWindow = 1024;
constexpr size_t kRegexLead = 256;  // bytes kept before the required literal

// Position of `needle` in `text` or npos. Boyer-Moore-Horspool: std::string::find restarts at
// every occurrence of the needle's first character, which a hostile line ("xxxx...") turns into
// one comparison per byte per needle.
size_t FindText(const std::string& text, const std::string& needle) {
  if (needle.size() < 3 || text.size() < 256) return text.find(needle);
  std::boyer_moore_horspool_searcher searcher(needle.begin(), needle.end());
  auto it = std::search(text.begin(), text.end(), searcher);
  return it == text.end() ? std::string::npos : static_cast<size_t>(it - text.begin());
}

bool AllPresent(const std::bitset<256>& needle, const std::bitset<256>& present) {
  return (needle & ~present).none();
}

}  // namespace

std::bitset<256> FailureSignature::BytesOf(const std::string& text) {
  std::bitset<256> bytes;
  for (char c : text) bytes.set(static_cast<unsigned char>(c));
  return bytes;
}

bool FailureSignature::Matches(const std::string& line, const std::string& lower) const {
  return Matches(line, lower, BytesOf(lower));
}

bool FailureSignature::Matches(const std::string& line, const std::string& lower,
                               const std::bitset<256>& present) const {
  for (size_t i = 0; i < contains.size(); ++i) {
    if (AllPresent(contains_bytes[i], present) &&
        FindText(lower, contains[i]) != std::string::npos) {
      return true;
    }
  }
  for (size_t i = 0; i < compiled.size(); ++i) {
    size_t at = 0;
    if (!required_literals[i].empty()) {
      if (!AllPresent(literal_bytes[i], present)) continue;
      at = FindText(lower, required_literals[i]);
      if (at == std::string::npos) continue;
    }
    if (line.size() <= kRegexWindow) {
      if (std::regex_search(line, compiled[i])) return true;
      continue;
    }
    const size_t begin = at > kRegexLead ? at - kRegexLead : 0;
    const auto first = line.begin() + static_cast<std::ptrdiff_t>(begin);
    const auto last =
        line.begin() + static_cast<std::ptrdiff_t>(std::min(line.size(), begin + kRegexWindow));
    if (std::regex_search(first, last, compiled[i])) return true;
  }
  return false;
}

Result<std::vector<FailureSignature>> ParseSignatures(const std::string& source,
                                                      const std::string& text, bool allow_regex) {
  auto j = YamlToJson(text);  // JSON is YAML too.
  if (!j.ok()) return j.status().WithPrefix(source);
  const nlohmann::json* list = &*j;
  std::string path = "signatures";
  if (j->is_object()) {
    if (!j->contains("signatures")) {
      return Status::Invalid(source + ": signatures: required (a list of signatures)");
    }
    list = &(*j)["signatures"];
  }
  if (!list->is_array()) return Status::Invalid(source + ": signatures: must be a list");
  std::vector<FailureSignature> out;
  for (size_t i = 0; i < list->size(); ++i) {
    auto sig = ParseOne((*list)[i], path + "[" + std::to_string(i) + "]", allow_regex);
    if (!sig.ok()) return sig.status().WithPrefix(source);
    sig->source = source;
    out.push_back(std::move(*sig));
  }
  return out;
}

}  // namespace paratune
