#include "agents/health/anomaly.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/json_fields.h"
#include "base/strings.h"

namespace paratune::health {

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool PositiveFinite(double v) { return std::isfinite(v) && v > 0; }

}  // namespace

const char* AnomalyKindName(AnomalyKind k) {
  switch (k) {
    case AnomalyKind::kSlowerThanPredicted:
      return "SlowerThanPredicted";
    case AnomalyKind::kStepTimeDrift:
      return "StepTimeDrift";
    case AnomalyKind::kStepTimeSpikes:
      return "StepTimeSpikes";
  }
  return "SlowerThanPredicted";
}

Result<AnomalyKind> ParseAnomalyKind(const std::string& s, const std::string& field) {
  for (AnomalyKind k : {AnomalyKind::kSlowerThanPredicted, AnomalyKind::kStepTimeDrift,
                        AnomalyKind::kStepTimeSpikes}) {
    if (s == AnomalyKindName(k)) return k;
  }
  return Status::Invalid(field +
                         ": must be one of SlowerThanPredicted | StepTimeDrift | "
                         "StepTimeSpikes, got \"" +
                         s + "\"");
}

nlohmann::json Anomaly::ToJson() const {
  return {{"kind", AnomalyKindName(kind)},
          {"observed", RoundTo(observed, 4)},
          {"expected", RoundTo(expected, 4)},
          {"ratio", RoundTo(ratio, 4)},
          {"summary", summary},
          {"nodeNames", node_names}};
}

Result<Anomaly> Anomaly::FromJson(const nlohmann::json& j) {
  Anomaly a;
  JsonFields f(j, "anomaly");
  if (!j.is_object()) return Status::Invalid("anomaly: must be an object");
  PARATUNE_RETURN_IF_ERROR(
      f.CheckKnownKeys({"kind", "observed", "expected", "ratio", "summary", "nodeNames"}));
  if (!f.Has("kind")) return Status::Invalid("anomaly.kind: required");
  std::string kind;
  PARATUNE_RETURN_IF_ERROR(f.ReadString("kind", &kind));
  Result<AnomalyKind> k = ParseAnomalyKind(kind, f.Path("kind"));
  if (!k.ok()) return k.status();
  a.kind = *k;
  constexpr double kMax = 1e12;
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("observed", 0, kMax, &a.observed));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("expected", 0, kMax, &a.expected));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("ratio", 0, kMax, &a.ratio));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("summary", &a.summary));
  PARATUNE_RETURN_IF_ERROR(f.ReadStringList("nodeNames", &a.node_names));
  return a;
}

// Spikes are judged against the median of the whole run (robust to a few outliers); drift
// compares the median of the last third with the first third, so a single slow
// interval moves neither; the early reference is the fastest interval of the first third, so a
// slowdown that ramps in early (a GPU heating up) still shows its full size. Spikes are checked
// first: a flaky node's spikes are the stronger sign.
std::optional<Anomaly> DetectStepTimeAnomaly(const std::vector<double>& step_times,
                                             const AnomalyThresholds& t, size_t warmup_intervals) {
  const size_t skip = std::max<size_t>(1, warmup_intervals);
  if (step_times.size() < t.min_steps + skip) return std::nullopt;
  std::vector<double> steps(step_times.begin() + static_cast<std::ptrdiff_t>(skip),
                            step_times.end());
  for (double s : steps) {
    if (!PositiveFinite(s)) return std::nullopt;
  }
  double median = Median(steps);
  int spikes = 0;
  double worst = 0;
  for (double s : steps) {
    if (s > t.spike_ratio * median) ++spikes;
    worst = std::max(worst, s);
  }
  if (spikes >= t.min_spikes) {
    Anomaly a;
    a.kind = AnomalyKind::kStepTimeSpikes;
    a.observed = worst;
    a.expected = median;
    a.ratio = median / worst;
    a.summary = std::to_string(spikes) + " of " + std::to_string(steps.size()) +
                " logged step times spiked above " + Fixed(t.spike_ratio, 1) + "x" +
                " the median " + Significant(median, 3) + " s" + " (worst " +
                Significant(worst, 3) + " s" + ")";
    return a;
  }
  size_t third = std::max<size_t>(1, steps.size() / 3);
  double early = *std::min_element(steps.begin(), steps.begin() + third);
  double late = Median(std::vector<double>(steps.end() - third, steps.end()));
  if (late > t.drift_ratio * early) {
    Anomaly a;
    a.kind = AnomalyKind::kStepTimeDrift;
    a.observed = late;
    a.expected = early;
    a.ratio = early / late;
    a.summary = "step time drifted from " + Significant(early, 3) + " s" + " to " +
                Significant(late, 3) + " s" + " (" + "+" + Fixed((late / early - 1) * 100, 0) +
                "%" + ") during the run";
    return a;
  }
  return std::nullopt;
}

std::optional<Anomaly> DetectSlowerThanPredicted(const std::string& metric, double observed,
                                                 double expected, bool higher_is_better,
                                                 int calibration_samples,
                                                 const AnomalyThresholds& t, double log_spread) {
  if (calibration_samples < t.min_calibration_samples) return std::nullopt;
  if (!PositiveFinite(observed) || !PositiveFinite(expected)) return std::nullopt;
  double ratio = higher_is_better ? observed / expected : expected / observed;
  if (ratio >= t.slow_ratio) return std::nullopt;
  if (std::isfinite(log_spread) && log_spread > 0 && -std::log(ratio) <= t.spread_z * log_spread) {
    return std::nullopt;  // within what this prediction is known to miss by
  }
  Anomaly a;
  a.kind = AnomalyKind::kSlowerThanPredicted;
  a.observed = observed;
  a.expected = expected;
  a.ratio = ratio;
  a.summary = metric + " " + Significant(observed, 4) + " is " + Percent(ratio, 0) +
              " of the calibrated " + Significant(expected, 4) + " predicted for this " +
              "configuration: the run was slowed by its nodes, not by its parameters";
  return a;
}

}  // namespace paratune::health
