#include "controllers/collectors/log_sources.h"

#include <algorithm>

#include "base/utf8.h"

namespace paratune::controllers {

MetricsRank MetricsRankFor(const std::string& collector) {
  if (collector == "megatron-lm") return MetricsRank::kLast;
  if (collector == "maxtext" || collector == "torchtitan" || collector == "transformers") {
    return MetricsRank::kFirst;
  }
  return MetricsRank::kAny;
}

const char* MetricsRankName(MetricsRank r) {
  switch (r) {
    case MetricsRank::kFirst:
      return "first";
    case MetricsRank::kLast:
      return "last";
    case MetricsRank::kAny:
      break;
  }
  return "any";
}

std::vector<size_t> PodReadOrder(const std::vector<int64_t>& ranks, MetricsRank convention) {
  std::vector<size_t> order(ranks.size());
  for (size_t i = 0; i < ranks.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&ranks](size_t a, size_t b) { return ranks[a] < ranks[b]; });
  if (convention == MetricsRank::kLast && !order.empty()) {
    // The highest rank first; the others keep their ascending order.
    std::rotate(order.begin(), order.end() - 1, order.end());
  }
  return order;
}

std::string BoundedLog(std::string raw, size_t limit_bytes) {
  if (limit_bytes > 0 && raw.size() >= limit_bytes) {
    const size_t nl = raw.rfind('\n');
    raw.resize(nl == std::string::npos ? 0 : nl + 1);
  }
  return Utf8Sanitize(raw);
}

}  // namespace paratune::controllers
