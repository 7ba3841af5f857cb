// CompactPoolJson and the content-defined chunking of ConfigMapPoolStore (message_pool_store.h).
#include <algorithm>
#include <array>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "controllers/message_pool_store.h"

namespace paratune::controllers {

namespace {

using kube::Json;

void Truncate(Json* obj, const char* key, size_t keep) {
  if (!obj->is_object() || !obj->contains(key) || !(*obj)[key].is_string()) return;
  std::string s = (*obj)[key].get<std::string>();
  if (s.size() <= keep) return;
  (*obj)[key] = keep == 0 ? std::string() : "[compacted] ..." + s.substr(s.size() - keep);
}

size_t DumpSize(const Json& j) { return j.dump(-1, ' ', true).size(); }

// Newest entries keep their full text: the agents read recent history most.
constexpr size_t kKeepRecent = 10;
// Trials that keep everything at level 2: the newest ones (what the strategist builds on).
constexpr size_t kKeepRecentTrials = 50;
// Entries of the other histories kept at level 2.
constexpr size_t kKeepRejected = 500;
constexpr size_t kKeepMessages = 100;

// Level 1: text of older LLM exchanges and failure evidence shortened, then the oldest
// exchanges dropped.
bool ShortenText(Json* pool, size_t max_bytes) {
  Json& exchanges = (*pool)["llmExchanges"];
  Json& trials = (*pool)["trials"];
  for (size_t keep : {size_t{4000}, size_t{1000}, size_t{200}}) {
    if (exchanges.is_array() && exchanges.size() > kKeepRecent) {
      for (size_t i = 0; i + kKeepRecent < exchanges.size(); ++i) {
        Truncate(&exchanges[i], "prompt", keep);
        Truncate(&exchanges[i], "reply", keep);
      }
    }
    if (trials.is_array()) {
      for (auto& t : trials) {
        if (t.is_object() && t.contains("failure")) Truncate(&t["failure"], "evidence", keep);
      }
    }
    if (DumpSize(*pool) <= max_bytes) return true;
  }
  while (exchanges.is_array() && !exchanges.empty() && DumpSize(*pool) > max_bytes) {
    exchanges.erase(exchanges.begin());
  }
  return DumpSize(*pool) <= max_bytes;
}

// The trials every later decision rests on: the best of each objective direction is not
// known here, so the trials with the highest and the lowest objective metric among the
// succeeded ones, the baseline (iteration 0) and the newest kKeepRecentTrials.
std::set<size_t> DecisiveTrials(const Json& trials) {
  std::set<size_t> keep;
  if (!trials.is_array()) return keep;
  const size_t n = trials.size();
  for (size_t i = n > kKeepRecentTrials ? n - kKeepRecentTrials : 0; i < n; ++i) keep.insert(i);
  double lo = 0, hi = 0;
  size_t lo_i = n, hi_i = n;
  for (size_t i = 0; i < n; ++i) {
    const Json& t = trials[i];
    if (!t.is_object()) continue;
    if (t.value("iteration", int64_t{-1}) == 0) keep.insert(i);
    const Json& metrics = t.value("metrics", Json());
    if (!metrics.is_object()) continue;
    for (const auto& [k, v] : metrics.items()) {
      if (!v.is_number()) continue;
      const double x = v.get<double>();
      if (hi_i == n || x > hi) hi = x, hi_i = i;
      if (lo_i == n || x < lo) lo = x, lo_i = i;
      break;  // the first metric is enough to rank; the rest are kept in every record anyway
    }
  }
  if (hi_i < n) keep.insert(hi_i);
  if (lo_i < n) keep.insert(lo_i);
  return keep;
}

// Level 2: the prose of older, non-decisive records goes (their configs, phases, metrics,
// predictions and failure categories stay: what calibration and the validator learn from);
// the oldest rejections and notes beyond a bound are dropped.
bool StripOldRecords(Json* pool, size_t max_bytes) {
  Json& trials = (*pool)["trials"];
  const std::set<size_t> keep = DecisiveTrials(trials);
  if (trials.is_array()) {
    for (size_t i = 0; i < trials.size(); ++i) {
      if (keep.count(i) > 0 || !trials[i].is_object()) continue;
      Json& t = trials[i];
      Truncate(&t, "rationale", 0);
      Truncate(&t, "change", 0);
      if (t.contains("proposal") && t["proposal"].is_object()) {
        Truncate(&t["proposal"], "rationale", 0);
        Truncate(&t["proposal"], "expectedImpact", 0);
      }
      if (t.contains("failure") && t["failure"].is_object()) {
        Truncate(&t["failure"], "evidence", 0);
        Truncate(&t["failure"], "summary", 120);
      }
    }
  }
  Json& analyses = (*pool)["analyses"];
  if (analyses.is_array()) {
    for (size_t i = 0; i + kKeepRecent < analyses.size(); ++i) {
      Truncate(&analyses[i], "summary", 0);
      if (analyses[i].is_object()) analyses[i]["suggestions"] = Json::array();
    }
  }
  for (auto [key, bound] : {std::pair{"rejected", kKeepRejected}, {"messages", kKeepMessages}}) {
    Json& list = (*pool)[key];
    if (list.is_array() && list.size() > bound) {
      list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(list.size() - bound));
    }
  }
  if (pool->contains("messages") && (*pool)["messages"].is_null()) pool->erase("messages");
  return DumpSize(*pool) <= max_bytes;
}

// 256 pseudo-random words for the gear hash (splitmix64 from a fixed seed: the same cut points
// in every process, so unchanged chunks keep their names across restarts).
const std::array<uint64_t, 256>& Gear() {
  static const std::array<uint64_t, 256> table = [] {
    std::array<uint64_t, 256> t{};
    uint64_t x = 0x9e3779b97f4a7c15ULL;
    for (auto& v : t) {
      uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
      v = z ^ (z >> 31);
    }
    return t;
  }();
  return table;
}

}  // namespace

PoolCompaction CompactPoolJsonLevel(Json* pool, size_t max_bytes) {
  if (DumpSize(*pool) <= max_bytes) return PoolCompaction::kNone;
  if (ShortenText(pool, max_bytes)) return PoolCompaction::kText;
  if (StripOldRecords(pool, max_bytes)) return PoolCompaction::kRecords;
  return PoolCompaction::kTooLarge;
}

bool CompactPoolJson(Json* pool, size_t max_bytes) {
  return CompactPoolJsonLevel(pool, max_bytes) != PoolCompaction::kTooLarge;
}

std::vector<std::string> ChunkPoolText(const std::string& text, size_t max_chunk) {
  std::vector<std::string> out;
  max_chunk = std::max<size_t>(max_chunk, 16);
  const size_t min_chunk = max_chunk / 8;
  // A cut where the rolling hash's low bits are zero: about min_chunk + 2^bits per chunk.
  size_t bits = 0;
  while ((size_t{2} << bits) <= std::max<size_t>(min_chunk, 1)) ++bits;
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  const auto& gear = Gear();
  size_t start = 0;
  uint64_t h = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    h = (h << 1) + gear[static_cast<unsigned char>(text[i])];
    const size_t len = i + 1 - start;
    if ((len >= min_chunk && (h & mask) == 0) || len >= max_chunk) {
      out.push_back(text.substr(start, len));
      start = i + 1;
      h = 0;
    }
  }
  if (start < text.size() || out.empty()) out.push_back(text.substr(start));
  return out;
}

std::string ChunkHash(const std::string& chunk) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  for (unsigned char c : chunk) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  static const char* kHex = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4) out[static_cast<size_t>(i)] = kHex[h & 0xf];
  return out;
}

}  // namespace paratune::controllers
