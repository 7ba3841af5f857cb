#include "hack/kubelet-sim/node_pool.h"

#include <spdlog/spdlog.h>

namespace paratune::kubelet {

using kube::Json;

std::vector<NodeSpec> DefaultPools(int gpu_nodes, int tpu_hosts) {
  std::vector<NodeSpec> out;
  Json base_cap{
      {"cpu", "96"}, {"memory", "1000Gi"}, {"pods", "110"}, {"ephemeral-storage", "1000Gi"}};
  for (int i = 0; i < gpu_nodes; ++i) {
    std::string name = "paratune-gpu-" + std::to_string(i);
    Json cap = base_cap;
    cap["nvidia.com/gpu"] = "8";
    // The RDMA devices of a GPU node with InfiniBand, as an RDMA device plugin advertises them
    // (kSimulatedRdmaResource); multi-node GPU samples request it (chart rdma.resourceName).
    cap[kSimulatedRdmaResource] = kSimulatedRdmaDevices;
    out.push_back({name,
                   {{"cloud.google.com/gke-accelerator", "nvidia-h100-80gb"},
                    {"cloud.google.com/gke-nodepool", "gpu-h100"}},
                   cap});
  }
  for (int i = 0; i < tpu_hosts; ++i) {
    std::string name = "paratune-tpu-" + std::to_string(i);
    Json cap = base_cap;
    cap["google.com/tpu"] = "4";
    out.push_back({name,
                   {{"cloud.google.com/gke-tpu-accelerator", "tpu-v5-lite-podslice"},
                    {"cloud.google.com/gke-tpu-topology", "4x4"},
                    {"cloud.google.com/gke-nodepool", "tpu-v5e-4x4"}},
                   cap});
  }
  for (NodeSpec& n : out) {
    n.labels["kubernetes.io/hostname"] = n.name;
    n.labels["kubernetes.io/os"] = "linux";
    n.labels["kubernetes.io/arch"] = "amd64";
    n.labels["paratune.dev/simulated"] = "true";
  }
  return out;
}

NodePool::NodePool(kube::KubeClient* client, std::vector<NodeSpec> nodes, TimeSource* time,
                   int kubelet_port)
    : client_(client), nodes_(std::move(nodes)), time_(time), kubelet_port_(kubelet_port) {
  for (const NodeSpec& n : nodes_) names_.insert(n.name);
}

Json NodePool::NodeStatus(const NodeSpec& n) const {
  std::string now = FormatRfc3339(time_->SystemNow());
  auto cond = [&](const char* type, const char* status, const char* reason) {
    return Json{{"type", type},
                {"status", status},
                {"reason", reason},
                {"message", "paratune-kubelet-sim"},
                {"lastHeartbeatTime", now},
                {"lastTransitionTime", now}};
  };
  Json info{{"kubeletVersion", "v1.20.2"},
            {"kubeProxyVersion", "v1.20.2"},
            {"operatingSystem", "linux"},
            {"architecture", "amd64"},
            {"containerRuntimeVersion", "paratune-kubelet-sim://0.1"},
            {"osImage", "paratune"},
            {"kernelVersion", ""},
            {"machineID", n.name},
            {"systemUUID", n.name},
            {"bootID", n.name}};
  Json conditions = Json::array({cond("Ready", "True", "KubeletReady"),
                                 cond("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                                 cond("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                                 cond("PIDPressure", "False", "KubeletHasSufficientPID")});
  Json addresses = Json::array({Json{{"type", "InternalIP"}, {"address", "127.0.0.1"}},
                                Json{{"type", "Hostname"}, {"address", n.name}}});
  Json status = Json::object();
  status["capacity"] = n.capacity;
  status["allocatable"] = n.capacity;
  status["conditions"] = conditions;
  status["addresses"] = addresses;
  status["daemonEndpoints"]["kubeletEndpoint"]["Port"] = kubelet_port_;
  status["nodeInfo"] = info;
  return status;
}

Status NodePool::Register(const NodeSpec& n) {
  Json node{{"apiVersion", "v1"},
            {"kind", "Node"},
            {"metadata", {{"name", n.name}, {"labels", n.labels}}},
            {"spec", Json::object()}};
  auto created = client_->Create(kube::resources::kNodes, "", node);
  if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
    return created.status();
  }
  if (!created.ok()) {  // refresh labels of an existing node.
    auto patched = client_->Patch(kube::resources::kNodes, "", n.name, kube::PatchType::kMerge,
                                  Json{{"metadata", {{"labels", n.labels}}}});
    if (!patched.ok()) return patched.status();
  }
  return Heartbeat(n);
}

Status NodePool::Heartbeat(const NodeSpec& n) {
  auto st = client_->Patch(kube::resources::kNodes, "", n.name, kube::PatchType::kMerge,
                           Json{{"status", NodeStatus(n)}}, {}, "status");
  if (!st.ok()) return st.status();
  // Drop the taints the node lifecycle controller adds before the first Ready heartbeat.
  Json taints = st->value("spec", Json::object()).value("taints", Json::array());
  Json kept = Json::array();
  for (const Json& t : taints) {
    std::string key = t.value("key", "");
    if (key != "node.kubernetes.io/not-ready" && key != "node.kubernetes.io/unreachable") {
      kept.push_back(t);
    }
  }
  if (kept.size() != taints.size()) {
    auto p = client_->Patch(kube::resources::kNodes, "", n.name, kube::PatchType::kMerge,
                            Json{{"spec", {{"taints", kept.empty() ? Json() : kept}}}});
    if (!p.ok()) return p.status();
  }
  Json lease{{"apiVersion", "coordination.k8s.io/v1"},
             {"kind", "Lease"},
             {"metadata", {{"name", n.name}, {"namespace", "kube-node-lease"}}},
             {"spec",
              {{"holderIdentity", n.name},
               {"leaseDurationSeconds", 40},
               {"renewTime", FormatMicroTime(time_->SystemNow())}}}};
  kube::WriteOptions wo;
  wo.field_manager = "paratune-kubelet-sim";
  wo.force = true;
  auto l = client_->Patch(kube::resources::kLeases, "kube-node-lease", n.name,
                          kube::PatchType::kApply, lease, wo);
  return l.ok() ? Status::Ok() : l.status();
}

Status NodePool::RegisterAll() {
  for (const NodeSpec& n : nodes_) PARATUNE_RETURN_IF_ERROR(Register(n));
  return Status::Ok();
}

std::set<std::string> NodePool::Deleted() const {
  std::lock_guard lock(mu_);
  return deleted_;
}

void NodePool::Run(std::stop_token stop) {
  bool registered = false;
  while (!stop.stop_requested()) {
    for (const NodeSpec& n : nodes_) {
      {
        std::lock_guard lock(mu_);
        if (deleted_.count(n.name)) continue;
      }
      Status s = registered ? Heartbeat(n) : Register(n);
      if (registered && s.code() == StatusCode::kNotFound) {
        std::lock_guard lock(mu_);
        deleted_.insert(n.name);
        spdlog::warn(
            "node {}: the Node object was deleted; no longer heartbeating it (a kubelet "
            "registers its node again only when restarted)",
            n.name);
        continue;
      }
      if (!s.ok()) spdlog::warn("node {}: {}", n.name, kube::StatusText(s));
    }
    registered = true;
    if (!time_->SleepFor(Millis(10000), stop)) return;
  }
}

}  // namespace paratune::kubelet
