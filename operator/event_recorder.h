// EventRecorder: writes core/v1 Events about objects (kubectl describe shows them), correlated
// as client-go's EventCorrelator does so that a busy object costs few requests:
//   - a repeat of the same (object, type, reason, message) within `window` bumps the count of
//     the existing Event; the PATCH is sent at most once per `patch_interval` per Event (a
//     repeat inside it is counted locally and carried by the next PATCH: the writer thread
//     sends it once the interval has passed, Flush and the destructor send every count still
//     held, so the same Warning 50 times is one Event with count 50, never a silent drop);
//   - past `max_similar` distinct messages with the same (object, type, reason) within
//     `window`, further ones are folded into one Event "(combined from similar events): <latest
//     message>" whose count is patched the same way.
// Best effort: failures are logged, never returned (events must not break a reconcile). With
// `async`, Event() only queues (bounded; overflow is dropped and counted) and one background
// thread writes, so reconciles never wait on Event writes. Memory is bounded: entries older
// than `window` are pruned. Thread-safe.
#ifndef PARATUNE_OPERATOR_EVENT_RECORDER_H_
#define PARATUNE_OPERATOR_EVENT_RECORDER_H_

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "base/time_source.h"
#include "operator/kube_client.h"

namespace paratune::kube {

struct EventRecorderOptions {
  Millis window{std::chrono::minutes(10)};
  Millis patch_interval{std::chrono::seconds(30)};
  int max_similar = 10;
  bool async = false;
  size_t queue_limit = 4096;
};

class EventRecorder {
 public:
  // component: the reporting controller ("paratune-operator"). Borrows client and time.
  EventRecorder(KubeClient* client, std::string component, TimeSource* time,
                EventRecorderOptions opts = {});
  EventRecorder(const EventRecorder&) = delete;
  EventRecorder& operator=(const EventRecorder&) = delete;
  // Writes what is queued (async), then stops the writer.
  ~EventRecorder();

  // type: "Normal" or "Warning"; reason: CamelCase ("TrialStarted"); message: one sentence.
  void Event(const Json& object, const std::string& type, const std::string& reason,
             const std::string& message);
  // Blocks until every queued event is written (async mode) and every count held locally is
  // patched (both modes).
  void Flush();
  // Events recorded so far (each call of Event that was not dropped): for tests and metrics.
  int recorded() const;
  // API requests the recorder sent (creates and patches) and events dropped on a full queue.
  int requests() const;
  int dropped() const;
  // Correlation entries held (bounded by pruning).
  size_t tracked() const;
  // The same bound under the name the security benchmark reports: at most kMaxSeen
  // correlation entries are remembered, whatever the window.
  size_t remembered() const { return tracked(); }
  static constexpr size_t kMaxSeen = 4096;

 private:
  struct Pending {
    Json involved;
    std::string ns, type, reason, message;
  };
  struct Seen {
    std::string event_name;
    std::string event_ns;
    int count = 0;          // occurrences so far
    int written_count = 0;  // the count the API server has
    SteadyTime first, last, last_write;
  };
  void Write(const Pending& p);
  // PATCHes the counts held locally: those whose patch_interval has passed, or all. Called
  // under write_mu_.
  void WriteHeldCounts(bool all);
  void CreateOrBump(const std::string& key, const Pending& p, const std::string& message);
  void PruneLocked(SteadyTime now);
  void WriterLoop();

  KubeClient* client_;
  std::string component_;
  TimeSource* time_;
  EventRecorderOptions opts_;
  mutable std::mutex mu_;
  std::map<std::string, Seen> seen_;                                  // guarded by mu_
  std::map<std::string, std::map<std::string, SteadyTime>> similar_;  // guarded by mu_
  std::set<std::string> held_;  // keys of seen_ with count > written_count; guarded by mu_
  int recorded_ = 0;            // guarded by mu_
  int requests_ = 0;            // guarded by mu_
  int dropped_ = 0;             // guarded by mu_
  int calls_since_prune_ = 0;   // guarded by mu_
  std::mutex write_mu_;         // one writer at a time (sync callers and the async thread)
  std::mutex queue_mu_;
  std::condition_variable queue_cv_;
  std::deque<Pending> queue_;  // guarded by queue_mu_
  bool stopping_ = false;      // guarded by queue_mu_
  int in_flight_ = 0;          // guarded by queue_mu_
  std::thread writer_;
};

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_EVENT_RECORDER_H_
