// LeaderElector: leader election on a coordination.k8s.io/v1 Lease, as client-go does it:
// lease duration 15 s, renew deadline 10 s, retry period 2 s. A candidate takes the Lease when it
// is free or its holder's renewTime + leaseDurationSeconds has passed (on this process's clock,
// measured from when this candidate last saw the record change), then renews every retry period;
// if it cannot renew within the renew deadline it stops leading. Optimistic concurrency on the
// Lease's resourceVersion makes takeover safe. A leader renews with one PUT on the Lease it last
// wrote (client-go's fast path since 1.29); only when that conflicts or fails does it read the
// Lease again (GET, then PUT). Thread-safe; Run blocks one thread.
#ifndef PARATUNE_OPERATOR_LEADER_ELECTION_H_
#define PARATUNE_OPERATOR_LEADER_ELECTION_H_

#include <atomic>
#include <functional>
#include <stop_token>
#include <string>

#include "base/time_source.h"
#include "operator/kube_client.h"
#include "operator/metrics.h"

namespace paratune::kube {

struct LeaderElectionOptions {
  std::string lease_namespace;
  std::string lease_name;
  std::string identity;  // unique per process: hostname_pid by default.
  Millis lease_duration{15000};
  Millis renew_deadline{10000};
  Millis retry_period{2000};
  bool release_on_cancel = true;  // give the Lease up on shutdown so a successor starts at once.
};

class LeaderElector {
 public:
  LeaderElector(KubeClient* client, LeaderElectionOptions opts, TimeSource* time,
                MetricsRegistry* metrics);

  // Campaigns until leading, calls on_started_leading (on this thread; it must return promptly,
  // e.g. start workers), renews until stop or loss, then calls on_stopped_leading (which must
  // stop the leader's work) and only after it returns releases the Lease (on stop, with
  // release_on_cancel), so leaders never overlap. Returns when
  // stop is requested or leadership is lost (the caller should then exit: client-go's contract).
  void Run(std::stop_token stop, const std::function<void()>& on_started_leading,
           const std::function<void()>& on_stopped_leading);

  // One attempt to acquire or renew; true when this candidate holds the Lease afterwards.
  bool TryAcquireOrRenew();
  // Clears holderIdentity when this candidate holds the Lease.
  void Release();
  bool IsLeader() const { return leader_.load(); }
  std::string observed_holder() const;

 private:
  Json MakeSpec(int transitions, SystemTime acquire) const;
  // The fast path: a PUT of the Lease this leader last wrote, with a fresh renewTime. False
  // when not leading, nothing is cached, or the PUT failed (then the slow path reads it).
  bool RenewCached();

  KubeClient* client_;
  LeaderElectionOptions opts_;
  TimeSource* time_;
  MetricsRegistry* metrics_;
  std::atomic<bool> leader_{false};
  mutable std::mutex mu_;
  std::string observed_rv_;      // guarded by mu_
  std::string observed_holder_;  // guarded by mu_
  SteadyTime observed_time_{};   // guarded by mu_
  SteadyTime last_renew_{};      // guarded by mu_
  Json last_written_;            // the Lease as this candidate last wrote it; guarded by mu_
};

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_LEADER_ELECTION_H_
