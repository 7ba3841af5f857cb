// TimeSource: the one clock everything reads (the runtime, the reconcilers, the LLM client's
// retries), injected so tests are deterministic (Envoy's TimeSource). RealTimeSource is
// thread-safe and stateless; FakeTimeSource is thread-safe and only moves when a test calls
// Advance() or, when built with FakeSleep::kAdvancesClock, when someone sleeps on it.
#ifndef PARATUNE_BASE_TIME_SOURCE_H_
#define PARATUNE_BASE_TIME_SOURCE_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <string>
#include <vector>

namespace paratune {

using SteadyTime = std::chrono::steady_clock::time_point;
using SystemTime = std::chrono::system_clock::time_point;
using Millis = std::chrono::milliseconds;

class TimeSource {
 public:
  virtual ~TimeSource() = default;
  // Monotonic time, for timeouts, backoff and rate limiting.
  virtual SteadyTime Now() const = 0;
  // Wall-clock time, for timestamps written to the API server (Lease renewTime, Events).
  virtual SystemTime SystemNow() const = 0;
  // Blocks until `d` has passed on this clock or `stop` is requested. Returns false when stopped.
  virtual bool SleepFor(Millis d, std::stop_token stop) = 0;
  // Blocks until `d` has passed on this clock (nothing can stop it).
  void SleepFor(Millis d) { SleepFor(d, std::stop_token{}); }
};

// The process clocks. Process-wide singleton; thread-safe.
class RealTimeSource final : public TimeSource {
 public:
  static RealTimeSource* Get();
  SteadyTime Now() const override { return std::chrono::steady_clock::now(); }
  SystemTime SystemNow() const override { return std::chrono::system_clock::now(); }
  bool SleepFor(Millis d, std::stop_token stop) override;
};

// What a sleep on a FakeTimeSource does.
enum class FakeSleep {
  // Waits until other threads Advance() the clock far enough (tests of threads that wait).
  kWaitsForAdvance,
  // Moves the clock forward by the sleep at once and records it (tests of single-threaded
  // retry loops: the LLM client's backoff).
  kAdvancesClock,
};

// A clock that stands still until Advance() (or, with FakeSleep::kAdvancesClock, a sleep).
// Starts at 2026-01-01T00:00:00Z. Thread-safe.
class FakeTimeSource final : public TimeSource {
 public:
  explicit FakeTimeSource(FakeSleep sleep = FakeSleep::kWaitsForAdvance);
  SteadyTime Now() const override;
  SystemTime SystemNow() const override;
  using TimeSource::SleepFor;
  bool SleepFor(Millis d, std::stop_token stop) override;
  void Advance(Millis d);
  // Every sleep asked of this clock, in order.
  std::vector<Millis> sleeps() const;

 private:
  const FakeSleep sleep_mode_;
  mutable std::mutex mu_;
  std::condition_variable_any cv_;
  SteadyTime steady_;           // guarded by mu_
  SystemTime system_;           // guarded by mu_
  std::vector<Millis> sleeps_;  // guarded by mu_
};

// RFC 3339 with second precision ("2026-01-02T03:04:05Z") and with microseconds
// ("2026-01-02T03:04:05.000000Z", the MicroTime of Lease renewTime).
std::string FormatRfc3339(SystemTime t);
std::string FormatMicroTime(SystemTime t);
// Parses both forms above; false on malformed input.
bool ParseRfc3339(const std::string& s, SystemTime* out);

}  // namespace paratune

#endif  // PARATUNE_BASE_TIME_SOURCE_H_
