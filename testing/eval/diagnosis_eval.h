// The labelled failure-log set (tests/knowledge/logs) and how a Diagnostician is scored on it.
// Shared by the unit tests and bench/knowledge_diagnosis_bench.cc so both measure the same thing.
#ifndef PARATUNE_TESTING_EVAL_DIAGNOSIS_EVAL_H_
#define PARATUNE_TESTING_EVAL_DIAGNOSIS_EVAL_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/core/results.h"
#include "agents/knowledge/diagnostician.h"
#include "agents/knowledge/known_failures.h"
#include "base/status.h"

namespace paratune {

// Reads `dir`/labels.yaml and the logs it names. Errors name the file and field.
Result<std::vector<LabelledCase>> LoadLabelledCases(const std::string& dir);

// The public corpus: failure logs quoted from public issues, each with the URL it comes from
// (format: agents/knowledge/known_failures.h), in two files split by PublicCorpusSplit: the dev
// half ships as known failures (agents/knowledge/data/failures/public-dev.yaml), the held-out
// half is test data only (tests/knowledge/data/public/heldout.yaml).
std::vector<std::string> PublicCorpusPaths(const std::string& source_dir);

// Reads and concatenates the cases of `paths`. Errors name the file, case and field.
Result<std::vector<LabelledCase>> LoadPublicCorpus(const std::vector<std::string>& paths);

// A second, independent label of a public-corpus log (tests/knowledge/data/public/
// second-labelling.yaml): made blind from the excerpt alone, to measure how far two labellers
// agree and so what a diagnosis reading the same excerpt can be held to.
struct SecondLabel {
  std::string category;  // a FailureCategory name
  bool retryable = false;
  bool cause_visible = true;  // false: the labeller judged the excerpt does not show the cause
};

std::string SecondLabellingPath(const std::string& source_dir);

// Reads a `labels:` list of {url, category, retryable, causeVisible}, keyed by URL. Errors name
// the file, entry and field; a URL twice is an error.
Result<std::map<std::string, SecondLabel>> LoadSecondLabelling(const std::string& path);

struct CaseOutcome {
  const LabelledCase* c = nullptr;
  FailureDiagnosis diagnosis;
  bool category_ok = false;
  bool parameters_ok = false;  // expected first ranks first, all expected present; [] means none
                               // (true when the case labels no parameters)
  bool retryable_ok = true;
};

std::vector<CaseOutcome> EvaluateCases(const Diagnostician& d,
                                       const std::vector<LabelledCase>& cases);

}  // namespace paratune

#endif  // PARATUNE_TESTING_EVAL_DIAGNOSIS_EVAL_H_
