// RestKubeClient: KubeClient over HTTP(S) with cpprestsdk and OpenSSL. Client-side rate limiting
// (RestConfig qps/burst, a token bucket shared by all non-watch requests) only while the server
// has not shown API Priority and Fairness, unless RestConfig::rate_limit_always; 429 (and 5xx
// with Retry-After) retried after Retry-After or a backoff. Metrics: request counts by verb,
// resource and code (rest_client_requests_total), latency by verb and code, retries, seconds
// spent in the token bucket, whether the server does flow control. Watch streaming with
// partial-line buffering. Thread-safe.
#ifndef PARATUNE_OPERATOR_REST_CLIENT_H_
#define PARATUNE_OPERATOR_REST_CLIENT_H_

#include <memory>

#include "base/time_source.h"
#include "operator/kube_client.h"
#include "operator/metrics.h"
#include "operator/rest_config.h"

namespace paratune::kube {

class RestKubeClient : public KubeClient {
 public:
  // Fails with kInvalidArgument for a malformed server URL or unreadable credentials.
  // Borrows time and metrics (metrics may be null).
  static Result<std::unique_ptr<RestKubeClient>> Create(const RestConfig& cfg, TimeSource* time,
                                                        MetricsRegistry* metrics);
  // Requests made so far (non-watch), for benchmarks and tests.
  virtual int64_t request_count() const = 0;
  // True once a response carried X-Kubernetes-PF-FlowSchema-UID (the server has API Priority
  // and Fairness): the token bucket is then skipped unless RestConfig::rate_limit_always.
  virtual bool server_flow_control() const = 0;
};

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_REST_CLIENT_H_
