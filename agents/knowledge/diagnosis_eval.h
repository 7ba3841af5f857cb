// The labelled failure-log set (tests/knowledge/logs) and how a Diagnostician is scored on it.
// Shared by the unit tests and bench/knowledge_diagnosis_bench.cc so both measure the same thing.
#ifndef PARATUNE_AGENTS_KNOWLEDGE_DIAGNOSIS_EVAL_H_
#define PARATUNE_AGENTS_KNOWLEDGE_DIAGNOSIS_EVAL_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/core/results.h"
#include "agents/core/status.h"
#include "agents/knowledge/diagnostician.h"

namespace paratune {

struct LabelledCase {
  std::string file;
  std::string log;
  std::string pod_reason;
  int exit_code = 0;
  std::vector<std::string> events;
  std::optional<Config> config;
  std::string category;                 // expected
  std::vector<std::string> parameters;  // expected; the first must rank first
  std::optional<bool> retryable;        // expected when set
};

// Reads `dir`/labels.yaml and the logs it names. Errors name the file and field.
Result<std::vector<LabelledCase>> LoadLabelledCases(const std::string& dir);

struct CaseOutcome {
  const LabelledCase* c = nullptr;
  FailureDiagnosis diagnosis;
  bool category_ok = false;
  bool parameters_ok = false;  // expected first ranks first, all expected present; [] means none
  bool retryable_ok = true;
};

std::vector<CaseOutcome> EvaluateCases(const Diagnostician& d,
                                       const std::vector<LabelledCase>& cases);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_DIAGNOSIS_EVAL_H_
