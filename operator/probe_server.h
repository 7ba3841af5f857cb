// HttpProbeServer: a tiny HTTP/1.0 server for /healthz, /readyz and /metrics (one request per
// connection, GET only). Handlers run on the server's single thread. Start fails when the address
// cannot be bound; Stop joins the thread. Thread-safe to Stop from any thread.
#ifndef PARATUNE_OPERATOR_PROBE_SERVER_H_
#define PARATUNE_OPERATOR_PROBE_SERVER_H_

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <thread>

#include "base/status.h"

namespace paratune::kube {

struct ProbeResponse {
  int code = 200;
  std::string body;
  std::string content_type = "text/plain; charset=utf-8";
};

class HttpProbeServer {
 public:
  using Handler = std::function<ProbeResponse()>;
  explicit HttpProbeServer(std::map<std::string, Handler> routes);
  ~HttpProbeServer();
  HttpProbeServer(const HttpProbeServer&) = delete;
  HttpProbeServer& operator=(const HttpProbeServer&) = delete;

  // address: "host:port" (port 0: any free port).
  Status Start(const std::string& address);
  void Stop();
  int port() const { return port_.load(); }

 private:
  void Serve();
  void HandleConnection(int fd);

  std::map<std::string, Handler> routes_;
  int listen_fd_ = -1;
  std::atomic<int> port_{0};
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_PROBE_SERVER_H_
