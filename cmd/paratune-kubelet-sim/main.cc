// paratune-kubelet-sim: plays the kubelet of the simulated nodes of the local cluster.
//   paratune-kubelet-sim --kubeconfig FILE [--paratune BIN] [--work-dir DIR]
//                        [--gpu-nodes 4] [--tpu-hosts 4] [--workers 16]
//                        [--node-faults "paratune-gpu-2=throttle:0.5;paratune-gpu-1=flaky:0.4"]
// --node-faults (fallback: env PARATUNE_SIM_NODE_FAULTS) makes simulated nodes sick
// (agents/sim/node_faults.h); bad text exits 2 with the reason. Runs until SIGTERM/SIGINT.
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "agents/sim/node_faults.h"
#include "hack/kubelet-sim/log_server.h"
#include "hack/kubelet-sim/node_pool.h"
#include "hack/kubelet-sim/pod_runner.h"
#include "operator/manager.h"
#include "operator/rest_client.h"

using namespace paratune;

namespace {
std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}
}  // namespace

int main(int argc, char** argv) {
  std::stop_source& stop = kube::InstallSignalHandlers();
  std::string kubeconfig, paratune_bin, work_dir = "/tmp/paratune-kubelet-sim";
  int gpu_nodes = 4, tpu_hosts = 4, workers = 16, kubelet_port = 10250;
  std::string tls_cert, tls_key, node_faults;
  bool faults_flag = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--kubeconfig")
      kubeconfig = value;
    else if (flag == "--paratune")
      paratune_bin = value;
    else if (flag == "--work-dir")
      work_dir = value;
    else if (flag == "--gpu-nodes")
      gpu_nodes = std::atoi(value.c_str());
    else if (flag == "--tpu-hosts")
      tpu_hosts = std::atoi(value.c_str());
    else if (flag == "--kubelet-port")
      kubelet_port = std::atoi(value.c_str());
    else if (flag == "--tls-cert")
      tls_cert = value;
    else if (flag == "--tls-key")
      tls_key = value;
    else if (flag == "--workers")
      workers = std::atoi(value.c_str());
    else if (flag == "--node-faults") {
      node_faults = value;
      faults_flag = true;
    } else {
      spdlog::error("unknown flag {}", flag);
      return 2;
    }
  }
  if (!faults_flag) {
    const char* env = std::getenv("PARATUNE_SIM_NODE_FAULTS");
    node_faults = env != nullptr ? env : "";
  }
  auto faults = ParseNodeFaults(node_faults);
  if (!faults.ok()) {
    spdlog::error("{}: {}", faults_flag ? "--node-faults" : "PARATUNE_SIM_NODE_FAULTS",
                  faults.status().message());
    return 2;
  }
  if (paratune_bin.empty()) {
    paratune_bin = (std::filesystem::path(argv[0]).parent_path() / "paratune").string();
  }
  auto cfg = kubeconfig.empty()
                 ? kube::DefaultConfig(kube::ConfigEnvironment{Env("KUBECONFIG"), Env("HOME"),
                                                               Env("KUBERNETES_SERVICE_HOST"),
                                                               Env("KUBERNETES_SERVICE_PORT")})
                 : kube::LoadKubeconfig(kubeconfig);
  if (!cfg.ok()) {
    spdlog::error("kubeconfig: {}", kube::StatusText(cfg.status()));
    return 2;
  }
  cfg->qps = 100;
  cfg->burst = 200;
  paratune::TimeSource* time = paratune::RealTimeSource::Get();
  auto client = kube::RestKubeClient::Create(*cfg, time, nullptr);
  if (!client.ok()) {
    spdlog::error("client: {}", kube::StatusText(client.status()));
    return 2;
  }
  std::filesystem::create_directories(work_dir);
  kubelet::NodePool nodes(client->get(), kubelet::DefaultPools(gpu_nodes, tpu_hosts), time,
                          kubelet_port);
  kube::ManagerOptions mo;
  mo.name = "paratune-kubelet-sim";
  mo.probe_address = "";
  auto mgr = kube::Manager::Create(mo, client->get(), time, nullptr);
  kube::Informer* pods = (*mgr)->GetInformer(kube::resources::kPods);
  kube::Informer* jobs = (*mgr)->GetInformer(kube::resources::kJobs);
  kubelet::PodRunner runner(
      client->get(), pods, jobs, &nodes, time,
      {std::filesystem::absolute(paratune_bin).string(),
       std::filesystem::absolute(work_dir).string(), FormatNodeFaults(*faults)});
  kube::ControllerOptions co;
  co.name = "kubelet-sim";
  co.workers = workers;
  (*mgr)->NewController(co, &runner)->For(pods);
  kubelet::LogServer logs(
      [&runner](const std::string& ns, const std::string& pod, const std::string& container) {
        return runner.LogPath(ns, pod, container);
      });
  if (!tls_cert.empty()) {
    Status ls = logs.Start(kubelet_port, tls_cert, tls_key);
    if (!ls.ok()) spdlog::warn("pod logs unavailable: {}", kube::StatusText(ls));
  }
  std::jthread heartbeat([&nodes](std::stop_token st) { nodes.Run(st); });
  spdlog::info("paratune-kubelet-sim: {} GPU nodes, {} TPU hosts, paratune={}, node faults: {}",
               gpu_nodes, tpu_hosts, paratune_bin,
               faults->empty() ? "none" : FormatNodeFaults(*faults));
  Status s = (*mgr)->Run(stop.get_token());
  heartbeat.request_stop();
  return s.ok() ? 0 : 1;
}
