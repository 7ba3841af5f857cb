// What paratune-kubelet-sim adds to the environment of every process it runs, so that the
// simulated hardware under the pod can be played (issue 9, contract section 10):
//   PARATUNE_SIM_NODE_FAULTS  the cluster's node faults (all of them, node_faults.h text form)
//   PARATUNE_NODE_NAME        the pod's spec.nodeName
//   PARATUNE_SIM_JOB_NODES    the nodes of the pods of the pod's Job (label `job-name`) that are
//                             placed and not finished when it starts, sorted, comma-separated;
//                             always including its own node
// These are the machine's truth and override what the pod's own env says (a kubelet stand-in
// without faults leaves PARATUNE_SIM_NODE_FAULTS to the pod). Header-only pure
// functions (the integration tests use them without linking the kubelet stand-in): thread-safe.
#ifndef PARATUNE_HACK_KUBELET_SIM_NODE_ENV_H_
#define PARATUNE_HACK_KUBELET_SIM_NODE_ENV_H_

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "operator/informer.h"
#include "operator/kube_client.h"

namespace paratune::kubelet {

// The Job a pod belongs to ("" when none): label `job-name` (or the newer
// `batch.kubernetes.io/job-name`).
inline std::string JobNameOf(const kube::Json& pod) {
  const kube::Json labels =
      pod.value("metadata", kube::Json::object()).value("labels", kube::Json::object());
  std::string job = labels.value("job-name", "");
  return job.empty() ? labels.value("batch.kubernetes.io/job-name", "") : job;
}

// The sorted, distinct nodes of `pod` and of the pods among `pods` of the same namespace and
// Job that are bound to a node, not being deleted and not finished.
inline std::vector<std::string> JobNodes(const kube::Json& pod,
                                         const std::vector<kube::ObjectPtr>& pods) {
  std::vector<std::string> nodes;
  const kube::Json spec = pod.value("spec", kube::Json::object());
  const std::string own = spec.value("nodeName", "");
  if (!own.empty()) nodes.push_back(own);
  const std::string job = JobNameOf(pod);
  if (!job.empty()) {
    for (const kube::ObjectPtr& p : pods) {
      if (!p || kube::NamespaceOf(*p) != kube::NamespaceOf(pod) || JobNameOf(*p) != job) continue;
      if (p->value("metadata", kube::Json::object()).contains("deletionTimestamp")) continue;
      const std::string phase = p->value("status", kube::Json::object()).value("phase", "Pending");
      if (phase == "Succeeded" || phase == "Failed") continue;
      const std::string node = p->value("spec", kube::Json::object()).value("nodeName", "");
      if (!node.empty()) nodes.push_back(node);
    }
  }
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  return nodes;
}

// The variables above for a process of `pod`; `faults` is the kubelet stand-in's fault text.
inline std::map<std::string, std::string> SimNodeEnv(const std::string& faults,
                                                     const kube::Json& pod,
                                                     const std::vector<std::string>& job_nodes) {
  std::string joined;
  for (const std::string& n : job_nodes) joined += (joined.empty() ? "" : ",") + n;
  std::map<std::string, std::string> env{
      {"PARATUNE_NODE_NAME", pod.value("spec", kube::Json::object()).value("nodeName", "")},
      {"PARATUNE_SIM_JOB_NODES", joined}};
  if (!faults.empty()) env["PARATUNE_SIM_NODE_FAULTS"] = faults;
  return env;
}

}  // namespace paratune::kubelet

#endif  // PARATUNE_HACK_KUBELET_SIM_NODE_ENV_H_
