// The simulated cluster (agents/sim) as the loop's TrialRunner.
#ifndef PARATUNE_AGENTS_SIM_CAMPAIGN_SIM_RUNNER_H_
#define PARATUNE_AGENTS_SIM_CAMPAIGN_SIM_RUNNER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "agents/core/campaign.h"
#include "agents/sim_campaign/simulation.h"
#include "base/status.h"

namespace paratune {

// The simulated cluster (agents/sim) for `spec` with a hidden reality drawn from `seed`.
// `node_faults` (agents/sim/node_faults.h text form, "" for none) are the cluster's hidden sick
// nodes, played on the nodes RunOn names; kInvalidArgument naming --node-faults when malformed.
// `reality`: "perturbed" (the model with perturbed constants) or "structural" (a reality whose
// form differs from the model); kInvalidArgument naming --reality otherwise.
Result<std::unique_ptr<TrialRunner>> MakeSimulatedClusterRunner(
    const CampaignSpec& spec, uint64_t seed, const std::string& node_faults = "",
    const std::string& reality = "perturbed");

}  // namespace paratune

#endif  // PARATUNE_AGENTS_SIM_CAMPAIGN_SIM_RUNNER_H_
