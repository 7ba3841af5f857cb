#include "operator/event_recorder.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "base/utf8.h"

namespace paratune::kube {

namespace {
constexpr char kCombinedPrefix[] = "(combined from similar events): ";
constexpr int kPruneEvery = 256;
}  // namespace

EventRecorder::EventRecorder(KubeClient* client, std::string component, TimeSource* time,
                             EventRecorderOptions opts)
    : client_(client), component_(std::move(component)), time_(time), opts_(opts) {
  if (opts_.async) writer_ = std::thread([this] { WriterLoop(); });
}

EventRecorder::~EventRecorder() {
  {
    std::lock_guard lock(queue_mu_);
    stopping_ = true;
  }
  queue_cv_.notify_all();
  if (writer_.joinable()) writer_.join();
  std::lock_guard write(write_mu_);
  WriteHeldCounts(true);
}

int EventRecorder::recorded() const {
  std::lock_guard lock(mu_);
  return recorded_;
}

int EventRecorder::requests() const {
  std::lock_guard lock(mu_);
  return requests_;
}

int EventRecorder::dropped() const {
  std::lock_guard lock(mu_);
  return dropped_;
}

size_t EventRecorder::tracked() const {
  std::lock_guard lock(mu_);
  return seen_.size() + similar_.size();
}

void EventRecorder::Event(const Json& object, const std::string& type, const std::string& reason,
                          const std::string& message) {
  Pending p;
  p.involved = Json{{"apiVersion", object.value("apiVersion", "")},
                    {"kind", object.value("kind", "")},
                    {"name", NameOf(object)},
                    {"namespace", NamespaceOf(object)},
                    {"uid", UidOf(object)},
                    {"resourceVersion", ResourceVersionOf(object)}};
  p.ns = NamespaceOf(object).empty() ? "default" : NamespaceOf(object);
  p.type = type;
  p.reason = reason;
  p.message = message.substr(0, 1024);
  if (!opts_.async) {
    {
      std::lock_guard lock(mu_);
      ++recorded_;
    }
    std::lock_guard write(write_mu_);
    Write(p);
    return;
  }
  {
    std::lock_guard lock(queue_mu_);
    if (queue_.size() >= opts_.queue_limit) {
      std::lock_guard m(mu_);
      ++dropped_;
      return;
    }
    queue_.push_back(std::move(p));
  }
  {
    std::lock_guard lock(mu_);
    ++recorded_;
  }
  queue_cv_.notify_all();
}

void EventRecorder::Flush() {
  if (opts_.async) {
    std::unique_lock lock(queue_mu_);
    queue_cv_.wait(lock,
                   [this] { return (queue_.empty() && in_flight_ == 0) || !writer_.joinable(); });
  }
  std::lock_guard write(write_mu_);
  WriteHeldCounts(true);
}

void EventRecorder::WriteHeldCounts(bool all) {
  const SteadyTime now = time_->Now();
  std::vector<std::pair<std::string, Seen>> due;
  {
    std::lock_guard lock(mu_);
    for (auto it = held_.begin(); it != held_.end();) {
      auto s = seen_.find(*it);
      if (s == seen_.end() || s->second.count <= s->second.written_count) {
        it = held_.erase(it);
        continue;
      }
      if (all || now - s->second.last_write >= opts_.patch_interval)
        due.emplace_back(*it, s->second);
      ++it;
    }
  }
  for (const auto& [key, copy] : due) {
    auto patched = client_->Patch(
        resources::kEvents, copy.event_ns, copy.event_name, PatchType::kMerge,
        Json{{"count", copy.count}, {"lastTimestamp", FormatRfc3339(time_->SystemNow())}});
    std::lock_guard lock(mu_);
    ++requests_;
    auto again = seen_.find(key);
    if (again == seen_.end()) continue;
    if (patched.ok()) {
      again->second.written_count = copy.count;
      again->second.last_write = now;
    }
    if (!patched.ok() || again->second.count <= again->second.written_count) held_.erase(key);
  }
}

void EventRecorder::WriterLoop() {
  while (true) {
    Pending p;
    {
      std::unique_lock lock(queue_mu_);
      // Wakes at least every second to send the counts whose patch interval has passed.
      const bool woken = queue_cv_.wait_for(lock, std::chrono::seconds(1),
                                            [this] { return stopping_ || !queue_.empty(); });
      if (!woken) {
        lock.unlock();
        std::lock_guard write(write_mu_);
        WriteHeldCounts(false);
        continue;
      }
      if (queue_.empty()) return;  // stopping and drained
      p = std::move(queue_.front());
      queue_.pop_front();
      ++in_flight_;
    }
    {
      std::lock_guard write(write_mu_);
      Write(p);
    }
    {
      std::lock_guard lock(queue_mu_);
      --in_flight_;
    }
    queue_cv_.notify_all();
  }
}

void EventRecorder::PruneLocked(SteadyTime now) {
  for (auto it = seen_.begin(); it != seen_.end();) {
    it = now - it->second.last >= opts_.window ? seen_.erase(it) : std::next(it);
  }
  for (auto it = similar_.begin(); it != similar_.end();) {
    auto& messages = it->second;
    for (auto m = messages.begin(); m != messages.end();) {
      m = now - m->second >= opts_.window ? messages.erase(m) : std::next(m);
    }
    it = messages.empty() ? similar_.erase(it) : std::next(it);
  }
  // A hard bound besides the window: a flood of distinct events inside one window forgets
  // the least recently seen, down to half the bound.
  if (seen_.size() > kMaxSeen) {
    std::vector<std::pair<SteadyTime, std::string>> by_age;
    by_age.reserve(seen_.size());
    for (const auto& [key, entry] : seen_) by_age.emplace_back(entry.last, key);
    std::sort(by_age.begin(), by_age.end());
    for (size_t i = 0; i < by_age.size() - kMaxSeen / 2; ++i) seen_.erase(by_age[i].second);
  }
  if (similar_.size() > kMaxSeen) similar_.clear();
}

// Called under write_mu_ (one writer), so the read-modify-write of an entry does not race.
void EventRecorder::Write(const Pending& p) {
  const SteadyTime now = time_->Now();
  const std::string similar_key = p.involved.value("uid", "") + "|" + p.type + "|" + p.reason;
  std::string key = similar_key + "|" + p.message;
  std::string message = p.message;
  {
    std::lock_guard lock(mu_);
    if (++calls_since_prune_ >= kPruneEvery || seen_.size() > kMaxSeen) {
      calls_since_prune_ = 0;
      PruneLocked(now);
    }
    // The first max_similar distinct messages are Events of their own; later ones fold into
    // the combined Event (at most max_similar messages are remembered per object and reason).
    auto& messages = similar_[similar_key];
    auto known = messages.find(p.message);
    if (known != messages.end()) {
      known->second = now;
    } else if (messages.size() < static_cast<size_t>(opts_.max_similar)) {
      known = messages.emplace(p.message, now).first;
    }
    if (known == messages.end()) {
      key = similar_key + "|" + kCombinedPrefix;
      message = kCombinedPrefix + p.message;
    }
  }
  CreateOrBump(key, p, Utf8Head(message, 1024));
}

void EventRecorder::CreateOrBump(const std::string& key, const Pending& p,
                                 const std::string& message) {
  const SteadyTime now = time_->Now();
  const std::string stamp = FormatRfc3339(time_->SystemNow());
  std::unique_lock lock(mu_);
  auto it = seen_.find(key);
  if (it != seen_.end() && now - it->second.last < opts_.window) {
    Seen& s = it->second;
    s.count += 1;
    s.last = now;
    if (now - s.last_write < opts_.patch_interval) {  // held: WriteHeldCounts sends it
      held_.insert(key);
      return;
    }
    const Seen copy = s;
    lock.unlock();
    auto patched =
        client_->Patch(resources::kEvents, copy.event_ns, copy.event_name, PatchType::kMerge,
                       Json{{"count", copy.count}, {"lastTimestamp", stamp}, {"message", message}});
    lock.lock();
    ++requests_;
    auto again = seen_.find(key);
    if (patched.ok() && again != seen_.end()) {
      again->second.written_count = copy.count;
      again->second.last_write = now;
      if (again->second.count <= again->second.written_count) held_.erase(key);
      return;
    }
    // The Event is gone (the API server keeps them an hour): make a new one.
  }
  lock.unlock();
  Json event{
      {"apiVersion", "v1"},
      {"kind", "Event"},
      {"metadata", {{"generateName", p.involved.value("name", "") + "."}, {"namespace", p.ns}}},
      {"involvedObject", p.involved},
      {"type", p.type},
      {"reason", p.reason},
      {"message", message},
      {"source", {{"component", component_}}},
      {"reportingComponent", component_},
      {"firstTimestamp", stamp},
      {"lastTimestamp", stamp},
      {"count", 1}};
  auto created = client_->Create(resources::kEvents, p.ns, event);
  lock.lock();
  ++requests_;
  if (!created.ok()) {
    spdlog::warn("event {} on {}/{} not recorded: {}", p.reason, p.ns, p.involved.value("name", ""),
                 StatusText(created.status()));
    return;
  }
  seen_[key] = Seen{NameOf(*created), p.ns, 1, 1, now, now, now};
}

}  // namespace paratune::kube
