#include "agents/knowledge/bm25.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string_view>
#include <unordered_set>

namespace paratune {

namespace {

bool IsStopWord(std::string_view w) {
  static const std::unordered_set<std::string_view> kStop = {
      "a",    "an",   "and",  "are",  "as",    "at",   "be",   "by",   "for",  "from", "in",
      "is",   "it",   "of",   "on",   "or",    "that", "the",  "this", "to",   "was",  "were",
      "will", "with", "when", "what", "which", "its",  "into", "than", "then", "so"};
  return kStop.count(w) > 0;
}

// Light stemming: plural and a few verb endings, so "timeouts"/"timed" meet "timeout"/"time".
std::string Stem(std::string w) {
  auto ends = [&](std::string_view s) {
    return w.size() > s.size() + 2 && std::string_view(w).substr(w.size() - s.size()) == s;
  };
  if (ends("ies")) return w.substr(0, w.size() - 3) + "y";
  if (ends("ing")) return w.substr(0, w.size() - 3);
  if (ends("ed")) return w.substr(0, w.size() - 2);
  if (ends("es") && !ends("ses")) return w.substr(0, w.size() - 1);
  if (ends("s") && !ends("ss") && !ends("us")) return w.substr(0, w.size() - 1);
  return w;
}

}  // namespace

std::vector<std::string> Tokenize(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty() && !IsStopWord(cur)) out.push_back(Stem(cur));
    cur.clear();
  };
  for (char ch : text) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (std::isalnum(c)) {
      cur.push_back(static_cast<char>(std::tolower(c)));
    } else {
      flush();
    }
  }
  flush();
  return out;
}

size_t Bm25Index::Add(const std::string& text) {
  size_t id = lengths_.size();
  std::vector<std::string> terms = Tokenize(text);
  std::unordered_map<std::string, int> tf;
  for (const auto& t : terms) ++tf[t];
  for (const auto& [term, n] : tf) postings_[term].emplace_back(id, n);
  lengths_.push_back(static_cast<int>(terms.size()));
  total_length_ += static_cast<double>(terms.size());
  return id;
}

void Bm25Index::Clear() {
  postings_.clear();
  lengths_.clear();
  total_length_ = 0;
}

std::vector<std::pair<size_t, double>> Bm25Index::Search(const std::string& query, size_t k) const {
  std::vector<std::pair<size_t, double>> out;
  if (lengths_.empty() || k == 0) return out;
  std::vector<std::string> terms = Tokenize(query);
  std::sort(terms.begin(), terms.end());
  terms.erase(std::unique(terms.begin(), terms.end()), terms.end());
  const double n = static_cast<double>(lengths_.size());
  const double avgdl = std::max(1.0, total_length_ / n);
  std::unordered_map<size_t, double> scores;
  for (const auto& term : terms) {
    auto it = postings_.find(term);
    if (it == postings_.end()) continue;
    const double df = static_cast<double>(it->second.size());
    const double idf = std::log(1.0 + (n - df + 0.5) / (df + 0.5));
    for (const auto& [doc, tf] : it->second) {
      const double f = tf;
      const double norm = k1_ * (1 - b_ + b_ * lengths_[doc] / avgdl);
      scores[doc] += idf * f * (k1_ + 1) / (f + norm);
    }
  }
  out.assign(scores.begin(), scores.end());
  auto better = [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  if (out.size() > k) {
    std::partial_sort(out.begin(), out.begin() + static_cast<long>(k), out.end(), better);
    out.resize(k);
  } else {
    std::sort(out.begin(), out.end(), better);
  }
  return out;
}

}  // namespace paratune
