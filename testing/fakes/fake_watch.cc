// FakeKubeClient::Watch: replays history after a resourceVersion, then streams new events.
#include <cstdlib>

#include "testing/fakes/fake_kube_client.h"

namespace paratune::kube {

namespace {
bool Matches(const GroupVersionResource& gvr, const std::string& ns, const WatchOptions& opts,
             const GroupVersionResource& event_gvr, const std::string& event_ns, const Json& obj) {
  if (!(event_gvr == gvr)) return false;
  if (!ns.empty() && gvr.namespaced && event_ns != ns) return false;
  const Json& meta = obj["metadata"];
  return MatchesLabelSelector(meta.contains("labels") ? meta["labels"] : Json(),
                              opts.label_selector) &&
         MatchesFieldSelector(obj, opts.field_selector);
}
}  // namespace

Status FakeKubeClient::Watch(const GroupVersionResource& gvr, const std::string& ns,
                             const WatchOptions& opts, const WatchHandler& handler,
                             std::stop_token stop) {
  std::unique_lock lock(mu_);
  PARATUNE_RETURN_IF_ERROR(TakeInjected("watch", gvr.plural));
  gvrs_[gvr.GroupResource()] = gvr;
  int64_t from = 0;
  std::vector<WatchEvent> pending;
  if (opts.resource_version.empty() || opts.resource_version == "0") {
    from = rv_;
    std::string resource = gvr.GroupResource();
    for (auto it = objects_.lower_bound({resource, "", ""});
         it != objects_.end() && std::get<0>(it->first) == resource; ++it) {
      if (Matches(gvr, ns, opts, gvr, std::get<1>(it->first), it->second)) {
        pending.push_back({WatchEvent::Type::kAdded, it->second});
      }
    }
  } else {
    from = std::strtoll(opts.resource_version.c_str(), nullptr, 10);
    if (from < compacted_rv_) {
      return Status(StatusCode::kGone, "too old resource version: " + opts.resource_version + " (" +
                                           std::to_string(compacted_rv_) + ")");
    }
  }
  int64_t epoch = close_epoch_;
  ++open_watches_;
  while (true) {
    for (const Entry& e : history_) {
      if (e.rv <= from) continue;
      from = e.rv;
      if (Matches(gvr, ns, opts, e.gvr, e.ns, e.event.object)) pending.push_back(e.event);
    }
    if (!pending.empty()) {
      std::vector<WatchEvent> batch;
      batch.swap(pending);
      lock.unlock();
      bool go_on = true;
      for (const WatchEvent& ev : batch) {
        if (!(go_on = handler(ev))) break;
      }
      lock.lock();
      if (!go_on) break;
      if (history_.empty() || history_.back().rv <= from) {
        // nothing new arrived while delivering.
      } else {
        continue;
      }
    }
    bool woke = cv_.wait(lock, stop, [&] {
      return close_epoch_ != epoch || (!history_.empty() && history_.back().rv > from);
    });
    if (!woke || close_epoch_ != epoch) break;
    if (from < compacted_rv_) {
      --open_watches_;
      return Status(StatusCode::kGone, "too old resource version");
    }
  }
  --open_watches_;
  return Status::Ok();
}

}  // namespace paratune::kube
