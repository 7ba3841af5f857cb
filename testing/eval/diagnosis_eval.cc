#include "testing/eval/diagnosis_eval.h"

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "agents/core/campaign.h"
#include "agents/core/failure_category.h"
#include "base/json_fields.h"
#include "base/yaml.h"

namespace paratune {

namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Result<LabelledCase> ParseCase(const nlohmann::json& j, const std::string& path,
                               const std::string& dir) {
  JsonFields f(j, path);
  PARATUNE_RETURN_IF_ERROR(f.CheckKnownKeys({"file", "category", "parameters", "retryable",
                                             "config", "podReason", "exitCode", "events"}));
  LabelledCase c;
  PARATUNE_RETURN_IF_ERROR(f.ReadString("file", &c.file));
  PARATUNE_RETURN_IF_ERROR(ParseCaseLabels(f, &c));
  c.parameters_labelled = true;  // the project's own set always labels them ([] = none)
  auto log = ReadFile(dir + "/" + c.file);
  if (!log.ok()) return log.status().WithPrefix(f.Path("file"));
  c.log = *log;
  return c;
}

bool ParametersOk(const std::vector<std::string>& expected, const std::vector<std::string>& got) {
  if (expected.empty()) return got.empty();
  if (got.empty() || got.front() != expected.front()) return false;
  return std::all_of(expected.begin(), expected.end(), [&](const std::string& p) {
    return std::find(got.begin(), got.end(), p) != got.end();
  });
}

}  // namespace

std::vector<std::string> PublicCorpusPaths(const std::string& source_dir) {
  return {source_dir + "/agents/knowledge/data/failures/public-dev.yaml",
          source_dir + "/tests/knowledge/data/public/heldout.yaml"};
}

Result<std::vector<LabelledCase>> LoadPublicCorpus(const std::vector<std::string>& paths) {
  std::vector<LabelledCase> out;
  for (const auto& path : paths) {
    auto text = ReadFile(path);
    if (!text.ok()) return text.status();
    auto cases = ParseLabelledCases(path, *text);
    if (!cases.ok()) return cases.status();
    for (auto& c : *cases) out.push_back(std::move(c));
  }
  return out;
}

std::string SecondLabellingPath(const std::string& source_dir) {
  return source_dir + "/tests/knowledge/data/public/second-labelling.yaml";
}

Result<std::map<std::string, SecondLabel>> LoadSecondLabelling(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.status();
  auto j = YamlToJson(*text);
  if (!j.ok()) return j.status().WithPrefix(path);
  if (!j->is_object() || !j->contains("labels") || !(*j)["labels"].is_array()) {
    return Status::Invalid(path + ": labels: must be a list");
  }
  const std::vector<std::string> categories = FailureCategoryNames();
  std::map<std::string, SecondLabel> out;
  const nlohmann::json& labels = (*j)["labels"];
  for (size_t i = 0; i < labels.size(); ++i) {
    JsonFields f(labels[i], path + ": labels[" + std::to_string(i) + "]");
    PARATUNE_RETURN_IF_ERROR(f.CheckObject());
    PARATUNE_RETURN_IF_ERROR(f.CheckKnownKeys({"url", "category", "retryable", "causeVisible"}));
    std::string url;
    SecondLabel l;
    PARATUNE_RETURN_IF_ERROR(f.ReadString("url", &url));
    if (url.empty()) return Status::Invalid(f.Path("url") + ": required");
    PARATUNE_RETURN_IF_ERROR(f.ReadEnum("category", categories, &l.category));
    if (l.category.empty()) return Status::Invalid(f.Path("category") + ": required");
    if (!f.Has("retryable")) return Status::Invalid(f.Path("retryable") + ": required");
    PARATUNE_RETURN_IF_ERROR(f.ReadBool("retryable", &l.retryable));
    if (f.Has("causeVisible")) {
      PARATUNE_RETURN_IF_ERROR(f.ReadBool("causeVisible", &l.cause_visible));
    }
    if (!out.emplace(url, l).second) {
      return Status::Invalid(f.Path("url") + ": " + url + " is labelled twice");
    }
  }
  return out;
}

Result<std::vector<LabelledCase>> LoadLabelledCases(const std::string& dir) {
  auto text = ReadFile(dir + "/labels.yaml");
  if (!text.ok()) return text.status();
  auto j = YamlToJson(*text);
  if (!j.ok()) return j.status().WithPrefix("labels.yaml");
  if (!j->is_object() || !(*j)["cases"].is_array()) {
    return Status::Invalid("labels.yaml: cases: must be a list");
  }
  std::vector<LabelledCase> out;
  const nlohmann::json& cases = (*j)["cases"];
  for (size_t i = 0; i < cases.size(); ++i) {
    auto c = ParseCase(cases[i], "cases[" + std::to_string(i) + "]", dir);
    if (!c.ok()) return c.status().WithPrefix("labels.yaml");
    out.push_back(std::move(*c));
  }
  return out;
}

std::vector<CaseOutcome> EvaluateCases(const Diagnostician& d,
                                       const std::vector<LabelledCase>& cases) {
  std::vector<CaseOutcome> out;
  for (const auto& c : cases) {
    DiagnosisInput in;
    in.log = c.log;
    in.pod_reason = c.pod_reason;
    in.exit_code = c.exit_code;
    in.events = c.events;
    if (c.config) in.config = &*c.config;
    CaseOutcome o;
    o.c = &c;
    o.diagnosis = d.Diagnose(in);
    o.category_ok = o.diagnosis.category == c.category;
    o.parameters_ok = !c.parameters_labelled || ParametersOk(c.parameters, o.diagnosis.parameters);
    o.retryable_ok = !c.retryable || *c.retryable == o.diagnosis.retryable;
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace paratune
