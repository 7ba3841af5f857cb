// Early stopping of losing trials (issue 13, item 4): the decision, from what a running trial has
// logged so far and the campaign's best. Pure; thread-safe. Used by the operator's TrialRun
// reconciler (controllers/trial_early_stop.cc) and `paratune tune --local` alike.
//
// The rule. Over the n steady-state steps seen (warm-up dropped, as the collectors drop it),
// with mean step time m and sample standard deviation s, the relative noise of one step is
// cv = s / m and the relative standard error of the mean se = cv / sqrt(n). The best trial's
// mean carries a similar error, so the difference of the two has relative standard error
// sqrt(2) * se. The trial is stopped when even its optimistic objective, its step time shortened
// by margin = max(min_margin, z * sqrt(2) * se), is worse than the best's objective: for
// throughput metrics (mfu, TFLOP/s, tokens/s, all proportional to 1 / step time) when
// objective / (1 - margin) < best, for stepTimeSeconds when objective * (1 - margin) > best.
// With z = 3 and a 2% floor, a trial within noise of the best always runs to its end.
#ifndef PARATUNE_AGENTS_TRIALS_EARLY_STOPPING_H_
#define PARATUNE_AGENTS_TRIALS_EARLY_STOPPING_H_

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace paratune {

struct EarlyStopOptions {
  size_t min_steady_steps = 3;  // no decision on fewer logged steady steps
  double z = 3.0;               // standard errors the gap must exceed
  double min_margin = 0.02;     // relative margin never below this (systematic drift)
};

struct EarlyStopInput {
  std::vector<double> steady_step_times;  // seconds per step, warm-up dropped, log order
  double objective = 0;                   // the partial measurement's objective
  double best_objective = 0;              // the campaign's best so far (status.best.objective)
  bool maximize = true;                   // false for stepTimeSeconds
};

// The evidence a stopped TrialRun carries in status.earlyStop.
struct EarlyStopDecision {
  bool stop = false;
  size_t steps_seen = 0;
  double mean_step_seconds = 0;
  double noise = 0;                 // cv: relative standard deviation of one step
  double margin = 0;                // relative margin granted (see the rule)
  double projected_objective = 0;   // the objective the trial is heading to (its mean so far)
  double optimistic_objective = 0;  // the best it could plausibly still reach
  double best_objective = 0;
  std::string summary;  // one sentence for people, with the numbers

  nlohmann::json ToJson() const;
};

// Decides. Never stops without a best (best_objective <= 0), with fewer than min_steady_steps
// steps, or with a non-positive objective.
EarlyStopDecision DecideEarlyStop(const EarlyStopInput& in, const EarlyStopOptions& opt = {});

}  // namespace paratune

#endif  // PARATUNE_AGENTS_TRIALS_EARLY_STOPPING_H_
