// The environment every trial container gets (contract section 4, docs/api.md "Trial
// environment"): the PARATUNE_* variables, and the rendezvous variables of torchrun, JAX and
// MaxText on every trial, one node or many, so one template serves both. Pure; thread-safe.
#ifndef PARATUNE_CONTROLLERS_TRIAL_ENV_H_
#define PARATUNE_CONTROLLERS_TRIAL_ENV_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/core/config.h"

namespace paratune::controllers {

inline constexpr int kTorchrunPort = 29500;
// JAX's own coordinator port on Cloud TPU (jax/_src/clusters/cloud_tpu_cluster.py, 8476).
inline constexpr int kJaxCoordinatorPort = 8476;
// The Megascale (multi-slice) coordinator port Ray's and XPK's launchers use (8081).
inline constexpr int kMegascalePort = 8081;

// The PARATUNE_* variables: campaign, trial, iteration, workload JSON, node name (downward API)
// and one PARATUNE_<KEY> per configuration key, in a stable order.
std::vector<nlohmann::json> ParatuneEnv(const CampaignSpec& campaign, const std::string& trial,
                                        int64_t iteration, const Config& config);

// Where a trial's processes meet.
struct Rendezvous {
  // Host of rank 0 (the first pod of the first slice); ignored for one pod (127.0.0.1).
  std::string leader_host;
  // TPU slices of the trial (a JobSet's replicated job has one child Job per slice).
  int64_t slices = 1;
};

// The rendezvous variables, set on every trial:
//   MASTER_ADDR, MASTER_PORT           torchrun's --master-addr/--master-port (rank 0's host;
//                                      127.0.0.1 on one node)
//   NNODES, NODE_RANK, NPROC_PER_NODE  torchrun's --nnodes/--node-rank/--nproc-per-node; NODE_RANK
//                                      is the Indexed Job's completion index ("0" on one node)
//   WORLD_SIZE                         processes in the trial (nodes x devices per node), what
//                                      torchrun gives its workers as WORLD_SIZE
//   JAX_COORDINATOR_ADDRESS            read by jax.distributed.initialize (jax/_src/distributed.py)
//   JAX_COORDINATOR_IP/_PORT           read by MaxText on GPUs with NNODES and NODE_RANK
//                                      (MaxText max_utils.initialize_jax_for_gpu)
//   JAX_PROCESS_COUNT, JAX_PROCESS_ID  one JAX process per pod (single slice only)
//   MEGASCALE_COORDINATOR_ADDRESS, MEGASCALE_PORT, MEGASCALE_NUM_SLICES, MEGASCALE_SLICE_ID
//                                      multi-slice TPU trials only, as GKE's and XPK's JobSets
//                                      set them (slice id = the JobSet job index)
std::vector<nlohmann::json> RendezvousEnv(const HardwareSpec& hw, const Rendezvous& r);

// Sets each variable in `env` on the container, replacing one of the same name: the
// controller's values win over the template's.
void MergeEnv(nlohmann::json* container, const std::vector<nlohmann::json>& env);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_TRIAL_ENV_H_
