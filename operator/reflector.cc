#include "operator/reflector.h"

#include <spdlog/spdlog.h>

#include <algorithm>

namespace paratune::kube {

Reflector::Reflector(KubeClient* client, GroupVersionResource gvr, ReflectorOptions opts,
                     ReflectorSink* sink, TimeSource* time, MetricsRegistry* metrics)
    : client_(client),
      gvr_(std::move(gvr)),
      opts_(std::move(opts)),
      sink_(sink),
      time_(time),
      metrics_(metrics),
      rng_(opts_.seed != 0 ? opts_.seed : std::random_device{}()) {}

std::string Reflector::last_resource_version() const {
  std::lock_guard lock(rv_mu_);
  return last_rv_;
}

Status Reflector::ListAll(std::string* rv) {
  std::vector<Json> items;
  ListOptions lo;
  lo.label_selector = opts_.label_selector;
  lo.field_selector = opts_.field_selector;
  lo.limit = opts_.page_size;
  while (true) {
    auto page = client_->List(gvr_, opts_.ns, lo);
    if (!page.ok()) return page.status();
    for (Json& item : page->items) items.push_back(std::move(item));
    if (page->continue_token.empty()) {
      *rv = page->resource_version;
      break;
    }
    lo.continue_token = page->continue_token;
  }
  lists_++;
  sink_->Replace(std::move(items), *rv);
  return Status::Ok();
}

Status Reflector::WatchOnce(const std::string& from_rv, std::stop_token stop) {
  WatchOptions wo;
  wo.label_selector = opts_.label_selector;
  wo.field_selector = opts_.field_selector;
  wo.resource_version = from_rv;
  wo.allow_bookmarks = true;
  std::uniform_int_distribution<int> dist(opts_.min_watch_timeout_s,
                                          2 * opts_.min_watch_timeout_s - 1);
  wo.timeout_seconds = dist(rng_);
  return client_->Watch(
      gvr_, opts_.ns, wo,
      [&](const WatchEvent& ev) {
        std::string rv = ResourceVersionOf(ev.object);
        if (ev.type != WatchEvent::Type::kBookmark) sink_->OnWatchEvent(ev);
        if (!rv.empty()) {
          std::lock_guard lock(rv_mu_);
          last_rv_ = rv;
        }
        return !stop.stop_requested();
      },
      stop);
}

Millis Reflector::NextBackoff(Millis* current) {
  Millis base = *current;
  *current = std::min(opts_.max_backoff, *current * 2);
  std::uniform_real_distribution<double> jitter(1.0, 1.5);
  return Millis(static_cast<int64_t>(base.count() * jitter(rng_)));
}

void Reflector::Run(std::stop_token stop) {
  Millis backoff = opts_.min_backoff;
  bool need_list = true;
  const Labels labels{{"resource", gvr_.GroupResource()}};
  while (!stop.stop_requested()) {
    if (need_list) {
      std::string rv;
      Status s = ListAll(&rv);
      if (!s.ok()) {
        spdlog::warn("reflector {}: list failed: {}", gvr_.GroupResource(), StatusText(s));
        if (!time_->SleepFor(NextBackoff(&backoff), stop)) return;
        continue;
      }
      std::lock_guard lock(rv_mu_);
      last_rv_ = rv;
      need_list = false;
    }
    Status s = WatchOnce(last_resource_version(), stop);
    if (stop.stop_requested()) return;
    if (s.ok()) {  // the server ended the watch (timeout): watch again from where we were.
      backoff = opts_.min_backoff;
      continue;
    }
    restarts_++;
    if (metrics_ != nullptr) metrics_->Inc(kWatchRestarts, labels);
    if (s.code() == StatusCode::kGone) {
      spdlog::info("reflector {}: resourceVersion too old, relisting", gvr_.GroupResource());
      need_list = true;
      continue;
    }
    spdlog::warn("reflector {}: watch failed: {}", gvr_.GroupResource(), StatusText(s));
    if (!time_->SleepFor(NextBackoff(&backoff), stop)) return;
  }
}

}  // namespace paratune::kube
