#include "operator/leader_election.h"

#include <spdlog/spdlog.h>

namespace paratune::kube {

LeaderElector::LeaderElector(KubeClient* client, LeaderElectionOptions opts, TimeSource* time,
                             MetricsRegistry* metrics)
    : client_(client), opts_(std::move(opts)), time_(time), metrics_(metrics) {}

std::string LeaderElector::observed_holder() const {
  std::lock_guard lock(mu_);
  return observed_holder_;
}

Json LeaderElector::MakeSpec(int transitions, SystemTime acquire) const {
  return Json{{"holderIdentity", opts_.identity},
              {"leaseDurationSeconds",
               std::chrono::duration_cast<std::chrono::seconds>(opts_.lease_duration).count()},
              {"acquireTime", FormatMicroTime(acquire)},
              {"renewTime", FormatMicroTime(time_->SystemNow())},
              {"leaseTransitions", transitions}};
}

bool LeaderElector::RenewCached() {
  Json next;
  {
    std::lock_guard lock(mu_);
    if (!leader_.load() || !last_written_.is_object()) return false;
    next = last_written_;
  }
  next["spec"]["renewTime"] = FormatMicroTime(time_->SystemNow());
  auto updated = client_->Update(resources::kLeases, next);
  std::lock_guard lock(mu_);
  if (!updated.ok()) {
    last_written_ = Json();  // stale or unreachable: the slow path reads the Lease
    return false;
  }
  observed_rv_ = ResourceVersionOf(*updated);
  observed_holder_ = opts_.identity;
  observed_time_ = last_renew_ = time_->Now();
  last_written_ = *updated;
  return true;
}

bool LeaderElector::TryAcquireOrRenew() {
  if (RenewCached()) return true;
  auto current = client_->Get(resources::kLeases, opts_.lease_namespace, opts_.lease_name);
  if (!current.ok() && current.status().code() == StatusCode::kNotFound) {
    Json lease{{"apiVersion", "coordination.k8s.io/v1"},
               {"kind", "Lease"},
               {"metadata", {{"name", opts_.lease_name}, {"namespace", opts_.lease_namespace}}},
               {"spec", MakeSpec(0, time_->SystemNow())}};
    auto created = client_->Create(resources::kLeases, opts_.lease_namespace, lease);
    if (!created.ok()) return false;
    std::lock_guard lock(mu_);
    last_written_ = *created;
    observed_rv_ = ResourceVersionOf(*created);
    observed_holder_ = opts_.identity;
    observed_time_ = last_renew_ = time_->Now();
    return true;
  }
  if (!current.ok()) return false;
  const Json& spec = (*current)["spec"];
  std::string holder = spec.value("holderIdentity", "");
  SteadyTime now = time_->Now();
  {
    std::lock_guard lock(mu_);
    if (ResourceVersionOf(*current) != observed_rv_) {  // the record moved: restart the clock.
      observed_rv_ = ResourceVersionOf(*current);
      observed_holder_ = holder;
      observed_time_ = now;
    }
    Millis lease(spec.value("leaseDurationSeconds", 15) * 1000);
    bool held_by_other = !holder.empty() && holder != opts_.identity;
    if (held_by_other && observed_time_ + lease > now) return false;
  }
  Json next = *current;
  int transitions = spec.value("leaseTransitions", 0);
  SystemTime acquire = time_->SystemNow();
  if (holder == opts_.identity) {
    SystemTime parsed;
    if (ParseRfc3339(spec.value("acquireTime", ""), &parsed)) acquire = parsed;
  } else {
    ++transitions;
  }
  next["spec"] = MakeSpec(transitions, acquire);
  auto updated = client_->Update(resources::kLeases, next);
  if (!updated.ok()) return false;  // a conflict means someone else won this round.
  std::lock_guard lock(mu_);
  last_written_ = *updated;
  observed_rv_ = ResourceVersionOf(*updated);
  observed_holder_ = opts_.identity;
  observed_time_ = last_renew_ = time_->Now();
  return true;
}

void LeaderElector::Release() {
  if (!leader_.load()) return;
  auto current = client_->Get(resources::kLeases, opts_.lease_namespace, opts_.lease_name);
  if (!current.ok() || (*current)["spec"].value("holderIdentity", "") != opts_.identity) return;
  Json next = *current;
  next["spec"]["holderIdentity"] = "";
  next["spec"]["leaseDurationSeconds"] = 1;
  next["spec"]["renewTime"] = FormatMicroTime(time_->SystemNow());
  (void)client_->Update(resources::kLeases, next);
  leader_.store(false);
  std::lock_guard lock(mu_);
  last_written_ = Json();
}

void LeaderElector::Run(std::stop_token stop, const std::function<void()>& on_started_leading,
                        const std::function<void()>& on_stopped_leading) {
  const Labels labels{{"name", opts_.lease_name}};
  while (!stop.stop_requested() && !TryAcquireOrRenew()) {
    if (!time_->SleepFor(opts_.retry_period, stop)) return;
  }
  if (stop.stop_requested()) return;
  leader_.store(true);
  if (metrics_ != nullptr) metrics_->Set(kLeaderGauge, labels, 1);
  spdlog::info("leader election: {} acquired lease {}/{}", opts_.identity, opts_.lease_namespace,
               opts_.lease_name);
  on_started_leading();
  while (time_->SleepFor(opts_.retry_period, stop)) {
    if (TryAcquireOrRenew()) continue;
    SteadyTime last;
    {
      std::lock_guard lock(mu_);
      last = last_renew_;
    }
    if (time_->Now() - last >= opts_.renew_deadline) {
      spdlog::error("leader election: {} lost lease {}/{}", opts_.identity, opts_.lease_namespace,
                    opts_.lease_name);
      break;
    }
  }
  // Stop the work done under the Lease BEFORE giving it up: a successor may start at once after
  // Release, and two leaders reconciling at the same time is what election exists to prevent.
  on_stopped_leading();
  if (stop.stop_requested() && opts_.release_on_cancel) Release();
  leader_.store(false);
  if (metrics_ != nullptr) metrics_->Set(kLeaderGauge, labels, 0);
}

}  // namespace paratune::kube
