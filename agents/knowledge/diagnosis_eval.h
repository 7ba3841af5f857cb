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
#include "agents/knowledge/diagnostician.h"
#include "base/status.h"

namespace paratune {

struct LabelledCase {
  std::string file;  // the log's file name, or the source URL for a public-corpus case
  std::string log;
  std::string pod_reason;
  int exit_code = 0;
  std::vector<std::string> events;
  std::optional<Config> config;
  std::string category;                 // expected
  std::vector<std::string> parameters;  // expected; the first must rank first
  std::optional<bool> retryable;        // expected when set
  bool parameters_labelled = true;      // false: the case names no expected parameters
  std::string url;                      // public corpus: where the log was quoted from
  std::string split;                    // public corpus: "dev" or "heldout" (PublicCorpusSplit)
  int collection = 0;                   // public corpus: which collection (0: the first two)
};

// Reads `dir`/labels.yaml and the logs it names. Errors name the file and field.
Result<std::vector<LabelledCase>> LoadLabelledCases(const std::string& dir);

// The public corpus (tests/knowledge/data/public/cases.yaml): each case quotes a short log
// excerpt inline with the URL it comes from (`url`, `log`, and the labels above). Errors name the
// case and field.
Result<std::vector<LabelledCase>> LoadPublicCorpus(const std::string& path);

// "dev" or "heldout": the parity of the 64-bit FNV-1a hash of the URL. Fixed before any signature
// was written; signatures are written from the dev half only.
std::string PublicCorpusSplit(const std::string& url);

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

#endif  // PARATUNE_AGENTS_KNOWLEDGE_DIAGNOSIS_EVAL_H_
