// Performance anomalies of succeeded trials (api.md section 10): a trial that ran to completion
// but far below what the calibrated model predicts for its configuration, or whose logged step
// times drift upward or spike. Such a result says more about the node than about the
// configuration, so the agent loop does not learn from it and the node ledger scores its nodes.
//
// Pure functions and value types: thread-safe.
#ifndef PARATUNE_AGENTS_HEALTH_ANOMALY_H_
#define PARATUNE_AGENTS_HEALTH_ANOMALY_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace paratune::health {

enum class AnomalyKind { kSlowerThanPredicted, kStepTimeDrift, kStepTimeSpikes };
// "SlowerThanPredicted" | "StepTimeDrift" | "StepTimeSpikes".
const char* AnomalyKindName(AnomalyKind k);
// The inverse of AnomalyKindName; kInvalidArgument naming `field` for anything else.
Result<AnomalyKind> ParseAnomalyKind(const std::string& s, const std::string& field = "kind");

struct Anomaly {
  AnomalyKind kind = AnomalyKind::kSlowerThanPredicted;
  // ratio: observed/expected in "goodness" terms (< 1 is worse). For step-time anomalies
  // observed/expected are seconds (late median or worst spike vs. the early median) and ratio is
  // expected/observed.
  double observed = 0, expected = 0, ratio = 0;
  std::string summary;  // one sentence for people
  std::vector<std::string> node_names;
  // The api.md section 10 `anomaly` object: {kind, observed, expected, ratio, summary, nodeNames}.
  nlohmann::json ToJson() const;
  // The inverse of ToJson; errors name the field ("anomaly.kind: must be one of ...").
  static Result<Anomaly> FromJson(const nlohmann::json& j);
};

struct AnomalyThresholds {
  double slow_ratio = 0.75;         // objective below this fraction of the prediction
  int min_calibration_samples = 2;  // healthy successes before predictions are trusted
  double drift_ratio = 1.15;        // late median step time / early median
  double spike_ratio = 1.8;         // a step this many times the median is a spike
  int min_spikes = 2;               // spikes needed to flag a run
  size_t min_steps = 5;             // logged intervals needed (after the warm-up)
  // A run is slower than predicted only when it is also this many standard deviations of the
  // prediction's own spread (log scale) below it: a prediction far from any observation, or
  // from a campaign whose trials scatter, is no sharp bar.
  double spread_z = 3.0;
};

// Drift/spikes from per-logged-interval step times. The first `warmup_intervals` entries are the
// framework's warm-up and ignored (the collectors count them by step number: MaxText's first two
// steps, torchtitan's compile steps, Megatron's first logged interval; CollectedMetrics::
// warmup_intervals); at least one is always ignored. nullopt: healthy or too short (fewer than
// min_steps after the warm-up). Node names are left empty (the caller knows them).
std::optional<Anomaly> DetectStepTimeAnomaly(const std::vector<double>& step_times,
                                             const AnomalyThresholds& t = {},
                                             size_t warmup_intervals = 1);
// Far below the campaign's calibrated prediction (never the cold model: callers pass what the
// campaign learned from its own trials, and calibration_samples of them); nullopt when healthy,
// when calibration_samples < min, or when either value is not a positive finite number.
// `log_spread` is the standard deviation of log(observed / predicted) the prediction carries
// (its measured residual spread and distance from observed configurations): the run must be
// below slow_ratio AND more than spread_z * log_spread below the prediction in log terms.
std::optional<Anomaly> DetectSlowerThanPredicted(const std::string& metric, double observed,
                                                 double expected, bool higher_is_better,
                                                 int calibration_samples,
                                                 const AnomalyThresholds& t = {},
                                                 double log_spread = 0);

}  // namespace paratune::health

#endif  // PARATUNE_AGENTS_HEALTH_ANOMALY_H_
