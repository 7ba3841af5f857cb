// The environment a trial's processes get (contract section 4), for every way a trial runs: the
// PARATUNE_* variables of the trial's configuration and campaign, the rendezvous variables of a
// one-node run, and Kubernetes' `$(VAR)` expansion of a container's command and args. The
// operator's Job renderer sets the same variables on the Pod (controllers/job_renderer.cc:
// TrialEnv); `paratune tune --local` sets them on local processes. Pure functions: thread-safe.
#ifndef PARATUNE_AGENTS_TRIALS_TRIAL_ENV_H_
#define PARATUNE_AGENTS_TRIALS_TRIAL_ENV_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/core/config.h"

namespace paratune {

struct TrialEnvVar {
  std::string name;
  std::string value;
};

// PARATUNE_CAMPAIGN, PARATUNE_TRIAL, PARATUNE_ITERATION, PARATUNE_WORKLOAD (WorkloadJson, compact)
// and one PARATUNE_<KEY> per configuration key (ParameterEnvName: `recompute` ->
// PARATUNE_RECOMPUTE), in that order.
std::vector<TrialEnvVar> TrialEnvironment(const CampaignSpec& spec, const std::string& trial,
                                          int64_t iteration, const Config& config);

// torchrun's, JAX's and MaxText's coordinator variables for a trial that runs on this one
// machine, with the meanings the Job renderer gives them on a one-node trial
// (controllers/trial_env.h RendezvousEnv): NODE_RANK=0, NNODES=1, WORLD_SIZE = NPROC_PER_NODE
// (processes, as torchrun counts them), MASTER_ADDR=127.0.0.1, MASTER_PORT,
// JAX_COORDINATOR_ADDRESS (and its JAX_COORDINATOR_IP / _PORT halves), JAX_PROCESS_COUNT=1,
// JAX_PROCESS_ID=0.
std::vector<TrialEnvVar> LocalRendezvousEnvironment(int master_port, int jax_port,
                                                    int64_t procs_per_node);

// Kubernetes' expansion of a container's command and args
// (https://kubernetes.io/docs/tasks/inject-data-application/define-interdependent-environment-variables/):
// `$(VAR)` becomes the variable's value, `$$` a single `$`; a reference to an unknown variable
// and an unclosed `$(` stay as written.
std::string ExpandKubernetesVars(std::string_view text,
                                 const std::map<std::string, std::string>& env);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_TRIALS_TRIAL_ENV_H_
