// LogServer: the kubelet's /containerLogs endpoint over HTTPS, so `kubectl logs` and
// KubeClient::GetPodLog work for pods the simulator ran (the API server proxies
// GET /containerLogs/NS/POD/CONTAINER?tailLines=N&limitBytes=M to the node's kubelet port).
// Serves nothing else. One request per connection, served by a pool of kWorkers threads as a
// kubelet serves them concurrently (one thread serialized every log read of the 36 simulated
// nodes behind a TLS handshake each: at 200 campaigns a read waited 3.3 s at the median, and the
// operator's reconciles measured the simulator). Start fails on bad certs or a busy port; Stop
// joins (connections already accepted are served first).
#ifndef PARATUNE_HACK_KUBELET_SIM_LOG_SERVER_H_
#define PARATUNE_HACK_KUBELET_SIM_LOG_SERVER_H_

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
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
  static constexpr int kWorkers = 8;
  static constexpr size_t kMaxQueued = 256;  // beyond this a connection is closed at once

  void Serve();
  void Work();
  void ServeConnection(int conn);
  void Handle(void* ssl);

  PathFn path_of_;
  void* ctx_ = nullptr;  // SSL_CTX*
  int fd_ = -1;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int> accepted_;  // guarded by mu_: connections waiting for a worker
  bool draining_ = false;     // guarded by mu_: no more connections come
};

}  // namespace paratune::kubelet

#endif  // PARATUNE_HACK_KUBELET_SIM_LOG_SERVER_H_
