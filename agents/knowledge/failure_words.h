// What the words of a failure log say about its category when neither a signature nor a close
// known failure explains it: a naive Bayes model of each category's vocabulary, learned from the
// known failures (agents/knowledge/known_failures.h). A fresh wording of a known kind of failure
// ("NCCL ... watchdog", "Xid ... fallen", "XlaRuntimeError ... lowering") shares few rare terms
// with any one known log, which the nearest-neighbour vote needs, but many common terms with the
// category's logs taken together.
//
// Terms are those of Tokenize (agents/knowledge/bm25.h), each counted once per log (a log that
// repeats "timeout" forty times is one vote for it). P(term | category) is smoothed with
// kFailureWordsAlpha; the prior is the share of known failures in the category.
#ifndef PARATUNE_AGENTS_KNOWLEDGE_FAILURE_WORDS_H_
#define PARATUNE_AGENTS_KNOWLEDGE_FAILURE_WORDS_H_

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "agents/knowledge/known_failures.h"

namespace paratune {

// Additive smoothing of the term counts. Chosen with the decision threshold in the Diagnostician
// by replaying each public collection's dev half against the signatures and known failures that
// existed before it (bench/RESULTS.md, "Diagnosis on public logs").
inline constexpr double kFailureWordsAlpha = 1.0;

struct CategoryGuess {
  std::string category;
  double posterior = 0;  // P(category | the log's known terms), 0..1
  size_t cases = 0;      // known failures of the category the model learned from
  // Up to three of the log's terms that speak most for the category against the runner-up,
  // strongest first (the explanation a person can check).
  std::vector<std::string> terms;
};

class FailureWordModel {
 public:
  void Rebuild(const std::vector<LabelledCase>& cases);
  // The most probable category of `text` (what the Diagnostician reads: events, log, pod
  // reason), or nothing when fewer than two categories are known or no term of `text` is.
  std::optional<CategoryGuess> Guess(const std::string& text) const;

 private:
  struct Category {
    size_t cases = 0;
    size_t term_total = 0;  // sum of term_counts
    std::unordered_map<std::string, size_t> term_counts;
  };
  double LogLikelihood(const Category& c, const std::string& term) const;

  std::map<std::string, Category> categories_;
  std::unordered_set<std::string> vocabulary_;  // every term of every known failure
  size_t cases_ = 0;
};

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_FAILURE_WORDS_H_
