#include "operator/event_recorder.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>
#include <vector>

namespace paratune::kube {

EventRecorder::EventRecorder(KubeClient* client, std::string component, TimeSource* time)
    : client_(client), component_(std::move(component)), time_(time) {}

int EventRecorder::recorded() const {
  std::lock_guard lock(mu_);
  return recorded_;
}

size_t EventRecorder::remembered() const {
  std::lock_guard lock(mu_);
  return seen_.size();
}

void EventRecorder::PruneLocked() {
  if (seen_.size() <= kMaxSeen) return;
  const SteadyTime now = time_->Now();
  for (auto it = seen_.begin(); it != seen_.end();) {
    it = now - it->second.last >= std::chrono::minutes(10) ? seen_.erase(it) : std::next(it);
  }
  if (seen_.size() <= kMaxSeen / 2) return;
  std::vector<SteadyTime> times;
  times.reserve(seen_.size());
  for (const auto& [k, v] : seen_) times.push_back(v.last);
  auto mid = times.begin() + static_cast<std::ptrdiff_t>(times.size() - kMaxSeen / 2);
  std::nth_element(times.begin(), mid, times.end());
  const SteadyTime cutoff = *mid;
  for (auto it = seen_.begin(); it != seen_.end();) {
    it = it->second.last < cutoff ? seen_.erase(it) : std::next(it);
  }
}

void EventRecorder::Event(const Json& object, const std::string& type, const std::string& reason,
                          const std::string& message) {
  std::string ns = NamespaceOf(object).empty() ? "default" : NamespaceOf(object);
  std::string key = UidOf(object) + "|" + type + "|" + reason + "|" + message;
  std::string now = FormatRfc3339(time_->SystemNow());
  std::lock_guard lock(mu_);
  auto it = seen_.find(key);
  if (it != seen_.end() && time_->Now() - it->second.last < std::chrono::minutes(10)) {
    Seen& s = it->second;
    auto patched = client_->Patch(resources::kEvents, s.event_ns, s.event_name, PatchType::kMerge,
                                  Json{{"count", s.count + 1}, {"lastTimestamp", now}});
    if (patched.ok()) {
      s.count += 1;
      s.last = time_->Now();
      ++recorded_;
      return;
    }
  }
  Json involved{{"apiVersion", object.value("apiVersion", "")},
                {"kind", object.value("kind", "")},
                {"name", NameOf(object)},
                {"namespace", NamespaceOf(object)},
                {"uid", UidOf(object)},
                {"resourceVersion", ResourceVersionOf(object)}};
  Json event{{"apiVersion", "v1"},
             {"kind", "Event"},
             {"metadata", {{"generateName", NameOf(object) + "."}, {"namespace", ns}}},
             {"involvedObject", involved},
             {"type", type},
             {"reason", reason},
             {"message", message.substr(0, 1024)},
             {"source", {{"component", component_}}},
             {"reportingComponent", component_},
             {"firstTimestamp", now},
             {"lastTimestamp", now},
             {"count", 1}};
  auto created = client_->Create(resources::kEvents, ns, event);
  if (!created.ok()) {
    spdlog::warn("event {} on {}/{} not recorded: {}", reason, ns, NameOf(object),
                 StatusText(created.status()));
    return;
  }
  seen_[key] = Seen{NameOf(*created), ns, 1, time_->Now()};
  PruneLocked();
  ++recorded_;
}

}  // namespace paratune::kube
