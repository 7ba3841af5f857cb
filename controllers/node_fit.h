// Whether any node of the cluster could ever run a trial's pod. The scheduler's message says why
// no node runs it now ("0/36 nodes are available: 32 Insufficient nvidia.com/gpu, 4 node(s)
// didn't match Pod's node affinity/selector"), not whether waiting can help: that needs the
// nodes themselves. A node could ever run the pod when it carries the pod's nodeSelector labels,
// matches its required node affinity, has no NoSchedule/NoExecute taint the pod does not
// tolerate, and its allocatable covers each resource the pod requests (the free capacity now is
// the scheduler's business; this asks about the node's size).
//
// What may pass is not held against a node: its cordon (spec.unschedulable), the node
// lifecycle's condition taints (node.kubernetes.io/*), the cluster autoscaler's deletion taints,
// and the trial's own node anti-affinity (the suspect nodes it avoids, a kubernetes.io/hostname
// or metadata.name NotIn). Pod affinity, topology spread, ports and volumes are not judged.
//
// The trial reconciler uses the verdict in two ways: a pod no node could ever run fails its trial
// as Unschedulable, not retryable, without waiting for unschedulable_after; a pod the scheduler
// left Pending for capacity ("Insufficient ...") on nodes that could run it is retryable,
// whatever else the message says about other nodes.
#ifndef PARATUNE_CONTROLLERS_NODE_FIT_H_
#define PARATUNE_CONTROLLERS_NODE_FIT_H_

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/time_source.h"
#include "operator/kube_client.h"

namespace paratune::controllers {

// A Kubernetes resource quantity ("8", "500m", "16Gi", "1.5e3", "64G") as a number of units;
// nothing when it is not one.
std::optional<double> ParseQuantity(const std::string& text);

struct NodeTaint {
  std::string key, value, effect;
};

// What of a Node decides whether a pod could ever run on it (kept instead of the whole object:
// a cluster's Node list is large).
struct NodeFacts {
  std::string name;
  std::map<std::string, std::string> labels;
  std::vector<NodeTaint> taints;              // NoSchedule / NoExecute only
  std::map<std::string, double> allocatable;  // quantities as numbers
};

NodeFacts FactsOf(const kube::Json& node);

struct PodFit {
  int nodes = 0;        // judged
  int could_run = 0;    // nodes that could ever run the pod
  std::string message;  // when could_run == 0: why, per reason with counts
};

// Judges `pod` (a Pod object; its spec as the API server stored it) against `nodes`.
PodFit JudgePodFit(const kube::Json& pod, const std::vector<NodeFacts>& nodes);

// The cluster's nodes, listed (pages of 500) at most every `max_age`, shared by every trial.
// Thread-safe.
class ClusterNodes {
 public:
  ClusterNodes(kube::KubeClient* client, TimeSource* time, Millis max_age = Millis(30000));
  // The nodes, or nullptr when the operator may not list them (Forbidden: a namespace-scoped
  // install without the Node rule); other errors are returned.
  Result<std::shared_ptr<const std::vector<NodeFacts>>> Get();

 private:
  kube::KubeClient* client_;
  TimeSource* time_;
  Millis max_age_;
  std::mutex mu_;
  std::shared_ptr<const std::vector<NodeFacts>> nodes_;
  std::optional<SteadyTime> listed_at_;  // when nodes_ was listed (none yet: never)
};

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_NODE_FIT_H_
