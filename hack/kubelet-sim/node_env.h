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

// `obj[key]` when obj is an object holding key, else null; a reference, never a copy (these run
// for every pod of a Job each time one of its pods starts).
inline const kube::Json& FieldOf(const kube::Json& obj, const char* key) {
  static const kube::Json kNull;
  if (!obj.is_object()) return kNull;
  const auto it = obj.find(key);
  return it == obj.end() ? kNull : *it;
}

inline std::string StringOf(const kube::Json& v) {
  return v.is_string() ? v.get<std::string>() : "";
}

// The Job a pod belongs to ("" when none): label `job-name` (or the newer
// `batch.kubernetes.io/job-name`).
inline std::string JobNameOf(const kube::Json& pod) {
  const kube::Json& labels = FieldOf(FieldOf(pod, "metadata"), "labels");
  std::string job = StringOf(FieldOf(labels, "job-name"));
  return job.empty() ? StringOf(FieldOf(labels, "batch.kubernetes.io/job-name")) : job;
}

// The ownerReference of `pod` to its Job (null when none).
inline const kube::Json* JobOwnerRef(const kube::Json& pod) {
  const kube::Json& refs = FieldOf(FieldOf(pod, "metadata"), "ownerReferences");
  if (!refs.is_array()) return nullptr;
  for (const kube::Json& r : refs) {
    if (StringOf(FieldOf(r, "kind")) == "Job") return &r;
  }
  return nullptr;
}

// The uid of the Job that owns `pod` ("" when none): the pods to pass to JobNodes are the
// informer's ByOwner of it, not every pod of the namespace.
inline std::string JobUidOf(const kube::Json& pod) {
  const kube::Json* ref = JobOwnerRef(pod);
  return ref == nullptr ? "" : StringOf(FieldOf(*ref, "uid"));
}

// The sorted, distinct nodes of `pod` and of the pods among `pods` of the same namespace and
// Job that are bound to a node, not being deleted and not finished.
inline std::vector<std::string> JobNodes(const kube::Json& pod,
                                         const std::vector<kube::ObjectPtr>& pods) {
  std::vector<std::string> nodes;
  const std::string own = StringOf(FieldOf(FieldOf(pod, "spec"), "nodeName"));
  if (!own.empty()) nodes.push_back(own);
  const std::string job = JobNameOf(pod);
  if (!job.empty()) {
    for (const kube::ObjectPtr& p : pods) {
      if (!p || kube::NamespaceOf(*p) != kube::NamespaceOf(pod) || JobNameOf(*p) != job) continue;
      if (FieldOf(*p, "metadata").contains("deletionTimestamp")) continue;
      const std::string phase = StringOf(FieldOf(FieldOf(*p, "status"), "phase"));
      if (phase == "Succeeded" || phase == "Failed") continue;
      const std::string node = StringOf(FieldOf(FieldOf(*p, "spec"), "nodeName"));
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
