#include "agents/session/baseline_preflight.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <tuple>
#include <vector>

#include "base/strings.h"

namespace paratune {

namespace {

// Value index of each search parameter in `c` (-1 when a value is not among the allowed).
std::vector<int> ValueIndex(const std::vector<SearchParameter>& params, const Config& c) {
  std::vector<int> out;
  for (const auto& p : params) {
    int idx = -1;
    auto it = c.find(p.name);
    for (size_t i = 0; it != c.end() && i < p.values.size(); ++i) {
      if (p.values[i] == it->second) idx = static_cast<int>(i);
    }
    out.push_back(idx);
  }
  return out;
}

// The nearest valid point whose predicted peak plus the margin fits, or -1.
int64_t NearestFeasible(const Config& baseline, const SearchSpaceIndex& space,
                        const CalibratedPredictor& predictor, double capacity, double margin) {
  const std::vector<int> base = ValueIndex(space.parameters(), baseline);
  int64_t best = -1;
  std::tuple<int, int, double> best_key;
  for (size_t idx : space.valid()) {
    const SpacePoint& pt = space.points()[idx];
    const PointPrediction pred = predictor.Predict(idx);
    if (pred.peak_memory_gib + margin > pred.UsableGiB(capacity)) continue;
    int changed = 0, steps = 0;
    for (size_t i = 0; i < base.size() && i < pt.value_index.size(); ++i) {
      const int d = std::abs(static_cast<int>(pt.value_index[i]) - base[i]);
      changed += d != 0 ? 1 : 0;
      steps += base[i] < 0 ? 1 : d;
    }
    const std::tuple<int, int, double> key{changed, steps, -predictor.Utility(pred.objective)};
    if (best < 0 || key < best_key) {
      best = static_cast<int64_t>(idx);
      best_key = key;
    }
  }
  return best;
}

}  // namespace

nlohmann::json BaselinePreflight::ToJson() const {
  nlohmann::json j = {{"rejected", rejected},
                      {"config", ConfigToJson(config)},
                      {"reason", reason},
                      {"predictedPeakMemoryGiB", RoundTo(predicted_peak_gib, 2)},
                      {"capacityGiB", RoundTo(capacity_gib, 2)},
                      {"uncertaintyGiB", RoundTo(uncertainty_gib, 2)},
                      {"intervalGiB", RoundTo(interval_gib, 2)},
                      {"verdict", verdict}};
  if (!constraint.empty()) j["constraint"] = constraint;
  if (start) {
    j["startedFrom"] = {{"config", ConfigToJson(*start)},
                        {"predictedPeakMemoryGiB", RoundTo(start_peak_gib, 2)},
                        {"changedParameters", start_changed_parameters}};
  }
  return j;
}

BaselinePreflight CheckBaseline(const Config& baseline, const SearchSpaceIndex& space,
                                const PlannerModel& model, const CalibratedPredictor& predictor) {
  BaselinePreflight v;
  v.config = baseline;
  v.capacity_gib = model.CapacityGiB();
  v.uncertainty_gib = predictor.calibration().memory_margin_gib;
  const std::vector<std::string> violations = model.Violations(baseline);
  if (!violations.empty()) {
    v.rejected = true;
    v.verdict = "does-not-fit";
    v.constraint = violations.front();
    v.reason = "the baseline " + ConfigKey(baseline) + " breaks a constraint: " + v.constraint;
  } else {
    const PointPrediction pred = predictor.PredictConfig(baseline, model);
    v.predicted_peak_gib = pred.peak_memory_gib;
    v.capacity_gib = pred.UsableGiB(v.capacity_gib);
    // Contract section 14: rejected only when it does not fit even at the optimistic end, the
    // larger of the loop's calibrated margin and the model's interval for this framework
    // profile (agents/model/interval.h) below the prediction.
    const Estimate cold = model.EstimateUncalibrated(baseline);
    if (cold.peak_memory_gib > 0 && cold.peak_memory_range.low > 0) {
      const double downside = 1.0 - cold.peak_memory_range.low / cold.peak_memory_gib;
      v.interval_gib = std::max(0.0, downside * v.predicted_peak_gib);
    }
    const double optimistic = v.predicted_peak_gib - std::max(v.uncertainty_gib, v.interval_gib);
    v.verdict = v.predicted_peak_gib + predictor.calibration().memory_margin_gib > v.capacity_gib
                    ? "marginal"
                    : "fits";
    if (optimistic > v.capacity_gib) {
      v.rejected = true;
      v.verdict = "does-not-fit";
      v.reason =
          "the baseline " + ConfigKey(baseline) + " is predicted to peak at " +
          Fixed(v.predicted_peak_gib, 1) + " GiB, more than the " + Fixed(v.capacity_gib, 1) +
          " GiB" + " device capacity even at the optimistic end of the estimate (" +
          Fixed(optimistic, 1) + " GiB: the model's calibrated uncertainty " +
          Fixed(v.uncertainty_gib, 1) + " GiB, its interval " + Fixed(v.interval_gib, 1) + " GiB)";
    }
  }
  if (!v.rejected) return v;
  const int64_t idx =
      NearestFeasible(baseline, space, predictor, model.CapacityGiB(), v.uncertainty_gib);
  if (idx < 0) {
    v.reason += "; no configuration of the search space is predicted to fit";
    return v;
  }
  const SpacePoint& pt = space.points()[static_cast<size_t>(idx)];
  v.start = pt.config;
  v.start_peak_gib = predictor.Predict(static_cast<size_t>(idx)).peak_memory_gib;
  for (const auto& [k, value] : pt.config) {
    auto it = baseline.find(k);
    v.start_changed_parameters += (it == baseline.end() || !(it->second == value)) ? 1 : 0;
  }
  v.reason += "; the campaign starts from the nearest feasible configuration " + pt.key + " (" +
              std::to_string(v.start_changed_parameters) + " parameter(s) changed, predicted " +
              Fixed(v.start_peak_gib, 1) + " GiB)";
  return v;
}

bool BaselineRejected(const MessagePool& pool) {
  for (const auto& r : pool.rejected()) {
    if (r.proposed_by == "baseline") return true;
  }
  return false;
}

}  // namespace paratune
