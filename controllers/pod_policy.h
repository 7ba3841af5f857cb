// TrialPodPolicy: what a campaign's trial pods may ask for. The operator creates trial Jobs with
// its own rights, so without a policy anyone who may create a TuningCampaign could run a
// privileged pod, share the node's namespaces or filesystem, borrow another ServiceAccount or
// land on control-plane nodes, none of which their own RBAC might allow. The defaults refuse
// all of that; the administrator widens the policy with operator flags (chart values
// trialPodPolicy.*, docs/security.md). Pure: no I/O; thread-safe.
#ifndef PARATUNE_CONTROLLERS_POD_POLICY_H_
#define PARATUNE_CONTROLLERS_POD_POLICY_H_

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "agents/core/campaign.h"
#include "base/status.h"

namespace paratune::controllers {

struct TrialPodPolicy {
  // securityContext.privileged, allowPrivilegeEscalation and windowsOptions.hostProcess.
  bool allow_privileged = false;
  // hostNetwork, hostPID and hostIPC.
  bool allow_host_namespaces = false;
  bool allow_host_path = false;  // hostPath volumes
  // Capabilities a container may add (securityContext.capabilities.add), e.g. IPC_LOCK for
  // RDMA. Empty: none. "ALL" in the set allows every capability.
  std::set<std::string> allowed_capabilities;
  // ServiceAccounts trial pods may run as besides the namespace's "default".
  std::set<std::string> allowed_service_accounts;
  // Tolerations of node-role.kubernetes.io/control-plane or .../master (or a key-less Exists
  // toleration, which tolerates them too).
  bool allow_control_plane_tolerations = false;
};

// Checks the pod the campaign's trials would run: spec.trialTemplate.spec.template.spec (every
// container, init container and ephemeral container) and spec.hardware.tolerations. OK, or
// kInvalidArgument whose message starts with the offending field path, e.g.
// "spec.trialTemplate.spec.template.spec.containers[0].securityContext.privileged: ...".
Status CheckTrialPodPolicy(const CampaignSpec& spec, const TrialPodPolicy& policy);

// The same check on a bare PodSpec; `path` prefixes the field paths in the message.
Status CheckPodSpecPolicy(const nlohmann::json& pod_spec, const std::string& path,
                          const TrialPodPolicy& policy);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_POD_POLICY_H_
