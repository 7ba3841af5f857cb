// Accelerator-hours (issue 13, item 5): what a campaign's trials spent, devices x wall time of
// each trial's pods, against spec.budget.maxAcceleratorHours. A finished TrialRun carries its
// own figure (status.acceleratorHours, written by the TrialRun reconciler); a running one counts
// devices x (now - status.startTime). Pure; thread-safe.
#ifndef PARATUNE_CONTROLLERS_ACCELERATOR_HOURS_H_
#define PARATUNE_CONTROLLERS_ACCELERATOR_HOURS_H_

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "agents/core/campaign.h"
#include "base/time_source.h"
#include "controllers/campaign_status.h"

namespace paratune::controllers {

struct AcceleratorHours {
  double spent = 0;     // all trials, running ones up to now (what the budget checks)
  double recorded = 0;  // finished trials only (their status.acceleratorHours): status total
  std::map<std::string, double> per_trial;  // finished trials, by TrialRun name
  double expected_next = 0;  // what one more trial is expected to cost (mean of finished ones,
                             // else devices x spec.budget.trialTimeout)
  double saved_by_early_stopping = 0;  // see EarlyStoppedSavings
  int64_t early_stopped = 0;
};

// devices x seconds / 3600, rounded to 1e-6 h.
double AcceleratorHoursOf(int64_t devices, double wall_seconds);

// Sums the TrialRuns (by name) of a campaign as of `now`. An early-stopped trial is counted as
// saving what the mean finished trial took beyond it (0 when no trial ran to its end). A
// TrialRun whose status does not read (TrialRunStatusOf) counts nothing.
AcceleratorHours SumAcceleratorHours(const CampaignSpec& spec,
                                     const std::map<std::string, nlohmann::json>& trial_runs,
                                     SystemTime now);

// True when spec.budget.maxAcceleratorHours is set and starting one more trial would go past
// it (spent + expected_next > max); `message` then says so with the numbers.
bool AcceleratorBudgetReached(const CampaignSpec& spec, const AcceleratorHours& hours,
                              std::string* message);

// What the hours mean for the campaign status (applied by CampaignStatus::Apply): its
// acceleratorHours ({total, perTrial, savedByEarlyStopping, max}: finished trials) and
// trials.earlyStopped. When `budget_message` is non-empty and no trial runs while `status` (as
// the session decided it) says Running (or SpaceExhausted: no proposal was asked for), the
// campaign stops: stopReason AcceleratorHoursExhausted with `budget_message`.
AcceleratorHoursDecision DecideAcceleratorHours(const CampaignSpec& spec,
                                                const AcceleratorHours& hours,
                                                const std::string& budget_message,
                                                const CampaignStatus& status);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_ACCELERATOR_HOURS_H_
