#include "controllers/collectors/log_sources.h"

#include <algorithm>
#include <cstdlib>

#include "base/utf8.h"

namespace paratune::controllers {

namespace {

using nlohmann::json;

constexpr const char* kIndexKey = "batch.kubernetes.io/job-completion-index";

std::string MetaValue(const json& pod, const char* map, const char* key) {
  if (!pod.is_object() || !pod.contains("metadata")) return "";
  const json& meta = pod["metadata"];
  if (!meta.is_object() || !meta.contains(map) || !meta[map].is_object()) return "";
  const json& m = meta[map];
  return m.contains(key) && m[key].is_string() ? m[key].get<std::string>() : "";
}

}  // namespace

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

int64_t PodRank(const json& pod) {
  std::string index = MetaValue(pod, "annotations", kIndexKey);
  if (index.empty()) index = MetaValue(pod, "labels", kIndexKey);
  if (index.empty() || index.size() > 9 ||
      !std::all_of(index.begin(), index.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return -1;
  }
  return std::atoll(index.c_str());
}

std::vector<size_t> PodReadOrder(const std::vector<json>& pods, const std::string& collector) {
  std::vector<size_t> order(pods.size());
  for (size_t i = 0; i < pods.size(); ++i) order[i] = i;
  std::vector<int64_t> rank(pods.size());
  for (size_t i = 0; i < pods.size(); ++i) rank[i] = PodRank(pods[i]);
  std::stable_sort(order.begin(), order.end(),
                   [&rank](size_t a, size_t b) { return rank[a] < rank[b]; });
  if (MetricsRankFor(collector) == MetricsRank::kLast && !order.empty()) {
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
