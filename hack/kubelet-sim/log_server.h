// LogServer: the kubelet's /containerLogs endpoint over HTTPS, so `kubectl logs` and
// KubeClient::GetPodLog work for pods the simulator ran (the API server proxies
// GET /containerLogs/NS/POD/CONTAINER?tailLines=N&limitBytes=M to the node's kubelet port).
// Serves nothing else. One thread, one request per connection. Start fails on bad certs or a
// busy port; Stop joins.
#ifndef PARATUNE_HACK_KUBELET_SIM_LOG_SERVER_H_
#define PARATUNE_HACK_KUBELET_SIM_LOG_SERVER_H_

#include <atomic>
#include <functional>
#include <string>
#include <thread>

#include "base/status.h"

namespace paratune::kubelet {

class LogServer {
 public:
  // path_of(ns, pod, container) -> the log file ("" when unknown).
  using PathFn =
      std::function<std::string(const std::string&, const std::string&, const std::string&)>;
  explicit LogServer(PathFn path_of) : path_of_(std::move(path_of)) {}
  ~LogServer();
  Status Start(int port, const std::string& cert_file, const std::string& key_file);
  void Stop();

 private:
  void Serve();
  void Handle(void* ssl);

  PathFn path_of_;
  void* ctx_ = nullptr;  // SSL_CTX*
  int fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace paratune::kubelet

#endif  // PARATUNE_HACK_KUBELET_SIM_LOG_SERVER_H_
