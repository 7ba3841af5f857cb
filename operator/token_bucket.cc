#include "operator/token_bucket.h"

#include <algorithm>

namespace paratune::kube {

TokenBucket::TokenBucket(double qps, int burst, SteadyTime now)
    : qps_(qps), burst_(std::max(1, burst)), tokens_(std::max(1, burst)), last_(now) {}

Millis TokenBucket::Reserve(SteadyTime now) {
  if (qps_ <= 0) return Millis(0);
  if (now > last_) {
    double elapsed = std::chrono::duration<double>(now - last_).count();
    tokens_ = std::min(burst_, tokens_ + elapsed * qps_);
    last_ = now;
  }
  tokens_ -= 1;
  if (tokens_ >= 0) return Millis(0);
  return Millis(static_cast<int64_t>(-tokens_ / qps_ * 1000.0 + 0.999));
}

}  // namespace paratune::kube
