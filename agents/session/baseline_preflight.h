// Pre-flight of the campaign's own baseline (spec.baseline). Proposals pass the Validator;
// the baseline, named by a person, gets the benefit of the doubt within the model's memory
// uncertainty, but not more: it is not launched when it breaks a constraint of the model
// (divisibility, heads, layers, ...) or when even the optimistic end of its predicted peak (the
// prediction less the larger of the Validator's learned margin and the model's interval for the
// framework profile) exceeds the device capacity. A marginal baseline is launched. The campaign
// then starts from the nearest feasible configuration: the valid point of the search space that
// changes the fewest parameters (then the fewest value steps, then the best prediction) and
// passes the Validator's memory check. Pure functions; thread-safe.
#ifndef PARATUNE_AGENTS_SESSION_BASELINE_PREFLIGHT_H_
#define PARATUNE_AGENTS_SESSION_BASELINE_PREFLIGHT_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agents/core/config.h"
#include "agents/predict/planner_model.h"
#include "agents/predict/predictor.h"
#include "agents/trials/message_pool.h"

namespace paratune {

struct BaselinePreflight {
  bool rejected = false;
  Config config;           // the campaign's baseline
  std::string reason;      // one sentence with the numbers ("" when it passes)
  std::string constraint;  // the broken constraint ("" when memory is the reason)
  double predicted_peak_gib = 0;
  double capacity_gib = 0;
  double uncertainty_gib = 0;  // the calibrated memory uncertainty (Validator margin)
  // How far below the prediction the optimistic end of the model's interval lies (contract
  // section 14); the baseline is rejected only beyond the larger of the two.
  double interval_gib = 0;
  std::string verdict;          // fits | marginal (launched) | does-not-fit (rejected)
  std::optional<Config> start;  // nearest feasible configuration (rejected only)
  double start_peak_gib = 0;
  int start_changed_parameters = 0;
  // {rejected, config, reason, constraint?, predictedPeakMemoryGiB, capacityGiB,
  //  uncertaintyGiB, intervalGiB, verdict, startedFrom?: {config, predictedPeakMemoryGiB,
  //  changedParameters}}
  nlohmann::json ToJson() const;
};

// Checks `baseline` with `predictor` (the campaign's calibration when it starts).
BaselinePreflight CheckBaseline(const Config& baseline, const SearchSpaceIndex& space,
                                const PlannerModel& model, const CalibratedPredictor& predictor);

// True when `pool` records the baseline's rejection (proposed_by "baseline").
bool BaselineRejected(const MessagePool& pool);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_SESSION_BASELINE_PREFLIGHT_H_
