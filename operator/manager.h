// Manager: controller-runtime's manager. Owns the shared informers (one per resource and
// namespace), the controllers, the EventRecorder and the health/metrics HTTP server, and runs
// them: informers start at once (so caches warm up on standbys too); controllers start once the
// caches have synced and this process leads (Lease leader election, when enabled). Run returns
// when stop is requested (SIGTERM/SIGINT via InstallSignalHandlers) or leadership is lost;
// shutdown lets in-flight reconciles finish and is bounded by graceful_shutdown (30 s).
//   /healthz: 200 while Run is running.  /readyz: 200 once caches have synced.
//   /metrics: Prometheus text (reconciles, errors, latency, queue depth, watch restarts, API
//             request latency by verb and code, leader status).
// Not copyable. Configure (GetInformer/NewController/AddRunnable) before Run, from one thread.
#ifndef PARATUNE_OPERATOR_MANAGER_H_
#define PARATUNE_OPERATOR_MANAGER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "base/time_source.h"
#include "operator/controller.h"
#include "operator/event_recorder.h"
#include "operator/informer.h"
#include "operator/kube_client.h"
#include "operator/leader_election.h"
#include "operator/metrics.h"

namespace paratune::kube {

struct ManagerOptions {
  std::string name = "paratune-operator";
  bool leader_election = false;
  LeaderElectionOptions leader;  // identity defaults to hostname_pid.
  // "host:port" for /healthz, /readyz and /metrics; "" disables the server, port 0 picks one.
  std::string probe_address = "127.0.0.1:8081";
  // "host:port" of a listener for /metrics alone (controller-runtime's metrics address);
  // "" serves /metrics only on probe_address.
  std::string metrics_address;
  Millis graceful_shutdown{30000};
  Millis cache_sync_timeout{120000};
  ReflectorOptions reflector;  // defaults for informers (namespace, page size).
  // The recorder writes Events from its own thread (reconciles never wait on them) and
  // correlates repeats (event_recorder.h).
  EventRecorderOptions events{.async = true};
};

// Something the manager runs: Start returns after starting (threads of its own), Stop joins.
class Runnable {
 public:
  virtual ~Runnable() = default;
  virtual void Start() = 0;
  virtual void Stop() = 0;
};

class HttpProbeServer;

class Manager {
 public:
  // Borrows client, time and metrics; they must outlive the manager. metrics may be shared
  // with the client (so API latency is exposed). Fails when the probe address is malformed.
  static Result<std::unique_ptr<Manager>> Create(ManagerOptions opts, KubeClient* client,
                                                 TimeSource* time, MetricsRegistry* metrics);
  Manager(const Manager&) = delete;
  Manager& operator=(const Manager&) = delete;
  ~Manager();

  KubeClient* client() const { return client_; }
  MetricsRegistry* metrics() const { return metrics_; }
  TimeSource* time() const { return time_; }
  EventRecorder* recorder() { return recorder_.get(); }

  // The shared informer for (gvr, ns, label_selector) ("" ns: all namespaces; "" selector:
  // every object), created on first use. A selector keeps the cache to the objects it matches
  // (the operator's own Jobs and pods, not the whole cluster's).
  Informer* GetInformer(const GroupVersionResource& gvr, const std::string& ns = "",
                        const std::string& label_selector = "");
  // A controller owned by the manager, started when this process leads.
  Controller* NewController(ControllerOptions opts, Reconciler* reconciler);
  // An extra component; leader_only: started only while leading.
  void AddRunnable(std::unique_ptr<Runnable> runnable, bool leader_only);

  // Blocks until stop or loss of leadership. Ok on clean shutdown; an error when caches never
  // synced or the probe server could not bind.
  Status Run(std::stop_token stop);

  bool ready() const { return ready_.load(); }
  bool leading() const { return leading_.load(); }
  // The bound probe port (after Run has started the server), 0 when disabled.
  int probe_port() const;
  int metrics_port() const;  // 0 without ManagerOptions::metrics_address

 private:
  Manager(ManagerOptions opts, KubeClient* client, TimeSource* time, MetricsRegistry* metrics);
  void StartLeaderWork();
  void StopLeaderWork();
  bool WaitForCaches(std::stop_token stop);

  ManagerOptions opts_;
  KubeClient* client_;
  TimeSource* time_;
  MetricsRegistry* metrics_;
  std::unique_ptr<EventRecorder> recorder_;
  std::vector<std::unique_ptr<Informer>> informers_;
  std::vector<std::unique_ptr<Controller>> controllers_;
  std::vector<std::pair<std::unique_ptr<Runnable>, bool>> runnables_;
  std::unique_ptr<HttpProbeServer> probe_;
  std::unique_ptr<HttpProbeServer> metrics_server_;  // only with ManagerOptions::metrics_address
  std::atomic<bool> ready_{false};
  std::atomic<bool> leading_{false};
  std::atomic<bool> running_{false};
};

// Installs SIGTERM/SIGINT handlers that request stop on the returned source's token, and ignores
// SIGPIPE (a hung-up peer is an EPIPE error). Call once, before any thread starts.
std::stop_source& InstallSignalHandlers();

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_MANAGER_H_
