// Okapi BM25 over short passages, built in (no search service). Terms are lower-cased runs of
// letters and digits; a few English stop words are dropped; light suffix stemming ("timeouts" ->
// "timeout"). Plain value type; const methods are thread-safe.
#ifndef PARATUNE_AGENTS_KNOWLEDGE_BM25_H_
#define PARATUNE_AGENTS_KNOWLEDGE_BM25_H_

#include <cstddef>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace paratune {

// Splits text into index terms (see file comment).
std::vector<std::string> Tokenize(const std::string& text);

class Bm25Index {
 public:
  explicit Bm25Index(double k1 = 1.2, double b = 0.75) : k1_(k1), b_(b) {}

  // Adds a passage; returns its index (0, 1, 2, ...).
  size_t Add(const std::string& text);
  void Clear();
  size_t size() const { return lengths_.size(); }

  // (passage index, score) of the k best passages with score > 0, best first; ties by index.
  std::vector<std::pair<size_t, double>> Search(const std::string& query, size_t k) const;

 private:
  double k1_, b_;
  // term -> postings (passage, term frequency)
  std::unordered_map<std::string, std::vector<std::pair<size_t, int>>> postings_;
  std::vector<int> lengths_;
  double total_length_ = 0;
};

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_BM25_H_
