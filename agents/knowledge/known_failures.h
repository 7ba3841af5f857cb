// Known failures: failure logs an expert has labelled (category, retryable, the parameters to
// blame), and retrieval of the known failure most like a new log. The Diagnostician falls back on
// it when no signature matches: a log worded like a labelled one most likely failed the same way.
//
// The shipped cases are the dev half of the public corpus (agents/knowledge/data/failures); its
// held-out half lives only in the tests (tests/knowledge/data/public/heldout.yaml), so retrieval
// never sees a case it is measured on. Users add their own with a `cases:` file in the knowledge
// directory. Format (YAML or JSON):
//
//   cases:
//   - url: https://github.com/...   # where the log comes from (required, https, unique)
//     category: CudaOOM             # expected category (FailureCategory)
//     retryable: false
//     parameters: [tp]              # optional: implicated keys, most likely first
//     config: {tp: 8}               # optional: the trial's configuration
//     podReason: OOMKilled          # optional: what the kubelet reported
//     exitCode: 137                 # optional
//     events: ["..."]               # optional: scheduler / kubelet events
//     collection: 3                 # optional: which collection of the public corpus
//     log: |
//       the quoted error text
#ifndef PARATUNE_AGENTS_KNOWLEDGE_KNOWN_FAILURES_H_
#define PARATUNE_AGENTS_KNOWLEDGE_KNOWN_FAILURES_H_

#include <optional>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/knowledge/bm25.h"
#include "base/status.h"

namespace paratune {

class JsonFields;  // base/json_fields.h

// One labelled failure: what Kubernetes and the log said, and what an expert concluded.
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

// "dev" or "heldout": the parity of the 64-bit FNV-1a hash of the URL. Fixed before any signature
// was written; signatures and the shipped known failures come from the dev half only.
std::string PublicCorpusSplit(const std::string& url);

// Parses a `cases:` file (format above). Errors name `name`, the case and the field; nothing is
// returned when any case is bad.
Result<std::vector<LabelledCase>> ParseLabelledCases(const std::string& name,
                                                     const std::string& text);

// The labels every case format shares (category, parameters, retryable, config, podReason,
// exitCode, events), read from `f` into `out`. Errors name the field.
Status ParseCaseLabels(const JsonFields& f, LabelledCase* out);

// What the known failures most like a log say: the nearest kSimilarNeighbours cases vote for a
// category with their BM25 scores. `margin` is how far the winning category's vote is ahead of
// the next one's, relative to it (1: all neighbours agree; 0: a tie). `retryable` is the
// score-weighted majority of the winning category's neighbours; `known` the closest of them (the
// citation) and `score` its BM25 score (how many rare terms the log shares with it).
struct SimilarFailure {
  const LabelledCase* known = nullptr;
  std::string category;
  bool retryable = false;
  double score = 0;
  double margin = 0;
};

inline constexpr size_t kSimilarNeighbours = 5;

// BM25 retrieval over known failures. Holds pointers into the cases it is built from, which must
// outlive it and not move. Const methods are thread-safe.
class KnownFailureIndex {
 public:
  void Rebuild(const std::vector<LabelledCase>& cases);
  // The vote of the cases most similar to `text` (what the Diagnostician reads: events, log,
  // pod reason), or nothing when no case shares a term with it.
  std::optional<SimilarFailure> MostSimilar(const std::string& text) const;

 private:
  std::vector<const LabelledCase*> cases_;
  Bm25Index index_;
};

// The text a case is indexed and queried by: its events, log, pod reason and exit code, in the
// order the Diagnostician reads them.
std::string FailureText(const std::vector<std::string>& events, const std::string& log,
                        const std::string& pod_reason, int exit_code);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_KNOWN_FAILURES_H_
