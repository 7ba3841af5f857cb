// The diagnostician's reply parser (declared in reply_parser.h).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "agents/core/failure_category.h"
#include "agents/llm/reply_parser.h"
#include "base/json_fields.h"

namespace paratune::llm {
namespace {

using nlohmann::json;

bool KnownCategory(const std::string& c) { return ParseFailureCategory(c).has_value(); }

// Categories that are not caused by the parameters.
bool RetryableByDefault(const std::string& c) {
  switch (FailureCategoryOf(c)) {
    case FailureCategory::kNodeFault:
    case FailureCategory::kCollectiveTimeout:
    case FailureCategory::kImagePull:
    case FailureCategory::kUnschedulable:
    case FailureCategory::kTimeout:
      return true;
    default:
      return false;
  }
}

// Every parameter name mentioned as a word in `text` (canonical or Megatron-style).
std::vector<std::string> MentionedParameters(const std::string& text) {
  static const std::regex word(R"([A-Za-z][A-Za-z0-9_]*)");
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), word); it != std::sregex_iterator();
       ++it) {
    std::string w = it->str();
    if (w.size() < 2) continue;
    auto name = CanonicalParameterName(w);
    if (name && std::find(out.begin(), out.end(), *name) == out.end()) out.push_back(*name);
  }
  return out;
}

Result<FailureDiagnosis> Finish(FailureDiagnosis d, bool retryable_given) {
  if (!KnownCategory(d.category)) {
    // Fall back to a category word in the summary ("... caused CudaOOM ...").
    std::string found;
    for (FailureCategory c : kAllFailureCategories) {
      if (d.summary.find(ToString(c)) != std::string::npos) found = ToString(c);
    }
    if (found.empty()) {
      return Status::Invalid(d.category.empty()
                                 ? "no failure category given"
                                 : "unknown failure category \"" + TextExcerpt(d.category) + "\"");
    }
    d.category = found;
  }
  if (d.confidence < 0 || d.confidence > 100) {
    return Status::Invalid("confidence must be 0..100, got " + std::to_string(d.confidence));
  }
  if (!retryable_given) d.retryable = RetryableByDefault(d.category);
  if (d.parameters.empty()) d.parameters = MentionedParameters(d.summary);
  return d;
}

}  // namespace

Result<FailureDiagnosis> ParseDiagnosticianReply(std::string_view reply) {
  std::string text = StripReasoning(reply);
  static const std::regex confidence(R"(\(\s*confidence\s*:\s*(\d+)\s*%?\s*\))", std::regex::icase);
  FailureDiagnosis d;
  bool retryable_given = false;
  size_t b = text.find('{'), e = text.rfind('}');
  json j = b != std::string::npos && e != std::string::npos && e > b
               ? json::parse(text.substr(b, e - b + 1), nullptr, false)
               : json();
  if (j.is_object() && j.contains("summary")) {
    d.category =
        j.contains("category") && j["category"].is_string() ? j["category"].get<std::string>() : "";
    d.summary = j["summary"].is_string() ? j["summary"].get<std::string>() : "";
    if (d.summary.size() > kMaxReplyLineBytes) {
      return Status::Invalid("summary: longer than " + std::to_string(kMaxReplyLineBytes) +
                             " characters");
    }
    d.confidence = -1;
    if (j.contains("confidence") && j["confidence"].is_number()) {
      // Out-of-range values (1e300) must not be converted to int: that is undefined.
      const double c = j["confidence"].get<double>();
      if (!(c >= 0 && c <= 100)) {
        return Status::Invalid("confidence must be 0..100, got " + JsonExcerpt(j["confidence"]));
      }
      d.confidence = static_cast<int>(c);
    }
    if (j.contains("parameters") && j["parameters"].is_array()) {
      for (const auto& p : j["parameters"]) {
        auto name = p.is_string() ? CanonicalParameterName(p.get<std::string>()) : std::nullopt;
        if (name) d.parameters.push_back(*name);
      }
    }
    if (j.contains("retryable") && j["retryable"].is_boolean()) {
      d.retryable = j["retryable"].get<bool>();
      retryable_given = true;
    }
    if (d.confidence < 0) return Status::Invalid("confidence: missing");
    if (d.summary.find("Confidence") == std::string::npos) {
      d.summary += " (Confidence: " + std::to_string(d.confidence) + ")";
    }
    return Finish(std::move(d), retryable_given);
  }
  static const std::regex field(R"(^\s*[-*]*\s*(category|parameters|retryable)\s*:\s*(.*)$)",
                                std::regex::icase);
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > kMaxReplyLineBytes) continue;  // prose; too long for std::regex
    std::smatch m;
    if (std::regex_match(line, m, field)) {
      std::string key = m[1].str(), value = m[2].str();
      std::transform(key.begin(), key.end(), key.begin(), ::tolower);
      if (key == "category") {
        d.category = value.substr(0, value.find_first_of(" \t.,"));
      } else if (key == "parameters") {
        d.parameters = MentionedParameters(value);
      } else {
        retryable_given = true;
        d.retryable = value.rfind("yes", 0) == 0 || value.rfind("true", 0) == 0;
      }
    } else if (d.summary.empty() && std::regex_search(line, m, confidence)) {
      d.summary = line.substr(line.find_first_not_of(" -*"));
      d.confidence =
          static_cast<int>(std::min(std::strtol(m[1].str().c_str(), nullptr, 10), 1000L));
    }
  }
  if (d.summary.empty()) return Status::Invalid("no summary line ending in \"(Confidence: N)\"");
  return Finish(std::move(d), retryable_given);
}

}  // namespace paratune::llm
