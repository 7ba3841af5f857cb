// `paratune tune --local` as a library function: the operator's agent loop (agents/session
// TuningSession: pre-flight, collectors, Diagnostician, coordinator, message pool) driven the way
// the campaign reconciler drives it (controllers/campaign_reconciler.h): while fewer than the free
// slots run and the coordinator does not stop, ProposeNext; the pool is saved BEFORE the trials
// start; each finished trial goes to RecordOutcome (metrics through the campaign's collector,
// failures through the Diagnostician) and the pool is saved again. Trials run as local processes
// (cli/local_trials.h). Early stopping reads the running trials' logs every
// early_stop_interval and ends a trial that cannot beat the best (agents/trials/early_stopping.h,
// the operator's rule); it is ingested as a measured success with its partial metrics, as the
// operator ingests an EarlyStopped TrialRun.
//
// Resume: the pool lives in DIR/pool.json. Run again with the same DIR, the session resumes from
// it (finished trials are not run again); trials that were open when the run was interrupted
// (Pending in the pool) are started again first, under the same names, as the reconciler creates
// every open trial that has no TrialRun.
#ifndef PARATUNE_CLI_LOCAL_CAMPAIGN_H_
#define PARATUNE_CLI_LOCAL_CAMPAIGN_H_

#include <chrono>
#include <csignal>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "agents/core/campaign.h"
#include "agents/sim_campaign/simulation.h"
#include "cli/local_trials.h"

namespace paratune::cli {

struct LocalCampaignOptions {
  std::string out_dir;  // DIR: pool.json and trials/
  std::string strategy = "builtin";
  // Builds the engine named by `strategy` (the CLI's MakeEngineFactory); null: the built-in
  // engines only.
  EngineFactory engine_factory;
  uint64_t seed = 1;
  // How often running trials' logs are read for early stopping (spec.budget.earlyStopping).
  std::chrono::milliseconds early_stop_interval{5000};
  // Set (by a signal handler) to stop: running trials are killed, the pool is saved with them
  // open, and the result says interrupted. Borrowed; may be null.
  const volatile std::sig_atomic_t* interrupted = nullptr;
};

struct LocalCampaignResult {
  nlohmann::json json;  // the simulate JSON (contract section 6) plus "local"
  std::optional<StopDecision> stop;
  bool interrupted = false;
};

// Runs `spec` (budget already overridden by --max-trials) to its stop on `executor` (borrowed).
// Errors: kInvalidArgument naming the field for a campaign that cannot run, or a pool in DIR
// that belongs to another campaign or does not parse (naming --out); kInternal when the pool
// cannot be written.
Result<LocalCampaignResult> RunLocalCampaign(const CampaignSpec& spec,
                                             const LocalCampaignOptions& options,
                                             LocalTrialExecutor* executor,
                                             const TrialObserver& observer);

}  // namespace paratune::cli

#endif  // PARATUNE_CLI_LOCAL_CAMPAIGN_H_
