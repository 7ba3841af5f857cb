#include "controllers/node_health/node_ledger_store.h"

#include <cstdlib>

namespace paratune::controllers {

namespace {

using kube::Json;
namespace res = kube::resources;

// Changes kept unwritten at most (coalescing): each is applied again on every Modify.
constexpr size_t kMaxDeferredChanges = 256;

}  // namespace

NodeLedgerStore::NodeLedgerStore(kube::KubeClient* client, std::string ns, int max_attempts,
                                 const ConfigMapCache* configmaps)
    : client_(client),
      ns_(std::move(ns)),
      max_attempts_(max_attempts < 1 ? 1 : max_attempts),
      own_cache_(configmaps == nullptr ? std::make_unique<ConfigMapCache>(client) : nullptr),
      configmaps_(configmaps == nullptr ? own_cache_.get() : configmaps) {}

Result<NodeLedgerStore::Read> NodeLedgerStore::ReadLedger(bool live) {
  auto cm = configmaps_->Read(ns_, kNodeHealthConfigMap, live);
  if (!cm.ok()) {
    if (cm.status().code() == StatusCode::kNotFound) return Read{health::NodeLedger(options_), ""};
    return cm.status();
  }
  const std::string rv = kube::ResourceVersionOf(*cm);
  {
    std::lock_guard lock(parsed_mu_);
    if (!rv.empty() && rv == parsed_rv_) return Read{parsed_, rv};
  }
  auto read = Parse(*cm);
  if (!read.ok()) return read.status();
  std::lock_guard lock(parsed_mu_);
  parsed_rv_ = rv;
  parsed_ = read->ledger;
  return read;
}

Result<NodeLedgerStore::Read> NodeLedgerStore::Parse(const Json& cm) {
  Read out;
  out.ledger = health::NodeLedger(options_);
  out.resource_version = kube::ResourceVersionOf(cm);
  const Json& data = cm.value("data", Json::object());
  if (!data.is_object() || !data.contains(kNodeHealthKey) || !data[kNodeHealthKey].is_string()) {
    return out;  // created by hand without the key: start empty, the next write adds it
  }
  Json j = Json::parse(data[kNodeHealthKey].get<std::string>(), nullptr, false);
  const std::string where = "configmap " + ns_ + "/" + kNodeHealthConfigMap + " " + kNodeHealthKey;
  if (j.is_discarded()) return Status::Internal(where + ": not JSON");
  auto ledger = health::NodeLedger::FromJson(j, options_);
  if (!ledger.ok()) return Status::Internal(where + ": " + ledger.status().message());
  out.ledger = std::move(*ledger);
  return out;
}

Result<health::NodeLedger> NodeLedgerStore::Load() {
  auto read = ReadLedger(false);
  if (!read.ok()) return read.status();
  return std::move(read->ledger);
}

Result<Json> NodeLedgerStore::Write(const health::NodeLedger& ledger, const std::string& rv) {
  Json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata",
              {{"name", kNodeHealthConfigMap},
               {"namespace", ns_},
               {"labels",
                {{"app.kubernetes.io/name", "paratune"}, {kOperatorStateLabel, "node-health"}}}}},
             {"data", {{kNodeHealthKey, ledger.ToJson().dump()}}}};
  if (rv.empty()) {
    auto created = client_->Create(res::kConfigMaps, ns_, cm);
    if (!created.ok() && created.status().code() == StatusCode::kAlreadyExists) {
      return Status::Conflict("configmap " + std::string(kNodeHealthConfigMap) +
                              " was created concurrently");
    }
    return created;
  }
  cm["metadata"]["resourceVersion"] = rv;
  return client_->Update(res::kConfigMaps, cm);
}

bool NodeLedgerStore::Defer(bool suspects_unchanged) const {
  if (coalesce_interval_.count() <= 0 || time_ == nullptr || !suspects_unchanged) return false;
  if (deferred_.size() >= kMaxDeferredChanges) return false;
  return last_write_time_.has_value() && time_->Now() - *last_write_time_ < coalesce_interval_;
}

Result<health::NodeLedger> NodeLedgerStore::Modify(
    const std::function<void(health::NodeLedger*)>& change, health::CompactionReport* report) {
  // One writer in this process at a time, each starting from what the previous one wrote: the
  // campaign reconciles of one operator never conflict with each other, whatever the cache lag.
  std::lock_guard write(write_mu_);
  Status last = Status::Ok();
  bool live = false;
  for (int attempt = 0; attempt < max_attempts_; ++attempt) {
    Result<Read> read = Status::Internal("unset");
    if (!live && last_written_) {
      read = *last_written_;
    } else {
      read = ReadLedger(live);
    }
    if (!read.ok()) return read.status();
    const Json before = read->ledger.ToJson();
    const std::vector<std::string> suspects_before = read->ledger.SuspectNames();
    // The changes not written yet are applied again first, in order (all idempotent).
    for (const auto& c : deferred_) c(&read->ledger);
    change(&read->ledger);
    const health::CompactionReport compacted = read->ledger.Compact(max_bytes_);
    if (report != nullptr) *report = compacted;
    if (!compacted.fits) {
      deferred_.clear();  // never written as is: the next change starts from what is stored
      return Status::Exhausted("configmap " + ns_ + "/" + kNodeHealthConfigMap + ": the ledger (" +
                               std::to_string(compacted.bytes) + " bytes of suspects) exceeds " +
                               std::to_string(max_bytes_) + " bytes; not written");
    }
    if (read->ledger.ToJson() == before) {
      deferred_.clear();
      return std::move(read->ledger);
    }
    if (Defer(read->ledger.SuspectNames() == suspects_before && !compacted.changed())) {
      deferred_.push_back(change);
      return std::move(read->ledger);
    }
    auto written = Write(read->ledger, read->resource_version);
    if (written.ok()) {
      last_written_ = Read{read->ledger, kube::ResourceVersionOf(*written)};
      deferred_.clear();
      if (time_ != nullptr) last_write_time_ = time_->Now();
      return std::move(read->ledger);
    }
    last_written_.reset();
    last = written.status();
    if (last.code() != StatusCode::kConflict) return last;
    // Someone else wrote first (another process, a person, an earlier release's unlabelled
    // ConfigMap that a create met): apply the change again to the version read live. Waiting
    // for the cache instead lost to 200 campaigns writing at once (the scale benchmark).
    live = true;
  }
  return last;
}

}  // namespace paratune::controllers
