// The TrialRun spec (contract section 5) as a typed struct with one JSON mapping. The campaign
// reconciler builds it from the loop's trial record and writes it once (ToJson); the trial
// reconciler reads it once (TrialRunSpecFromJson) and uses the typed fields. The wire format is
// the contract's; this mapping does not change it. Pure functions; thread-safe.
#ifndef PARATUNE_CONTROLLERS_TRIAL_RUN_SPEC_H_
#define PARATUNE_CONTROLLERS_TRIAL_RUN_SPEC_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "base/status.h"

namespace paratune::controllers {

struct TrialRunSpec {
  std::string campaign_name;  // spec.campaignRef.name: the campaign in the TrialRun's namespace
  int64_t iteration = 0;      // the loop's iteration that proposed it (1 = the baseline)
  Config config;              // spec.config: one value for each parameter of the search space
  // What the agents said and predicted, as their own types serialize them (Proposal::ToJson,
  // Prediction::ToJson; only the numbers of the prediction: the schema types them so).
  nlohmann::json proposal = nlohmann::json::object();
  nlohmann::json prediction = nlohmann::json::object();
  std::string retry_of;                  // the trial this one re-runs, when it is a retry
  std::vector<std::string> avoid_nodes;  // nodes this trial must not run on (its own list)
};

// The typed spec of a TrialRun's `spec` object. kInvalidArgument naming the field
// ("spec.config.tp: ...", "spec.iteration: ...") when a field has the wrong type; absent
// fields take the defaults above.
Result<TrialRunSpec> TrialRunSpecFromJson(const nlohmann::json& spec);

// The wire form: keys for empty optional fields (retryOf, avoidNodes) are left out.
nlohmann::json ToJson(const TrialRunSpec& spec);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_TRIAL_RUN_SPEC_H_
