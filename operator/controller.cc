#include "operator/controller.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace paratune::kube {

Controller::Controller(ControllerOptions opts, Reconciler* reconciler, TimeSource* time,
                       MetricsRegistry* metrics)
    : opts_(std::move(opts)),
      reconciler_(reconciler),
      time_(time),
      metrics_(metrics),
      queue_(time, opts_.rate_limiter) {
  if (metrics_ == nullptr) return;
  metrics_->DeclareCounter(kReconcileTotal, "Total number of reconciliations per controller");
  metrics_->DeclareCounter(kReconcileErrors, "Total number of reconciliation errors");
  metrics_->DeclareHistogram(kReconcileTime, "Length of time per reconciliation",
                             MetricsRegistry::LatencyBuckets());
  metrics_->DeclareHistogram(kReconcileApiTime,
                             "Seconds of a reconciliation spent waiting on API requests",
                             MetricsRegistry::LatencyBuckets());
  metrics_->DeclareHistogram(kReconcileComputeTime,
                             "Seconds of a reconciliation spent in the reconciler itself "
                             "(planning, for the campaign controller)",
                             MetricsRegistry::LatencyBuckets());
  metrics_->SetGaugeFunction(kQueueDepth, {{"name", opts_.name}},
                             [this] { return static_cast<double>(queue_.Len()); });
  metrics_->SetGaugeFunction("paratune_controller_workers", {{"controller", opts_.name}},
                             [this] { return static_cast<double>(worker_count_.load()); });
}

Controller::~Controller() {
  Stop();
  if (metrics_ != nullptr) {
    metrics_->SetGaugeFunction(kQueueDepth, {{"name", opts_.name}}, [] { return 0.0; });
    metrics_->SetGaugeFunction("paratune_controller_workers", {{"controller", opts_.name}},
                               [] { return 0.0; });
  }
}

void Controller::Enqueue(const ObjectKey& key) {
  queue_.Add(key.String());
  MaybeGrow();
}

void Controller::MaybeGrow() {
  if (!started_.load() || opts_.max_workers <= opts_.workers) return;
  const size_t depth = queue_.Len();
  std::lock_guard lock(workers_mu_);
  if (stopping_ || workers_.size() >= static_cast<size_t>(opts_.max_workers)) return;
  if (depth <= 2 * workers_.size()) return;
  workers_.emplace_back([this] { WorkerLoop(); });
  worker_count_.store(static_cast<int>(workers_.size()));
  spdlog::debug("controller {}: {} keys queued, {} workers", opts_.name, depth, workers_.size());
}

void Controller::For(Informer* informer) {
  informer->AddEventHandler(
      EventHandler{[this](const Json& obj) { Enqueue(ObjectKey::Of(obj)); },
                   [this](const Json&, const Json& obj) { Enqueue(ObjectKey::Of(obj)); },
                   [this](const Json& obj) { Enqueue(ObjectKey::Of(obj)); }});
}

void Controller::Owns(Informer* informer, const std::string& owner_kind) {
  Watches(informer, [owner_kind](const Json& obj) {
    std::vector<ObjectKey> out;
    const Json* ref = ControllerOwnerOf(obj);
    if (ref != nullptr && ref->value("kind", "") == owner_kind) {
      out.push_back({NamespaceOf(obj), ref->value("name", "")});
    }
    return out;
  });
}

void Controller::Watches(Informer* informer, MapFunc map) {
  auto enqueue_all = [this, map](const Json& obj) {
    for (const ObjectKey& key : map(obj)) Enqueue(key);
  };
  informer->AddEventHandler(EventHandler{enqueue_all,
                                         [enqueue_all](const Json& old_obj, const Json& obj) {
                                           enqueue_all(old_obj);
                                           enqueue_all(obj);
                                         },
                                         enqueue_all});
}

void Controller::Start() {
  std::lock_guard lock(workers_mu_);
  if (started_.exchange(true)) return;
  for (int i = 0; i < std::max(1, opts_.workers); ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
  worker_count_.store(static_cast<int>(workers_.size()));
}

void Controller::Stop() {
  std::vector<std::thread> workers;
  {
    std::lock_guard lock(workers_mu_);
    stopping_ = true;
  }
  queue_.ShutDown();
  {
    std::lock_guard lock(workers_mu_);
    workers.swap(workers_);
  }
  for (std::thread& t : workers) {
    if (t.joinable()) t.join();
  }
}

void Controller::WorkerLoop() {
  while (auto key = queue_.Get()) {
    Process(*key);
    queue_.Done(*key);
  }
}

bool Controller::ProcessNextReadyItem() {
  auto key = queue_.TryGet();
  if (!key) return false;
  Process(*key);
  queue_.Done(*key);
  return true;
}

// A reconciler that throws must not take the process (and every other key) down with it:
// like controller-runtime's RecoverPanic, the exception becomes an error, which is logged,
// counted and retried with backoff.
Result<ReconcileResult> Controller::RecoveringReconcile(const std::string& key) {
  try {
    return reconciler_->Reconcile(ObjectKey::Parse(key));
  } catch (const std::exception& e) {
    spdlog::error("controller {}: {}: reconciler threw: {}", opts_.name, key, e.what());
    return Status::Internal(std::string("reconciler threw: ") + e.what());
  } catch (...) {
    spdlog::error("controller {}: {}: reconciler threw a non-standard exception", opts_.name, key);
    return Status::Internal("reconciler threw a non-standard exception");
  }
}

void Controller::Process(const std::string& key) {
  const Labels name{{"controller", opts_.name}};
  auto start = std::chrono::steady_clock::now();
  const double api_before = ThreadApiSeconds();
  Result<ReconcileResult> r = RecoveringReconcile(key);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double api_secs = ThreadApiSeconds() - api_before;
  std::string outcome;
  if (!r.ok()) {
    const Status& s = r.status();
    outcome = "error";
    if (s.terminal()) {
      spdlog::warn("controller {}: {}: terminal error: {}", opts_.name, key, StatusText(s));
      queue_.Forget(key);
    } else {
      spdlog::info("controller {}: {}: retrying after error: {}", opts_.name, key, StatusText(s));
      queue_.AddRateLimited(key);
    }
  } else if (r->requeue_after > Millis(0)) {
    outcome = "requeue_after";
    queue_.Forget(key);
    queue_.AddAfter(key, r->requeue_after);
  } else if (r->requeue) {
    outcome = "requeue";
    queue_.AddRateLimited(key);
  } else {
    outcome = "success";
    queue_.Forget(key);
  }
  if (metrics_ == nullptr) return;
  metrics_->Inc(kReconcileTotal, {{"controller", opts_.name}, {"result", outcome}});
  if (outcome == "error") metrics_->Inc(kReconcileErrors, name);
  metrics_->Observe(kReconcileTime, name, secs);
  metrics_->Observe(kReconcileApiTime, name, api_secs);
  metrics_->Observe(kReconcileComputeTime, name, std::max(0.0, secs - api_secs));
}

}  // namespace paratune::kube
