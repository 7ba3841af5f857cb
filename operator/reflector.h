// Reflector: client-go's ListAndWatch loop. Lists (paginated), hands the snapshot to a
// ReflectorSink, then watches from the list's resourceVersion with allowWatchBookmarks and a
// randomized timeoutSeconds (5..10 min), re-watching from the last resourceVersion seen when a
// watch ends. On 410 Gone it relists; on other errors it backs off exponentially (0.8 s .. 30 s,
// jittered) and counts a watch restart. Partial lines are buffered by the KubeClient.
// Run() blocks until stop; it owns no thread. Only the sink is touched from the running thread.
#ifndef PARATUNE_OPERATOR_REFLECTOR_H_
#define PARATUNE_OPERATOR_REFLECTOR_H_

#include <atomic>
#include <random>
#include <stop_token>
#include <string>
#include <vector>

#include "base/time_source.h"
#include "operator/kube_client.h"
#include "operator/metrics.h"

namespace paratune::kube {

// Receives what the reflector sees. Called from the reflector's thread only.
class ReflectorSink {
 public:
  virtual ~ReflectorSink() = default;
  // The complete current state (after a list or relist).
  virtual void Replace(std::vector<Json> items, const std::string& resource_version) = 0;
  virtual void OnWatchEvent(const WatchEvent& event) = 0;
};

struct ReflectorOptions {
  std::string ns;  // "" : all namespaces.
  std::string label_selector;
  std::string field_selector;
  int64_t page_size = 500;
  int min_watch_timeout_s = 300;  // timeoutSeconds is drawn from [min, 2*min).
  Millis min_backoff{800};
  Millis max_backoff{30000};
  uint64_t seed = 0;  // 0: random_device.
};

class Reflector {
 public:
  // Borrows client, sink, time and metrics (may be null); they must outlive the reflector.
  Reflector(KubeClient* client, GroupVersionResource gvr, ReflectorOptions opts,
            ReflectorSink* sink, TimeSource* time, MetricsRegistry* metrics);
  Reflector(const Reflector&) = delete;
  Reflector& operator=(const Reflector&) = delete;

  void Run(std::stop_token stop);

  // Observability for tests and metrics.
  std::string last_resource_version() const;
  int lists() const { return lists_.load(); }
  int watch_restarts() const { return restarts_.load(); }

 private:
  Status ListAll(std::string* rv);
  // Watches until the server ends the watch, an error, or stop.
  Status WatchOnce(const std::string& from_rv, std::stop_token stop);
  Millis NextBackoff(Millis* current);

  KubeClient* client_;
  GroupVersionResource gvr_;
  ReflectorOptions opts_;
  ReflectorSink* sink_;
  TimeSource* time_;
  MetricsRegistry* metrics_;
  std::mt19937_64 rng_;
  mutable std::mutex rv_mu_;
  std::string last_rv_;  // guarded by rv_mu_
  std::atomic<int> lists_{0};
  std::atomic<int> restarts_{0};
};

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_REFLECTOR_H_
