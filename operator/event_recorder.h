// EventRecorder: writes core/v1 Events about objects (kubectl describe shows them). Repeats of
// the same (object, type, reason, message) within 10 minutes bump count and lastTimestamp on the
// existing Event instead of creating a new one, as client-go's correlator does. Best effort:
// failures are logged, never returned (events must not break a reconcile). Memory is bounded:
// past kMaxSeen remembered events, those older than the 10-minute window are forgotten, then the
// oldest, down to half. Thread-safe.
#ifndef PARATUNE_OPERATOR_EVENT_RECORDER_H_
#define PARATUNE_OPERATOR_EVENT_RECORDER_H_

#include <cstddef>
#include <map>
#include <mutex>
#include <string>

#include "operator/kube_client.h"
#include "operator/time_source.h"

namespace paratune::kube {

class EventRecorder {
 public:
  // component: the reporting controller ("paratune-operator"). Borrows client and time.
  EventRecorder(KubeClient* client, std::string component, TimeSource* time);

  // type: "Normal" or "Warning"; reason: CamelCase ("TrialStarted"); message: one sentence.
  void Event(const Json& object, const std::string& type, const std::string& reason,
             const std::string& message);
  // Events written so far (created or bumped): for tests and metrics.
  int recorded() const;
  // Events remembered for de-duplication (bounded by kMaxSeen).
  size_t remembered() const;
  static constexpr size_t kMaxSeen = 4096;

 private:
  struct Seen {
    std::string event_name;
    std::string event_ns;
    int count = 0;
    SteadyTime last;
  };
  void PruneLocked();  // requires mu_

  KubeClient* client_;
  std::string component_;
  TimeSource* time_;
  mutable std::mutex mu_;
  std::map<std::string, Seen> seen_;  // guarded by mu_
  int recorded_ = 0;                  // guarded by mu_
};

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_EVENT_RECORDER_H_
