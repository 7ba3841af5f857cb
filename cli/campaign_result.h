// A campaign read from a cluster in the shape of `paratune simulate -o json` (the input of the
// report renderer, agents/report/report.h): the TuningCampaign, its TrialRuns (by iteration),
// best and baseline from status, the workload from spec. Used by `paratune report CAMPAIGN`;
// hack/campaign-report.sh does the same with kubectl and python. Pure; thread-safe.
#ifndef PARATUNE_CLI_CAMPAIGN_RESULT_H_
#define PARATUNE_CLI_CAMPAIGN_RESULT_H_

#include <nlohmann/json.hpp>
#include <vector>

#include "base/status.h"

namespace paratune::cli {

// `campaign` is a TuningCampaign object, `trial_runs` its TrialRun objects (any order).
// kInvalidArgument when the campaign has no metadata.name or spec.
Result<nlohmann::json> CampaignResultOf(const nlohmann::json& campaign,
                                        const std::vector<nlohmann::json>& trial_runs);

}  // namespace paratune::cli

#endif  // PARATUNE_CLI_CAMPAIGN_RESULT_H_
