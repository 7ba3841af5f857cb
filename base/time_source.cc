#include "base/time_source.h"

#include <cstdio>
#include <ctime>
#include <thread>

namespace paratune {

RealTimeSource* RealTimeSource::Get() {
  static RealTimeSource instance;
  return &instance;
}

bool RealTimeSource::SleepFor(Millis d, std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  return !cv.wait_for(lock, stop, d, [] { return false; }) && !stop.stop_requested();
}

FakeTimeSource::FakeTimeSource(FakeSleep sleep)
    : sleep_mode_(sleep),
      steady_(std::chrono::hours(1000)),
      system_(std::chrono::seconds(1767225600)) {}

SteadyTime FakeTimeSource::Now() const {
  std::lock_guard lock(mu_);
  return steady_;
}

SystemTime FakeTimeSource::SystemNow() const {
  std::lock_guard lock(mu_);
  return system_;
}

bool FakeTimeSource::SleepFor(Millis d, std::stop_token stop) {
  std::unique_lock lock(mu_);
  sleeps_.push_back(d);
  if (sleep_mode_ == FakeSleep::kAdvancesClock) {
    steady_ += d;
    system_ += d;
    lock.unlock();
    cv_.notify_all();
    return !stop.stop_requested();
  }
  SteadyTime until = steady_ + d;
  cv_.wait(lock, stop, [&] { return steady_ >= until; });
  return !stop.stop_requested();
}

std::vector<Millis> FakeTimeSource::sleeps() const {
  std::lock_guard lock(mu_);
  return sleeps_;
}

void FakeTimeSource::Advance(Millis d) {
  {
    std::lock_guard lock(mu_);
    steady_ += d;
    system_ += d;
  }
  cv_.notify_all();
}

namespace {
std::string Format(SystemTime t, bool micros) {
  auto secs = std::chrono::time_point_cast<std::chrono::seconds>(t);
  std::time_t tt = std::chrono::system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[64];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out = buf;
  if (micros) {
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(t - secs).count();
    std::snprintf(buf, sizeof(buf), ".%06lld", static_cast<long long>(us));
    out += buf;
  }
  return out + "Z";
}
}  // namespace

std::string FormatRfc3339(SystemTime t) { return Format(t, false); }
std::string FormatMicroTime(SystemTime t) { return Format(t, true); }

bool ParseRfc3339(const std::string& s, SystemTime* out) {
  std::tm tm{};
  const char* rest = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return false;
  long long micros = 0;
  if (*rest == '.') {
    ++rest;
    int digits = 0;
    while (*rest >= '0' && *rest <= '9') {
      if (digits < 6) micros = micros * 10 + (*rest - '0');
      ++digits;
      ++rest;
    }
    for (; digits < 6; ++digits) micros *= 10;
  }
  if (*rest != 'Z') return false;
  *out = std::chrono::system_clock::from_time_t(timegm(&tm)) + std::chrono::microseconds(micros);
  return true;
}

}  // namespace paratune
