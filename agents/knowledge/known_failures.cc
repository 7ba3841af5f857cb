#include "agents/knowledge/known_failures.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>
#include <set>
#include <sstream>

#include "agents/core/campaign.h"
#include "agents/core/failure_category.h"
#include "agents/core/results.h"
#include "base/json_fields.h"
#include "base/strings.h"
#include "base/yaml.h"

namespace paratune {

namespace {

Result<LabelledCase> ParseOneCase(const nlohmann::json& j, const std::string& path) {
  JsonFields f(j, path);
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(
      f.CheckKnownKeys({"url", "collection", "log", "category", "parameters", "retryable", "config",
                        "podReason", "exitCode", "events"}));
  LabelledCase c;
  PARATUNE_RETURN_IF_ERROR(f.ReadString("url", &c.url));
  if (c.url.rfind("https://", 0) != 0) {
    return Status::Invalid(f.Path("url") + ": required, an https:// address");
  }
  int64_t collection = 0;
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("collection", 0, 100, &collection));
  c.collection = static_cast<int>(collection);
  PARATUNE_RETURN_IF_ERROR(f.ReadString("log", &c.log));
  PARATUNE_RETURN_IF_ERROR(ParseCaseLabels(f, &c));
  if (c.log.empty() && c.events.empty()) {
    return Status::Invalid(f.Path("log") + ": required (or events)");
  }
  c.file = c.url;
  c.split = PublicCorpusSplit(c.url);
  return c;
}

}  // namespace

std::string PublicCorpusSplit(const std::string& url) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : url) {
    h ^= ch;
    h *= 0x100000001b3ULL;
  }
  return (h & 1) != 0 ? "heldout" : "dev";
}

Status ParseCaseLabels(const JsonFields& f, LabelledCase* out) {
  LabelledCase& c = *out;
  const std::vector<std::string> categories = FailureCategoryNames();
  PARATUNE_RETURN_IF_ERROR(f.ReadEnum("category", categories, &c.category));
  if (c.category.empty()) return Status::Invalid(f.Path("category") + ": required");
  c.parameters_labelled = f.Has("parameters");
  PARATUNE_RETURN_IF_ERROR(f.ReadStringList("parameters", &c.parameters));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("podReason", &c.pod_reason));
  PARATUNE_RETURN_IF_ERROR(f.ReadStringList("events", &c.events));
  int64_t exit_code = 0;
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("exitCode", -255, 255, &exit_code));
  c.exit_code = static_cast<int>(exit_code);
  if (f.Has("retryable")) {
    bool r = false;
    PARATUNE_RETURN_IF_ERROR(f.ReadBool("retryable", &r));
    c.retryable = r;
  }
  if (f.Has("config")) {
    auto cfg = ConfigFromJson(f.Get("config"), f.Path("config"));
    if (!cfg.ok()) return cfg.status();
    c.config = *cfg;
  }
  return Status::Ok();
}

Result<std::vector<LabelledCase>> ParseLabelledCases(const std::string& name,
                                                     const std::string& text) {
  auto j = YamlToJson(text);
  if (!j.ok()) return j.status().WithPrefix(name);
  if (!j->is_object() || !j->contains("cases") || !(*j)["cases"].is_array()) {
    return Status::Invalid(name + ": cases: must be a list");
  }
  std::vector<LabelledCase> out;
  std::set<std::string> urls;
  const nlohmann::json& cases = (*j)["cases"];
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = "cases[" + std::to_string(i) + "]";
    auto c = ParseOneCase(cases[i], path);
    if (!c.ok()) return c.status().WithPrefix(name);
    if (!urls.insert(c->url).second) {
      std::string msg = name;
      msg += ": " + path + ".url: " + c->url + " appears twice";
      return Status::Invalid(msg);
    }
    out.push_back(std::move(*c));
  }
  return out;
}

namespace {

// `line` without the option names of a quoted command line (`'--dataset_path'`, `"--bf16"`: a
// launcher's argv as Python prints it): they name the program's arguments, not the failure, and
// two unrelated failures of jobs launched alike would share them. Unquoted flags stay (an XLA
// error's `--xla_...` advice is part of the failure).
std::string WithoutQuotedOptions(const std::string& line) {
  if (line.find("--") == std::string::npos) return line;
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    const char q = line[i];
    if ((q == '\'' || q == '"') && line.compare(i + 1, 2, "--") == 0) {
      size_t e = i + 3;
      while (e < line.size() && (std::isalnum(static_cast<unsigned char>(line[e])) ||
                                 line[e] == '_' || line[e] == '-' || line[e] == '.')) {
        ++e;
      }
      if (e < line.size() && line[e] == q) {
        i = e;  // the option and both quotes
        continue;
      }
    }
    out += q;
  }
  return out;
}

}  // namespace

std::string FailureText(const std::vector<std::string>& events, const std::string& log,
                        const std::string& pod_reason, int exit_code) {
  std::string text;
  for (const auto& e : events) text += e + "\n";
  // A Python traceback's header and frame lines (`File "train.py", line 88, in main`) name the
  // program, not the failure: two unrelated tracebacks would share "traceback", "file",
  // "line", "py". The source lines under them stay (`assert heads % tp == 0`).
  std::istringstream lines(log);
  std::string line;
  while (std::getline(lines, line)) {
    const std::string trimmed = Trim(line);
    if (trimmed.rfind("Traceback (most recent call last)", 0) == 0) continue;
    if (trimmed.rfind("File \"", 0) == 0) continue;
    text += WithoutQuotedOptions(line) + "\n";
  }
  if (!pod_reason.empty()) text += "\npod terminated, reason: " + pod_reason;
  if (exit_code != 0) text += "\nexit code " + std::to_string(exit_code);
  return text;
}

void KnownFailureIndex::Rebuild(const std::vector<LabelledCase>& cases) {
  cases_.clear();
  index_.Clear();
  for (const auto& c : cases) {
    cases_.push_back(&c);
    index_.Add(FailureText(c.events, c.log, c.pod_reason, c.exit_code));
  }
}

std::optional<SimilarFailure> KnownFailureIndex::MostSimilar(const std::string& text) const {
  auto hits = index_.Search(text, kSimilarNeighbours);
  if (hits.empty()) return std::nullopt;
  // category -> summed score, in the order of first appearance (hits are best first, so a tie
  // goes to the category of the closer case).
  std::vector<std::pair<std::string, double>> votes;
  for (const auto& [i, score] : hits) {
    const std::string& category = cases_[i]->category;
    auto it = std::find_if(votes.begin(), votes.end(),
                           [&](const auto& v) { return v.first == category; });
    if (it == votes.end()) {
      votes.emplace_back(category, score);
    } else {
      it->second += score;
    }
  }
  std::stable_sort(votes.begin(), votes.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  SimilarFailure s;
  s.category = votes.front().first;
  const double vote = votes.front().second;
  const double runner_up = votes.size() > 1 ? votes[1].second : 0;
  s.margin = vote > 0 ? (vote - runner_up) / vote : 0;
  double retry = 0, final_ = 0;
  for (const auto& [i, score] : hits) {
    const LabelledCase& c = *cases_[i];
    if (c.category != s.category) continue;
    if (s.known == nullptr) {
      s.known = &c;
      s.score = score;
    }
    (c.retryable.value_or(false) ? retry : final_) += score;
  }
  s.retryable = retry > final_;
  return s;
}

}  // namespace paratune
