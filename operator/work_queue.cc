#include "operator/work_queue.h"

#include <algorithm>
#include <cmath>

namespace paratune::kube {

WorkQueue::WorkQueue(TimeSource* time, RateLimiterOptions opts)
    : time_(time), opts_(opts), bucket_(opts.qps, opts.burst, time->Now()) {}

void WorkQueue::AddLocked(const std::string& key) {
  if (shutting_down_ || dirty_.count(key)) return;
  dirty_.insert(key);
  if (processing_.count(key)) return;  // re-queued by Done.
  queue_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::EraseDelayedLocked(const std::string& key) {
  auto it = delayed_.find(key);
  if (it == delayed_.end()) return;
  due_.erase({it->second, key});
  delayed_.erase(it);
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard lock(mu_);
  EraseDelayedLocked(key);
  AddLocked(key);
}

void WorkQueue::AddAfter(const std::string& key, Millis delay) {
  std::lock_guard lock(mu_);
  if (shutting_down_) return;
  if (delay <= Millis(0)) {
    EraseDelayedLocked(key);
    AddLocked(key);
    return;
  }
  SteadyTime at = time_->Now() + delay;
  auto it = delayed_.find(key);
  if (it != delayed_.end() && it->second <= at) return;  // already due sooner
  const bool sooner_than_all = due_.empty() || at < due_.begin()->first;
  EraseDelayedLocked(key);
  delayed_.emplace(key, at);
  due_.emplace(at, key);
  // Only a new earliest time can shorten a waiting Get's wait.
  if (sooner_than_all) cv_.notify_all();
}

Millis WorkQueue::RateLimitDelayLocked(const std::string& key) {
  int n = failures_[key]++;
  double ms = opts_.base_delay.count() * std::pow(2.0, std::min(n, 62));
  Millis per_item = ms > static_cast<double>(opts_.max_delay.count())
                        ? opts_.max_delay
                        : Millis(static_cast<int64_t>(ms));
  return std::max(per_item, bucket_.Reserve(time_->Now()));
}

void WorkQueue::AddRateLimited(const std::string& key) {
  Millis delay;
  {
    std::lock_guard lock(mu_);
    delay = RateLimitDelayLocked(key);
  }
  AddAfter(key, delay);
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

int WorkQueue::NumRequeues(const std::string& key) const {
  std::lock_guard lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

void WorkQueue::PromoteDueLocked() {
  if (due_.empty()) return;
  const SteadyTime now = time_->Now();
  while (!due_.empty() && due_.begin()->first <= now) {
    std::string key = due_.begin()->second;
    due_.erase(due_.begin());
    delayed_.erase(key);
    AddLocked(key);
  }
}

std::optional<std::string> WorkQueue::PopLocked() {
  PromoteDueLocked();
  if (queue_.empty()) return std::nullopt;
  std::string key = std::move(queue_.front());
  queue_.pop_front();
  dirty_.erase(key);
  processing_.insert(key);
  return key;
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock lock(mu_);
  while (true) {
    if (shutting_down_) return std::nullopt;
    if (auto key = PopLocked()) return key;
    if (due_.empty()) {
      cv_.wait(lock);
      continue;
    }
    // Wait for the earliest delayed item; capped so a fake clock's advance is seen promptly.
    auto wait = std::chrono::duration_cast<Millis>(due_.begin()->first - time_->Now());
    cv_.wait_for(lock, std::clamp(wait, Millis(1), Millis(50)));
  }
}

std::optional<std::string> WorkQueue::TryGet() {
  std::lock_guard lock(mu_);
  if (shutting_down_) return std::nullopt;
  return PopLocked();
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard lock(mu_);
  processing_.erase(key);
  if (dirty_.count(key) && !shutting_down_) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::ShutDown() {
  std::lock_guard lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
}

bool WorkQueue::shutting_down() const {
  std::lock_guard lock(mu_);
  return shutting_down_;
}

size_t WorkQueue::Len() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

size_t WorkQueue::DelayedLen() const {
  std::lock_guard lock(mu_);
  return delayed_.size();
}

}  // namespace paratune::kube
