#include "agents/knowledge/failure_words.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "agents/knowledge/bm25.h"

namespace paratune {

namespace {

std::set<std::string> Terms(const std::string& text) {
  std::vector<std::string> all = Tokenize(text);
  return {all.begin(), all.end()};
}

}  // namespace

void FailureWordModel::Rebuild(const std::vector<LabelledCase>& cases) {
  categories_.clear();
  vocabulary_.clear();
  cases_ = 0;
  for (const auto& c : cases) {
    Category& cat = categories_[c.category];
    ++cat.cases;
    for (const auto& t : Terms(FailureText(c.events, c.log, c.pod_reason, c.exit_code))) {
      ++cat.term_counts[t];
      ++cat.term_total;
      vocabulary_.insert(t);
    }
    ++cases_;
  }
}

double FailureWordModel::LogLikelihood(const Category& c, const std::string& term) const {
  auto it = c.term_counts.find(term);
  const double count = it == c.term_counts.end() ? 0.0 : static_cast<double>(it->second);
  return std::log((count + kFailureWordsAlpha) /
                  (static_cast<double>(c.term_total) +
                   kFailureWordsAlpha * static_cast<double>(vocabulary_.size())));
}

std::optional<CategoryGuess> FailureWordModel::Guess(const std::string& text) const {
  if (categories_.size() < 2) return std::nullopt;
  std::vector<std::string> known;
  for (const auto& t : Terms(text)) {
    if (vocabulary_.count(t) > 0) known.push_back(t);
  }
  if (known.empty()) return std::nullopt;
  // category -> log P(category) + sum of log P(term | category); categories_ is ordered, so a
  // tie goes to the first name.
  std::vector<std::pair<const std::string*, double>> scores;
  for (const auto& [name, c] : categories_) {
    double s = std::log(static_cast<double>(c.cases) / static_cast<double>(cases_));
    for (const auto& t : known) s += LogLikelihood(c, t);
    scores.emplace_back(&name, s);
  }
  std::stable_sort(scores.begin(), scores.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  double z = 0;
  for (const auto& [name, s] : scores) z += std::exp(s - scores.front().second);
  const Category& best = categories_.at(*scores.front().first);
  const Category& second = categories_.at(*scores[1].first);
  CategoryGuess g;
  g.category = *scores.front().first;
  g.posterior = 1.0 / z;
  g.cases = best.cases;
  std::vector<std::pair<double, std::string>> why;
  for (const auto& t : known) {
    const double lift = LogLikelihood(best, t) - LogLikelihood(second, t);
    if (lift > 0) why.emplace_back(-lift, t);
  }
  std::sort(why.begin(), why.end());
  for (size_t i = 0; i < why.size() && i < 3; ++i) g.terms.push_back(why[i].second);
  return g;
}

}  // namespace paratune
