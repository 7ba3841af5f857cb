#include "controllers/trial_env.h"

#include <map>

#include "agents/trials/trial_env.h"

namespace paratune::controllers {

namespace {

using nlohmann::json;

json EnvVar(const std::string& name, const std::string& value) {
  return {{"name", name}, {"value", value}};
}

json FieldRefEnv(const std::string& name, const std::string& path) {
  return {{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
}

}  // namespace

std::vector<json> ParatuneEnv(const CampaignSpec& campaign, const std::string& trial,
                              int64_t iteration, const Config& config) {
  // One list of variables for every way a trial runs (agents/trials/trial_env.h; `paratune tune
  // --local` sets the same on its processes).
  std::vector<json> env;
  for (const auto& v : TrialEnvironment(campaign, trial, iteration, config)) {
    env.push_back(EnvVar(v.name, v.value));
  }
  // The node the pod runs on (downward API): the trial's logs and the simulated cluster's
  // per-node faults attribute to it.
  env.push_back(FieldRefEnv("PARATUNE_NODE_NAME", "spec.nodeName"));
  return env;
}

std::vector<json> RendezvousEnv(const HardwareSpec& hw, const Rendezvous& r) {
  const int64_t slices = std::max<int64_t>(1, r.slices);
  const int64_t pods = hw.nodes * slices;
  const bool one_pod = pods <= 1;
  const std::string leader = one_pod ? "127.0.0.1" : r.leader_host;
  std::vector<json> env;
  if (hw.nodes > 1) {
    // The Indexed Job's completion index (a JobSet's child Jobs are Indexed Jobs too): the host's
    // index within its slice. Later variables expand it with $(NODE_RANK).
    env.push_back(FieldRefEnv("NODE_RANK",
                              "metadata.annotations['batch.kubernetes.io/job-completion-index']"));
  } else {
    env.push_back(EnvVar("NODE_RANK", "0"));
  }
  env.push_back(EnvVar("NNODES", std::to_string(pods)));
  env.push_back(EnvVar("NPROC_PER_NODE", std::to_string(hw.devices_per_node)));
  // torchrun's WORLD_SIZE is the number of worker processes (one per device under
  // --nproc-per-node), not of nodes (https://pytorch.org/docs/stable/elastic/run.html).
  env.push_back(EnvVar("WORLD_SIZE", std::to_string(pods * hw.devices_per_node)));
  env.push_back(EnvVar("MASTER_ADDR", leader));
  env.push_back(EnvVar("MASTER_PORT", std::to_string(kTorchrunPort)));
  env.push_back(
      EnvVar("JAX_COORDINATOR_ADDRESS", leader + ":" + std::to_string(kJaxCoordinatorPort)));
  env.push_back(EnvVar("JAX_COORDINATOR_IP", leader));
  env.push_back(EnvVar("JAX_COORDINATOR_PORT", std::to_string(kJaxCoordinatorPort)));
  if (slices == 1) {
    env.push_back(EnvVar("JAX_PROCESS_COUNT", std::to_string(pods)));
    env.push_back(EnvVar("JAX_PROCESS_ID", "$(NODE_RANK)"));
    return env;
  }
  // Multi-slice (JobSet replicas = slices): libtpu joins the slices over DCN through the
  // Megascale coordinator, the first host of slice 0; each pod's slice is its JobSet job index
  // (label jobset.sigs.k8s.io/job-index), as in GKE's multi-slice JobSets
  // (cloud.google.com/kubernetes-engine/docs/how-to/tpu-multislice) and Ray's TPU launcher
  // (MEGASCALE_COORDINATOR_ADDRESS, MEGASCALE_NUM_SLICES, MEGASCALE_SLICE_ID, MEGASCALE_PORT).
  // JAX numbers its processes from the TPU environment then, so no JAX_PROCESS_ID is set.
  env.push_back(EnvVar("MEGASCALE_COORDINATOR_ADDRESS", leader));
  env.push_back(EnvVar("MEGASCALE_PORT", std::to_string(kMegascalePort)));
  env.push_back(EnvVar("MEGASCALE_NUM_SLICES", std::to_string(slices)));
  env.push_back(
      FieldRefEnv("MEGASCALE_SLICE_ID", "metadata.labels['jobset.sigs.k8s.io/job-index']"));
  return env;
}

void MergeEnv(json* container, const std::vector<json>& env) {
  json merged = json::array();
  std::map<std::string, bool> ours;
  for (const auto& e : env) ours[e["name"].get<std::string>()] = true;
  const json& existing = container->value("env", json::array());
  if (existing.is_array()) {
    for (const auto& e : existing) {
      if (e.is_object() && e.contains("name") && e["name"].is_string() &&
          ours.count(e["name"].get<std::string>()) == 0) {
        merged.push_back(e);
      }
    }
  }
  for (const auto& e : env) merged.push_back(e);
  (*container)["env"] = merged;
}

}  // namespace paratune::controllers
