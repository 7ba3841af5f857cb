#include "agents/llm/reply_parser.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "base/json_fields.h"
#include "base/strings.h"

namespace paratune::llm {
namespace {

using nlohmann::json;

// The lines of `text` a parser looks at. Lines longer than kMaxReplyLineBytes are dropped as
// prose: no parameter, heading or change line is that long, and libstdc++'s std::regex recurses
// once per character it matches, so a huge line would overflow the stack.
std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() <= kMaxReplyLineBytes) out.push_back(line);
  }
  return out;
}

// The first JSON object in the text, when the text is (mostly) one.
std::optional<json> JsonObject(const std::string& text) {
  size_t b = text.find('{');
  size_t e = text.rfind('}');
  if (b == std::string::npos || e == std::string::npos || e < b) return std::nullopt;
  json j = json::parse(text.substr(b, e - b + 1), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

std::string JsonText(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// Strips list markers ("1.", "2)", "-", "*", "#") and emphasis from the start of a line.
std::string StripMarker(const std::string& line) {
  static const std::regex marker(R"(^\s*(?:[-*#>]+|\d+[.)]|\(\d+\))?\s*(?:\*\*)?)");
  return Trim(std::regex_replace(line, marker, "", std::regex_constants::format_first_only));
}

Result<Config> ConfigFromJsonObject(const json& obj) {
  Config config;
  for (const auto& [key, value] : obj.items()) {
    auto name = CanonicalParameterName(key);
    if (!name) return Status::Invalid("unknown parameter \"" + TextExcerpt(key) + "\"");
    auto parsed = ParseModelValue(*name, JsonText(value));
    if (!parsed.ok()) return parsed.status();
    config[*name] = *parsed;
  }
  if (config.empty()) return Status::Invalid("the configuration names no parameter");
  return config;
}

// One "KEY: value" / "KEY=value" line. Returns false for prose; an error for a parameter-shaped
// key that is unknown or a value that does not parse.
Result<bool> ConfigLine(const std::string& raw_line, Config& config) {
  static const std::regex kv(R"(^([A-Za-z`*"'-][A-Za-z0-9_`*"' -]*?)\s*[:=]\s*(.+)$)");
  std::smatch m;
  std::string line = StripMarker(raw_line);
  if (!std::regex_match(line, m, kv)) return false;
  std::string key = m[1].str(), value = Trim(m[2].str());
  auto name = CanonicalParameterName(key);
  if (!name) {
    // A single identifier with a single-word value looks like a parameter: reject it.
    static const std::regex ident(R"(^[`*"']*[A-Za-z][A-Za-z0-9_]*[`*"']*$)");
    static const std::regex word(R"(^[^\s]+$)");
    // So does an upper-case key ("EXEC: curl ..."), whatever its value; "Note: ..." is prose.
    static const std::regex shouting(R"(^[`*"']*[A-Z][A-Z0-9_]*[`*"']*$)");
    bool looks_like_param = std::regex_match(key, ident) &&
                            (std::regex_match(value, word) || std::regex_match(key, shouting));
    if (looks_like_param) {
      return Status::Invalid("unknown parameter \"" + TextExcerpt(Trim(key)) + "\"");
    }
    return false;
  }
  // "TP: 4 (because ...)": the value is the first word.
  std::string first = value.substr(0, value.find_first_of(" \t("));
  auto parsed = ParseModelValue(*name, first);
  if (!parsed.ok()) return parsed.status();
  config[*name] = *parsed;
  return true;
}

// A line with several "K: v" pairs separated by commas or semicolons ("TP: 2, PP: 1").
Result<bool> ConfigLineOrPairs(const std::string& line, Config& config) {
  static const std::regex pair_sep(R"(\s*[,;]\s*)");
  std::vector<std::string> pieces(
      std::sregex_token_iterator(line.begin(), line.end(), pair_sep, -1),
      std::sregex_token_iterator());
  bool all_pairs = pieces.size() > 1;
  for (const auto& p : pieces) {
    all_pairs = all_pairs && p.find_first_of(":=") != std::string::npos;
  }
  if (!all_pairs) return ConfigLine(line, config);
  bool any = false;
  for (const auto& p : pieces) {
    auto r = ConfigLine(p, config);
    if (!r.ok()) return r.status();
    any = any || *r;
  }
  return any;
}

double ParseConfidence(std::string text) {
  double v = std::strtod(text.c_str(), nullptr);
  if (std::isnan(v)) return 0.5;  // "nan": unknown, the default
  if (v > 1.0) v /= 100.0;
  return std::clamp(v, 0.0, 1.0);
}

Result<ProposerReply> ProposerFromJson(const json& j) {
  ProposerReply out;
  if (!j.contains("candidates") || !j["candidates"].is_array()) {
    return Status::Invalid("candidates: missing or not an array");
  }
  for (const auto& c : j["candidates"]) {
    if (!c.is_object() || !c.contains("config") || !c["config"].is_object()) {
      out.rejected.push_back("candidate without a config object");
      continue;
    }
    auto config = ConfigFromJsonObject(c["config"]);
    if (!config.ok()) {
      out.rejected.push_back(config.status().message());
      continue;
    }
    ProposedCandidate p{*config, c.contains("rationale") ? JsonText(c["rationale"]) : "",
                        c.contains("expectedImpact") ? JsonText(c["expectedImpact"]) : "", 0.5};
    if (c.contains("confidence")) p.confidence = ParseConfidence(JsonText(c["confidence"]));
    out.candidates.push_back(std::move(p));
  }
  return out;
}

// Free text: "Candidate N" headings, each followed by its lines.
ProposerReply ProposerFromText(const std::string& text) {
  static const std::regex heading(
      R"(^\s*(?:#+\s*)?(?:\*\*)?\s*(?:candidate|option|proposal|configuration)\s*#?\s*\d+\b[^:]*:?\s*(.*)$)",
      std::regex::icase);
  static const std::regex meta(
      R"(^(rationale|reason|why|expected[ _]impact|impact|confidence|trade-?offs?)\s*:\s*(.*)$)",
      std::regex::icase);
  ProposerReply out;
  std::vector<std::pair<ProposedCandidate, std::string>> blocks;  // candidate, error
  for (const auto& raw : Lines(text)) {
    std::smatch m;
    std::string line = raw;
    if (std::regex_match(raw, m, heading)) {
      blocks.push_back({ProposedCandidate{}, ""});
      line = m[1].str();
    }
    if (blocks.empty()) continue;
    auto& [cand, error] = blocks.back();
    std::string stripped = StripMarker(line);
    std::smatch mm;
    if (std::regex_match(stripped, mm, meta)) {
      std::string key = mm[1].str();
      std::transform(key.begin(), key.end(), key.begin(), ::tolower);
      if (key == "confidence") {
        cand.confidence = ParseConfidence(mm[2].str());
      } else if (key.find("impact") != std::string::npos) {
        cand.expected_impact = Trim(mm[2].str());
      } else if (key.rfind("trade", 0) != 0) {
        cand.rationale = Trim(mm[2].str());
      }
      continue;
    }
    auto r = ConfigLineOrPairs(stripped, cand.config);
    if (!r.ok() && error.empty()) error = r.status().message();
  }
  for (size_t i = 0; i < blocks.size(); ++i) {
    auto& [cand, error] = blocks[i];
    if (error.empty() && cand.config.empty()) error = "names no parameter";
    if (!error.empty()) {
      out.rejected.push_back("candidate " + std::to_string(i + 1) + ": " + error);
    } else {
      out.candidates.push_back(std::move(cand));
    }
  }
  return out;
}

}  // namespace

Result<std::vector<SuggestedChange>> ParseAnalystReply(std::string_view reply) {
  std::string text = StripReasoning(reply);
  std::vector<SuggestedChange> out;
  if (auto j = JsonObject(text); j && j->contains("changes") && (*j)["changes"].is_array()) {
    for (const auto& c : (*j)["changes"]) {
      if (!c.is_object() || !c.contains("parameter") || !c.contains("to")) {
        return Status::Invalid("changes[]: each needs parameter and to");
      }
      auto name = CanonicalParameterName(JsonText(c["parameter"]));
      if (!name) {
        return Status::Invalid("unknown parameter \"" + TextExcerpt(JsonText(c["parameter"])) +
                               "\"");
      }
      auto to = ParseModelValue(*name, JsonText(c["to"]));
      if (!to.ok()) return to.status();
      out.push_back({*name, c.contains("from") ? JsonText(c["from"]) : "", *to,
                     c.contains("reason") ? JsonText(c["reason"]) : ""});
    }
  } else {
    static const std::regex change(
        R"(change\s+[`*"']*([A-Za-z][A-Za-z0-9_ -]*?)[`*"']*\s+from\s+[`*"']*([^\s`*"']+)[`*"']*\s+to\s+[`*"']*([A-Za-z0-9_]+)[`*"']*[.,;:]?\s*(.*))",
        std::regex::icase);
    for (const auto& line : Lines(text)) {
      std::smatch m;
      if (!std::regex_search(line, m, change)) continue;
      auto name = CanonicalParameterName(m[1].str());
      if (!name) return Status::Invalid("unknown parameter \"" + TextExcerpt(m[1].str()) + "\"");
      auto to = ParseModelValue(*name, m[3].str());
      if (!to.ok()) return to.status();
      std::string reason = Trim(m[4].str());
      static const std::regex lead(R"(^(?:because|as|since|-|:|—)\s*)", std::regex::icase);
      out.push_back({*name, m[2].str(), *to, std::regex_replace(reason, lead, "")});
    }
  }
  if (out.empty()) {
    return Status::Invalid("no \"Change PARAMETER from CURRENT to PROPOSED.\" line found");
  }
  return out;
}

Result<Config> ParseStrategistReply(std::string_view reply) {
  std::string text = StripReasoning(reply);
  if (auto j = JsonObject(text)) {
    const json& obj = j->contains("config") && (*j)["config"].is_object() ? (*j)["config"] : *j;
    return ConfigFromJsonObject(obj);
  }
  Config config;
  for (const auto& line : Lines(text)) {
    auto r = ConfigLineOrPairs(line, config);
    if (!r.ok()) return r.status();
  }
  if (config.empty()) return Status::Invalid("no \"PARAMETER: value\" line found");
  return config;
}

Result<ProposerReply> ParseProposerReply(std::string_view reply) {
  std::string text = StripReasoning(reply);
  ProposerReply out;
  if (auto j = JsonObject(text); j && j->contains("candidates")) {
    auto parsed = ProposerFromJson(*j);
    if (!parsed.ok()) return parsed.status();
    out = std::move(*parsed);
  } else {
    out = ProposerFromText(text);
  }
  if (out.candidates.size() > 3) out.candidates.resize(3);
  if (out.candidates.empty()) {
    std::string why = out.rejected.empty() ? "no \"Candidate N\" block found" : out.rejected[0];
    return Status::Invalid("no usable candidate: " + why);
  }
  return out;
}

}  // namespace paratune::llm
