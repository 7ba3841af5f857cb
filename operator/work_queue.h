// WorkQueue: client-go's rate-limited delaying work queue of string keys ("ns/name").
// - Dedup: a key added while queued is queued once.
// - No concurrent processing: a key added while a worker holds it (between Get and Done) is
//   queued again only after Done, so one key is never processed by two workers at once.
// - AddAfter: delayed add; AddRateLimited: delay = max(per-item exponential 5 ms * 2^n capped at
//   1000 s, overall token bucket 10 qps / burst 100); Forget resets the per-item count.
// Thread-safe. Time comes from the injected TimeSource (delays are checked against it).
#ifndef PARATUNE_OPERATOR_WORK_QUEUE_H_
#define PARATUNE_OPERATOR_WORK_QUEUE_H_

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/time_source.h"
#include "operator/token_bucket.h"

namespace paratune::kube {

struct RateLimiterOptions {
  Millis base_delay{5};
  Millis max_delay{1000 * 1000};
  double qps = 10;
  int burst = 100;
};

class WorkQueue {
 public:
  explicit WorkQueue(TimeSource* time, RateLimiterOptions opts = {});
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key);
  void AddAfter(const std::string& key, Millis delay);
  // Adds after the rate limiter's delay for this key (and bumps its failure count).
  void AddRateLimited(const std::string& key);
  // Stops the per-item backoff for key (call after a successful reconcile).
  void Forget(const std::string& key);
  // How many times key was AddRateLimited since the last Forget.
  int NumRequeues(const std::string& key) const;

  // Blocks until a key is ready or the queue is shut down (nullopt). The caller must call
  // Done(key) when finished with it.
  std::optional<std::string> Get();
  // Non-blocking Get: a ready key, or nullopt.
  std::optional<std::string> TryGet();
  void Done(const std::string& key);

  // Wakes every Get with nullopt; later adds are ignored.
  void ShutDown();
  bool shutting_down() const;
  // Keys ready to be handed out (not counting delayed or in-flight keys).
  size_t Len() const;
  // Keys waiting for their delay.
  size_t DelayedLen() const;

 private:
  Millis RateLimitDelayLocked(const std::string& key);
  void PromoteDueLocked();
  void EraseDelayedLocked(const std::string& key);
  void AddLocked(const std::string& key);
  std::optional<std::string> PopLocked();

  TimeSource* time_;
  RateLimiterOptions opts_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;        // guarded by mu_
  std::set<std::string> dirty_;          // queued keys; guarded by mu_
  std::set<std::string> processing_;     // keys between Get and Done; guarded by mu_
  std::map<std::string, int> failures_;  // guarded by mu_
  // Delayed keys, each once at its earliest ready time, and the same ordered by that time so
  // that promoting the due ones and finding the next wake-up cost O(log n), not a scan of
  // every delayed key (thousands of campaigns and trials wait on a RequeueAfter at once).
  std::map<std::string, SteadyTime> delayed_;         // guarded by mu_
  std::set<std::pair<SteadyTime, std::string>> due_;  // guarded by mu_
  TokenBucket bucket_;                                // guarded by mu_
  bool shutting_down_ = false;                        // guarded by mu_
};

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_WORK_QUEUE_H_
