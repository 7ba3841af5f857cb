#include "agents/model/interval.h"

#include <algorithm>
#include <cmath>

#include "agents/model/model_internal.h"

namespace paratune {

namespace {

// Each side of a learned band is at least this wide (log ratio, about 3%).
constexpr double kMinHalfWidth = 0.03;
// Fewer residuals than this: the profile keeps the default band for that metric.
constexpr int kMinPoints = 3;

Band Learn(const std::vector<double>& r, const Band& fallback) {
  if (static_cast<int>(r.size()) < kMinPoints) return fallback;
  Band b;
  b.low = std::min(-kMinHalfWidth, *std::min_element(r.begin(), r.end()));
  b.high = std::max(kMinHalfWidth, *std::max_element(r.begin(), r.end()));
  b.points = static_cast<int>(r.size());
  return b;
}

Estimate::Range Scaled(double v, const Band& b) {
  return {v * std::exp(b.low), v * std::exp(b.high)};
}

}  // namespace

std::string IntervalProfile(const Workload& w) {
  if (w.IsTpu()) return "maxtext";
  switch (internal::ProfileOf(w)) {
    case internal::Profile::kTransformers:
      return "transformers";
    case internal::Profile::kTorchtitan:
      return "torchtitan";
    case internal::Profile::kDeepSpeed:
      return "deepspeed";
    case internal::Profile::kMegatron:
      break;
  }
  return "megatron";
}

ProfileBands DefaultBands() {
  ProfileBands b;
  b.step_time = {std::log(1 / 1.35), std::log(1.35), 0};
  b.memory = {std::log(1 / 1.25), std::log(1.25), 0};
  return b;
}

IntervalTable FitIntervals(const std::vector<Residual>& residuals) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_profile;
  for (const auto& r : residuals) {
    auto& slot = by_profile[r.profile];
    (r.memory ? slot.second : slot.first).push_back(r.log_ratio);
  }
  IntervalTable out;
  const ProfileBands fallback = DefaultBands();
  for (const auto& [profile, rs] : by_profile) {
    out[profile] = {Learn(rs.first, fallback.step_time), Learn(rs.second, fallback.memory)};
  }
  return out;
}

void ApplyInterval(const IntervalTable& table, const Workload& w, Estimate* e) {
  auto it = table.find(IntervalProfile(w));
  const ProfileBands b = it != table.end() ? it->second : DefaultBands();
  e->step_time_range = Scaled(e->step_time_seconds, b.step_time);
  // Throughput is the inverse of step time: its optimistic end is the short step's.
  e->tokens_range = {e->tokens_per_second_per_device * std::exp(-b.step_time.high),
                     e->tokens_per_second_per_device * std::exp(-b.step_time.low)};
  e->peak_memory_range = Scaled(e->peak_memory_gib, b.memory);
  if (!e->violations.empty() || e->peak_memory_gib <= 0 ||
      e->peak_memory_range.low > e->capacity_gib) {
    e->verdict = "does-not-fit";
  } else if (e->peak_memory_range.high > e->capacity_gib) {
    e->verdict = "marginal";
  } else {
    e->verdict = "fits";
  }
  e->fits = e->verdict != "does-not-fit";
}

}  // namespace paratune

namespace paratune {

const IntervalTable& DefaultIntervals() {
  // Learned by bench/model_published_bench.cc ("Intervals") from every source together; the
  // points each band rests on in the third field. Refit with that benchmark when the model or
  // its fit data change (tests/model/interval_test.cc fails until then).
  static const IntervalTable kTable = {
      {"maxtext", {{-0.091, 0.108, 8}, {-0.223, 0.223, 0}}},
      {"megatron", {{-0.167, 0.089, 31}, {-0.223, 0.223, 0}}},
      {"torchtitan", {{-0.156, 0.185, 14}, {-0.030, 0.098, 10}}},
      {"transformers", {{-0.109, 0.077, 9}, {-0.030, 0.030, 9}}},
  };
  return kTable;
}

}  // namespace paratune
