// MetricsRegistry: a small Prometheus registry (counters, gauges, histograms with labels) and its
// text exposition format (served at /metrics by the Manager). Thread-safe; metric objects are
// owned by the registry and live as long as it does, so callers may keep the raw pointers.
#ifndef PARATUNE_OPERATOR_METRICS_H_
#define PARATUNE_OPERATOR_METRICS_H_

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace paratune::kube {

using Labels = std::vector<std::pair<std::string, std::string>>;

class MetricsRegistry {
 public:
  MetricsRegistry() = default;
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // Declares a family (idempotent). Histograms use `buckets` (upper bounds, ascending).
  void DeclareCounter(const std::string& name, const std::string& help);
  void DeclareGauge(const std::string& name, const std::string& help);
  void DeclareHistogram(const std::string& name, const std::string& help,
                        std::vector<double> buckets);

  // Updates a series, declaring the family with an empty help when unknown.
  void Inc(const std::string& name, const Labels& labels, double by = 1);
  void Set(const std::string& name, const Labels& labels, double value);
  void Observe(const std::string& name, const Labels& labels, double value);
  // A gauge computed at scrape time (queue depth).
  void SetGaugeFunction(const std::string& name, const Labels& labels, std::function<double()> fn);
  // A whole family computed at every scrape (a Prometheus client's "collector"): `fn` returns
  // the series that exist now, so a series it stops returning (a deleted campaign's) is gone
  // from the next scrape: the family holds no more series than `fn` returns. `type` is counter
  // or gauge. Replaces a previous function of that name. `fn` runs with the registry locked:
  // it must not call the registry.
  using SeriesList = std::vector<std::pair<Labels, double>>;
  void SetFamilyFunction(const std::string& name, const std::string& type, const std::string& help,
                         std::function<SeriesList()> fn);

  // Current value of a counter/gauge series (0 when absent); count of a histogram series.
  double Value(const std::string& name, const Labels& labels) const;
  double HistogramCount(const std::string& name, const Labels& labels) const;

  // Prometheus text format 0.0.4.
  std::string Render() const;

  // Default latency buckets in seconds: 1 ms .. 60 s.
  static std::vector<double> LatencyBuckets();

 private:
  struct Series {
    double value = 0;
    std::vector<double> bucket_counts;
    double sum = 0;
    uint64_t count = 0;
    std::function<double()> fn;
  };
  struct Family {
    std::string type;  // counter | gauge | histogram
    std::string help;
    std::vector<double> buckets;
    std::map<std::string, Series> series;  // by rendered label string
    std::function<SeriesList()> collect;   // SetFamilyFunction: series computed at scrape
  };
  Family& FamilyLocked(const std::string& name, const std::string& type);

  mutable std::mutex mu_;
  std::map<std::string, Family> families_;  // guarded by mu_
};

// Seconds the calling thread has spent waiting on API requests so far (the REST client adds to
// it). The controller subtracts it from a reconcile's duration to time the reconciler's own
// work (for the campaign controller: planning) separately from its API calls.
double ThreadApiSeconds();
void AddThreadApiSeconds(double seconds);

// Well-known metric names (controller-runtime's, so dashboards carry over).
inline constexpr char kReconcileTotal[] = "controller_runtime_reconcile_total";
inline constexpr char kReconcileErrors[] = "controller_runtime_reconcile_errors_total";
inline constexpr char kReconcileTime[] = "controller_runtime_reconcile_time_seconds";
inline constexpr char kReconcileApiTime[] = "paratune_reconcile_api_seconds";
inline constexpr char kReconcileComputeTime[] = "paratune_reconcile_compute_seconds";
inline constexpr char kQueueDepth[] = "workqueue_depth";
inline constexpr char kWatchRestarts[] = "paratune_watch_restarts_total";
inline constexpr char kRestLatency[] = "rest_client_request_duration_seconds";
inline constexpr char kRestRequests[] = "rest_client_requests_total";
inline constexpr char kRestRetries[] = "rest_client_request_retries_total";
inline constexpr char kRestThrottleSeconds[] =
    "paratune_rest_client_rate_limiter_wait_seconds_total";
inline constexpr char kRestServerFlowControl[] = "paratune_rest_client_server_flow_control";
inline constexpr char kLeaderGauge[] = "leader_election_master_status";
// The label of a series per lifecycle phase (kube-state-metrics' kube_pod_status_phase{phase}).
inline constexpr char kPhaseLabel[] = "phase";

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_METRICS_H_
