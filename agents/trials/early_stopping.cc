#include "agents/trials/early_stopping.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/strings.h"

namespace paratune {

namespace {}  // namespace

nlohmann::json EarlyStopDecision::ToJson() const {
  return {{"stepsSeen", steps_seen},
          {"meanStepSeconds", RoundTo(mean_step_seconds, 6)},
          {"noise", RoundTo(noise, 6)},
          {"margin", RoundTo(margin, 6)},
          {"projectedObjective", RoundTo(projected_objective, 6)},
          {"optimisticObjective", RoundTo(optimistic_objective, 6)},
          {"bestObjective", RoundTo(best_objective, 6)},
          {"summary", summary}};
}

EarlyStopDecision DecideEarlyStop(const EarlyStopInput& in, const EarlyStopOptions& opt) {
  EarlyStopDecision d;
  d.steps_seen = in.steady_step_times.size();
  d.best_objective = in.best_objective;
  d.projected_objective = in.objective;
  const size_t n = d.steps_seen;
  if (n == 0) return d;
  double mean = 0;
  for (double t : in.steady_step_times) mean += t;
  mean /= static_cast<double>(n);
  double var = 0;
  for (double t : in.steady_step_times) var += (t - mean) * (t - mean);
  var = n > 1 ? var / static_cast<double>(n - 1) : 0;
  d.mean_step_seconds = mean;
  d.noise = mean > 0 ? std::sqrt(var) / mean : 0;
  const double se = d.noise / std::sqrt(static_cast<double>(n));
  d.margin = std::min(0.9, std::max(opt.min_margin, opt.z * std::sqrt(2.0) * se));
  d.optimistic_objective =
      in.maximize ? in.objective / (1.0 - d.margin) : in.objective * (1.0 - d.margin);
  if (n < opt.min_steady_steps || in.best_objective <= 0 || in.objective <= 0 || mean <= 0) {
    return d;
  }
  d.stop = in.maximize ? d.optimistic_objective < in.best_objective
                       : d.optimistic_objective > in.best_objective;
  if (d.stop) {
    d.summary = "after " + std::to_string(n) + " steady steps (mean " + Significant(mean, 4) +
                " s, noise " + Significant(100 * d.noise, 4) + "%) the trial heads to " +
                Significant(in.objective, 4) + "; even " + Significant(100 * d.margin, 4) +
                "% better (" + Significant(d.optimistic_objective, 4) +
                ") it cannot beat the best " + Significant(in.best_objective, 4);
  }
  return d;
}

}  // namespace paratune
