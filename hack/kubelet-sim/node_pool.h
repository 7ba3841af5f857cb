// NodePool: the simulated nodes of contract section 9 (4 H100x8 GPU nodes, one TPU v5e 4x4 slice
// of 4 hosts). Registers them, keeps them Ready (status heartbeats and kube-node-lease Leases) and
// strips the not-ready/unreachable taints. Thread-safe; Run blocks until stop.
//
// A Node object deleted by someone while the stand-in runs is treated as a real kubelet treats
// it: the kubelet registers its node only when it starts, so the pool stops heartbeating that
// node (one warning, no retry loop; no Lease renewals either) and does not re-create it until
// the stand-in is restarted. Pods bound to the deleted node keep running until their pod objects
// go away (the pod garbage collector force-deletes pods of missing nodes); PodRunner then kills
// their processes.
#ifndef PARATUNE_HACK_KUBELET_SIM_NODE_POOL_H_
#define PARATUNE_HACK_KUBELET_SIM_NODE_POOL_H_

#include <mutex>
#include <set>
#include <stop_token>
#include <string>
#include <vector>

#include "base/time_source.h"
#include "operator/kube_client.h"

namespace paratune::kubelet {

struct NodeSpec {
  std::string name;
  kube::Json labels;
  kube::Json capacity;
};

// The extended resource the simulated GPU nodes advertise for their RDMA (InfiniBand) devices,
// as the NVIDIA Network Operator's RDMA shared device plugin would (resource "rdma/<name>",
// https://github.com/Mellanox/k8s-rdma-shared-dev-plugin), and how many: one per GPU.
inline constexpr char kSimulatedRdmaResource[] = "rdma/rdma_shared_device_a";
inline constexpr char kSimulatedRdmaDevices[] = "8";

// The default pools: paratune-gpu-0..gpu_nodes-1 and paratune-tpu-0..tpu_hosts-1.
std::vector<NodeSpec> DefaultPools(int gpu_nodes, int tpu_hosts);

class NodePool {
 public:
  NodePool(kube::KubeClient* client, std::vector<NodeSpec> nodes, TimeSource* time,
           int kubelet_port);
  // Creates or refreshes every node, then heartbeats every 10 s until stop.
  void Run(std::stop_token stop);
  // Registers every node once (status Ready); errors are returned, not retried.
  Status RegisterAll();
  bool Owns(const std::string& node_name) const { return names_.count(node_name) > 0; }
  // Nodes found deleted since the last registration (no longer heartbeated).
  std::set<std::string> Deleted() const;

 private:
  Status Register(const NodeSpec& n);
  Status Heartbeat(const NodeSpec& n);
  kube::Json NodeStatus(const NodeSpec& n) const;

  kube::KubeClient* client_;
  std::vector<NodeSpec> nodes_;
  std::set<std::string> names_;
  TimeSource* time_;
  int kubelet_port_;
  mutable std::mutex mu_;
  std::set<std::string> deleted_;  // guarded by mu_
};

}  // namespace paratune::kubelet

#endif  // PARATUNE_HACK_KUBELET_SIM_NODE_POOL_H_
