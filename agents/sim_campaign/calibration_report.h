// `paratune calibrate` as a library function: what the model learns from measured trials (the
// fitted memory and time terms before and after, and per configuration the cold and calibrated
// predictions next to what was measured). Also used by the replay benchmark to score the fit/OOM
// calls after the first k trials of a campaign.
#ifndef PARATUNE_AGENTS_SIM_CAMPAIGN_CALIBRATION_REPORT_H_
#define PARATUNE_AGENTS_SIM_CAMPAIGN_CALIBRATION_REPORT_H_

#include <nlohmann/json.hpp>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/predict/planner_model.h"
#include "agents/predict/predictor.h"
#include "agents/sim_campaign/replay.h"
#include "agents/trials/message_pool.h"
#include "base/status.h"

namespace paratune {

// How the learned state called the measured configurations.
struct FitScore {
  int right = 0;               // fit/OOM called as measured
  int total = 0;               // measured configurations with a fit/OOM verdict
  int ooms_called_fit = 0;     // ran out of memory, predicted to fit
  double step_error_mean = 0;  // mean |predicted/measured - 1| of step time where it ran
  double peak_error_mean = 0;  // mean |predicted/measured - 1| of peak memory where it ran
};

// Scores the predictor learned from `pool` (global terms, no local residuals) on `measured`.
FitScore ScoreFit(const SearchSpaceIndex& space, const PlannerModel& model, const MessagePool& pool,
                  const ObjectiveSpec& objective, const std::vector<MeasuredTrial>& measured);

// The calibrate JSON: {"campaign", "trials", "before": {terms}, "after": {terms},
// "configurations": [{config, measured, before, after}], "fitCalls": {before, after}}.
// kInvalidArgument naming the field when the campaign cannot be modelled.
Result<nlohmann::json> CalibrationReport(const CampaignSpec& spec,
                                         const std::vector<MeasuredTrial>& measured);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_SIM_CAMPAIGN_CALIBRATION_REPORT_H_
