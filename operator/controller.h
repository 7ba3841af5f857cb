// Controller: controller-runtime's controller. Informer events become keys in a WorkQueue;
// N workers pop keys and call the Reconciler, never two at once for one key. The Reconciler is
// level-based: it re-reads state (from the informers) and returns when to look again.
//   - ok, requeue_after > 0: Forget + AddAfter(requeue_after)
//   - ok, requeue: AddRateLimited; ok otherwise: Forget
//   - error (or an exception thrown by the reconciler, caught and logged): AddRateLimited (5 ms ..
//   1000 s per key, 10 qps / burst 100 overall), counted as an
//     error; errors with kInvalidArgument are terminal (not retried): the reconciler is expected
//     to have recorded them in a condition.
// Metrics: reconcile total by result, errors, latency histogram, queue depth, per controller;
// each reconcile's time split into API waits and the reconciler's own work (compute: for the
// campaign controller, mostly the planning step).
#ifndef PARATUNE_OPERATOR_CONTROLLER_H_
#define PARATUNE_OPERATOR_CONTROLLER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "operator/informer.h"
#include "operator/kube_client.h"
#include "operator/metrics.h"
#include "operator/work_queue.h"

namespace paratune::kube {

struct ReconcileResult {
  bool requeue = false;     // requeue with the rate limiter's delay.
  Millis requeue_after{0};  // > 0: look again after this long.
};

class Reconciler {
 public:
  virtual ~Reconciler() = default;
  // Called with the key of an object of the primary kind (which may no longer exist: then the
  // reconciler cleans up or does nothing). Called concurrently for different keys.
  virtual Result<ReconcileResult> Reconcile(const ObjectKey& key) = 0;
};

// Maps an event's object to the keys to reconcile.
using MapFunc = std::function<std::vector<ObjectKey>(const Json& obj)>;

struct ControllerOptions {
  std::string name;  // metric label and log name, e.g. "trialrun".
  int workers = 1;
  RateLimiterOptions rate_limiter;
  // Workers grow from `workers` up to this many while the queue holds more than twice as many
  // keys as there are workers (a burst of campaigns), and stay (idle ones just wait). <= workers:
  // fixed.
  int max_workers = 0;
};

class Controller {
 public:
  // Borrows reconciler, time and metrics (may be null); they must outlive the controller.
  Controller(ControllerOptions opts, Reconciler* reconciler, TimeSource* time,
             MetricsRegistry* metrics);
  Controller(const Controller&) = delete;
  Controller& operator=(const Controller&) = delete;
  ~Controller();

  // Reconcile the objects of this informer (its own key).
  void For(Informer* informer);
  // Reconcile the controller owner (ownerReference with controller=true and this kind, in the
  // child's namespace) whenever a child changes.
  void Owns(Informer* informer, const std::string& owner_kind);
  // Reconcile whatever `map` returns for each changed object.
  void Watches(Informer* informer, MapFunc map);

  // Starts the workers and returns; Stop (or destruction) shuts the queue down and joins them,
  // letting in-flight reconciles finish.
  void Start();
  void Stop();

  // Processes one ready key on the calling thread (tests). False when none was ready.
  bool ProcessNextReadyItem();

  WorkQueue& queue() { return queue_; }
  const std::string& name() const { return opts_.name; }

 private:
  void Enqueue(const ObjectKey& key);
  void WorkerLoop();
  void Process(const std::string& key);
  Result<ReconcileResult> RecoveringReconcile(const std::string& key);

  ControllerOptions opts_;
  Reconciler* reconciler_;
  TimeSource* time_;
  MetricsRegistry* metrics_;
  WorkQueue queue_;
  void MaybeGrow();

  std::mutex workers_mu_;
  std::vector<std::thread> workers_;  // guarded by workers_mu_ (appended while running)
  bool stopping_ = false;             // guarded by workers_mu_
  std::atomic<bool> started_{false};
  std::atomic<int> worker_count_{0};
};

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_CONTROLLER_H_
