// TokenBucket: qps/burst rate limiting (client-go's flowcontrol). Not thread-safe by itself;
// callers guard it. Reserve() always succeeds and returns how long the caller must wait, so a
// caller that sleeps that long stays within the rate.
#ifndef PARATUNE_OPERATOR_TOKEN_BUCKET_H_
#define PARATUNE_OPERATOR_TOKEN_BUCKET_H_

#include "base/time_source.h"

namespace paratune::kube {

class TokenBucket {
 public:
  // qps <= 0 means unlimited.
  TokenBucket(double qps, int burst, SteadyTime now);
  // Takes one token (possibly going into debt) and returns the wait until it is really available.
  Millis Reserve(SteadyTime now);
  double qps() const { return qps_; }

 private:
  double qps_;
  double burst_;
  double tokens_;
  SteadyTime last_;
};

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_TOKEN_BUCKET_H_
