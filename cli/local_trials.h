// LocalTrialExecutor: a campaign's trials as local processes, for `paratune tune --local`
// (contract section 14). Each trial runs the first container of spec.trialTemplate
// (command + args, Kubernetes `$(VAR)` expansion, the container's literal env) with the
// environment of contract section 4 (agents/trials/trial_env.h: PARATUNE_*, and the one-node
// rendezvous MASTER_ADDR=127.0.0.1 with a free MASTER_PORT), its `nvidia.com/gpu` request
// mapped to a CUDA_VISIBLE_DEVICES slice of this machine's GPUs (CUDA_VISIBLE_DEVICES="" for a
// trial that asks for none), its stdout and stderr kept in DIR/trials/<trial>.log and its
// termination message in DIR/trials/<trial>.termination-log (PARATUNE_TERMINATION_LOG).
// A trial running past spec.budget.trialTimeout is ended with its process group (SIGTERM, then
// SIGKILL after a grace period) and fails with the Job's DeadlineExceeded evidence.
//
// Thread-safety: none; one owner starts, reaps and kills.
#ifndef PARATUNE_CLI_LOCAL_TRIALS_H_
#define PARATUNE_CLI_LOCAL_TRIALS_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/session/tuning_session.h"
#include "base/status.h"
#include "cli/local_process.h"

namespace paratune::cli {

struct LocalTrialOptions {
  std::string out_dir;                         // DIR: logs under DIR/trials
  std::vector<std::string> devices;            // this machine's GPUs, CUDA_VISIBLE_DEVICES ids
  std::string work_dir;                        // the trials' working directory ("" : the tuner's)
  std::string extra_path;                      // prepended to the trials' PATH ("" : none)
  std::chrono::milliseconds kill_grace{5000};  // SIGTERM to SIGKILL
};

class LocalTrialExecutor {
 public:
  // kInvalidArgument naming the field for a campaign that cannot run here: more than one node,
  // TPUs, no container or no command/args in the template, a program that is not here, a
  // non-numeric nvidia.com/gpu, or more GPUs per trial than `devices` holds.
  static Result<std::unique_ptr<LocalTrialExecutor>> Create(const CampaignSpec& spec,
                                                            LocalTrialOptions options);
  ~LocalTrialExecutor();  // kills what still runs
  LocalTrialExecutor(const LocalTrialExecutor&) = delete;
  LocalTrialExecutor& operator=(const LocalTrialExecutor&) = delete;

  // Trials that may run side by side: spec.budget.parallelTrials, capped by devices / GPUs per
  // trial (at least 1).
  int64_t Slots() const { return slots_; }
  int64_t GpusPerTrial() const { return gpus_per_trial_; }
  size_t Running() const { return running_.size(); }

  // Starts `plan` on free devices. FailedPrecondition when no slot is free; a command that cannot
  // start is not an error here: it comes back from Reap as a failed trial with the reason in its
  // log (exit 127), as a container whose executable is missing.
  Status Start(const TrialPlan& plan);
  // The trials that finished, waiting up to `wait` for at least one; also ends (and returns) the
  // trials past their timeout. Never blocks longer than `wait` plus the kill grace.
  std::vector<TrialOutcome> Reap(std::chrono::milliseconds wait);
  // The name and log (its last 256 KiB) of every running trial, for early stopping.
  std::vector<std::pair<std::string, std::string>> RunningLogs() const;
  // Ends the running trial `name` with its process group and returns what it left (the log so
  // far; `succeeded` false, exit status of the kill); nullopt when no such trial runs.
  std::optional<TrialOutcome> Stop(const std::string& name);
  // Ends every running trial with its process group (SIGTERM, grace, SIGKILL); their outcomes
  // are dropped (the trials stay open in the pool and run again on resume).
  void KillAll();

 private:
  struct ActiveTrial;
  LocalTrialExecutor(const CampaignSpec& spec, LocalTrialOptions options);
  TrialOutcome Finish(ActiveTrial& r, int exit_status, bool timed_out);
  std::map<std::string, std::string> EnvFor(const TrialPlan& plan,
                                            const std::vector<std::string>& gpus) const;
  void EndGroups(std::vector<ActiveTrial*> victims);

  const CampaignSpec spec_;
  LocalTrialOptions options_;
  nlohmann::json container_;
  int64_t gpus_per_trial_ = 0;
  int64_t slots_ = 1;
  std::vector<std::string> free_devices_;
  std::vector<std::unique_ptr<ActiveTrial>> running_;
};

// GPUs requested by the first container of `spec`'s trial template (limits, else requests, of
// nvidia.com/gpu), else the campaign's devices per node for a GPU campaign, as the Job renderer
// requests them. kInvalidArgument naming the field for a value that is not a whole number.
Result<int64_t> TemplateGpuCount(const CampaignSpec& spec);

}  // namespace paratune::cli

#endif  // PARATUNE_CLI_LOCAL_TRIALS_H_
