// RDMA devices of the cluster (issue 38): multi-node GPU trials request the extended resource
// the cluster's RDMA device plugin advertises (for example `rdma/ib`, or `rdma/<resourceName>`
// of Mellanox's k8s-rdma-shared-dev-plugin, https://github.com/Mellanox/k8s-rdma-shared-dev-plugin
// README "resourceName"), so NCCL uses InfiniBand/RoCE instead of TCP. The administrator names
// that resource once (chart rdma.resourceName, operator flag --rdma-resource); a trial template
// asking for another `rdma/...` resource would stay Pending on every node, so it is refused
// before anything runs. Pure; thread-safe.
#ifndef PARATUNE_CONTROLLERS_RDMA_RESOURCES_H_
#define PARATUNE_CONTROLLERS_RDMA_RESOURCES_H_

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace paratune::controllers {

// OK when `declared` is "" (the operator was not told what the cluster has: nothing checked)
// or when every `rdma/...` key of a `resources.limits`/`resources.requests` object anywhere in
// `trial_template` equals `declared`; `declared` == "none" says the cluster has no RDMA
// devices. Otherwise kInvalidArgument naming the field, e.g.
// "spec.trialTemplate.spec.template.spec.containers[0].resources.limits.rdma/roce: ...".
Status CheckRdmaRequests(const nlohmann::json& trial_template, const std::string& declared);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_RDMA_RESOURCES_H_
