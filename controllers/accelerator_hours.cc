#include "controllers/accelerator_hours.h"

#include <cmath>

#include "base/strings.h"
#include "controllers/trial_run_status.h"

namespace paratune::controllers {

namespace {

using nlohmann::json;

}  // namespace

double AcceleratorHoursOf(int64_t devices, double wall_seconds) {
  if (devices <= 0 || !(wall_seconds > 0)) return 0;
  return RoundTo(static_cast<double>(devices) * wall_seconds / 3600.0, 6);
}

AcceleratorHours SumAcceleratorHours(const CampaignSpec& spec,
                                     const std::map<std::string, json>& trial_runs,
                                     SystemTime now) {
  AcceleratorHours out;
  const int64_t devices = spec.hardware.TotalDevices();
  double finished_sum = 0;
  int64_t finished = 0;
  std::vector<double> stopped;
  for (const auto& [name, tr] : trial_runs) {
    auto parsed = TrialRunStatusOf(tr);
    if (!parsed.ok()) continue;  // not a status the operator wrote: nothing to count
    const TrialRunStatus& st = *parsed;
    const bool open = st.phase == TrialRunPhase::kRunning || st.phase == TrialRunPhase::kPending;
    double h = 0;
    if (st.accelerator_hours) {
      h = *st.accelerator_hours;
    } else if (open) {
      SystemTime start;
      if (ParseRfc3339(st.start_time.value_or(""), &start)) {
        h = AcceleratorHoursOf(devices, std::chrono::duration<double>(now - start).count());
      }
    }
    if (!(h >= 0) || !std::isfinite(h)) h = 0;
    if (st.accelerator_hours) {
      out.per_trial[name] = RoundTo(h, 6);
      out.recorded += h;
    }
    out.spent += h;
    if (st.phase == TrialRunPhase::kSucceeded && h > 0) {
      finished_sum += h;
      ++finished;
    }
    if (st.phase == TrialRunPhase::kEarlyStopped) {
      ++out.early_stopped;
      stopped.push_back(h);
    }
  }
  out.spent = RoundTo(out.spent, 6);
  out.recorded = RoundTo(out.recorded, 6);
  const double mean = finished > 0 ? finished_sum / static_cast<double>(finished) : 0;
  out.expected_next =
      mean > 0
          ? mean
          : AcceleratorHoursOf(devices, static_cast<double>(spec.budget.trial_timeout_seconds));
  for (double h : stopped) out.saved_by_early_stopping += mean > h ? mean - h : 0;
  out.saved_by_early_stopping = RoundTo(out.saved_by_early_stopping, 6);
  return out;
}

bool AcceleratorBudgetReached(const CampaignSpec& spec, const AcceleratorHours& hours,
                              std::string* message) {
  const double max = spec.budget.max_accelerator_hours;
  if (max <= 0 || hours.spent + hours.expected_next <= max) return false;
  if (message != nullptr) {
    *message = "spec.budget.maxAcceleratorHours " + Significant(max, 3) + ": " +
               Significant(hours.spent, 3) +
               " accelerator-hours spent, and one more trial is expected to cost " +
               Significant(hours.expected_next, 3);
  }
  return true;
}

AcceleratorHoursDecision DecideAcceleratorHours(const CampaignSpec& spec,
                                                const AcceleratorHours& hours,
                                                const std::string& budget_message,
                                                const CampaignStatus& status) {
  AcceleratorHoursDecision d;
  d.hours.total = hours.recorded;
  d.hours.per_trial = hours.per_trial;
  d.hours.saved_by_early_stopping = hours.saved_by_early_stopping;
  if (spec.budget.max_accelerator_hours > 0) d.hours.max = spec.budget.max_accelerator_hours;
  d.early_stopped = hours.early_stopped;
  // With no proposal asked for, the loop reads an empty queue as SpaceExhausted: the budget is
  // the reason then. A stop of the loop's own (maxTrials, target, ...) is kept.
  if (budget_message.empty() || (status.phase != CampaignPhase::kRunning &&
                                 status.stop_reason != CampaignStopReason::kSpaceExhausted)) {
    return d;
  }
  if (status.trials && status.trials->running > 0) return d;
  d.stop = CampaignStop{CampaignStopReason::kAcceleratorHoursExhausted, budget_message};
  return d;
}

}  // namespace paratune::controllers
