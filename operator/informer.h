// Informer: a cache of one kind fed by a Reflector (optionally only objects matching a label
// selector, ReflectorOptions::label_selector), with indexes by namespace, by owner UID (every
// ownerReference) and any named index added with AddIndex (client-go's Indexers), and handlers
// (controller-runtime's source.Kind). Reads are served from the cache: objects are immutable shared
// snapshots, safe to hold after the cache moves on. Handlers run on the informer's thread, in event
// order, and must be quick (enqueue a key). Cached objects carry no metadata.managedFields.
// Objects this process wrote are read back by Get before the watch delivers them (Wrote).
// Thread-safe: Get/List/ByOwner/HasSynced/Wrote from any
// thread; Run blocks one thread until stop.
#ifndef PARATUNE_OPERATOR_INFORMER_H_
#define PARATUNE_OPERATOR_INFORMER_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <vector>

#include "operator/object_reader.h"
#include "operator/reflector.h"

namespace paratune::kube {

struct EventHandler {
  std::function<void(const Json& obj)> on_add;
  std::function<void(const Json& old_obj, const Json& new_obj)> on_update;
  std::function<void(const Json& obj)> on_delete;  // the last state known.
};

class Informer final : public ObjectReader, private ReflectorSink {
 public:
  // Borrows client, time and metrics (may be null).
  Informer(KubeClient* client, GroupVersionResource gvr, ReflectorOptions opts, TimeSource* time,
           MetricsRegistry* metrics);
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Registers a handler. Handlers added after the first sync get synthetic adds for every cached
  // object. Call from any thread.
  void AddEventHandler(EventHandler handler);

  // Runs the reflector until stop.
  void Run(std::stop_token stop);
  // True once the first list has been applied.
  bool HasSynced() const { return synced_.load(); }
  // Waits for HasSynced up to `timeout` (real time) or stop; returns HasSynced().
  bool WaitForSync(std::stop_token stop, Millis timeout) const;

  // The cached object or nullptr.
  ObjectPtr Get(const ObjectKey& key) const override;
  // Every cached object in `ns` ("" : all), sorted by key.
  std::vector<ObjectPtr> List(const std::string& ns = "") const override;
  // Objects that carry an ownerReference with this uid.
  std::vector<ObjectPtr> ByOwner(const std::string& owner_uid) const override;
  // Adds a named index (cached objects are indexed at once). Call before Run; a name already
  // added is kept.
  void AddIndex(const std::string& name, IndexFunc fn) override;
  // Objects whose index `name` has `value`; empty for an unknown index.
  std::vector<ObjectPtr> ByIndex(const std::string& name, const std::string& value) const override;
  // Get returns `obj` until the watch delivers its resourceVersion or a newer one, or it is
  // deleted, or a relist is at least as new (only Get: lists and indexes stay the watch's).
  void Wrote(const Json& obj) override;
  size_t Size() const;
  const GroupVersionResource& gvr() const { return gvr_; }
  const std::string& namespace_() const { return ns_; }
  const std::string& label_selector() const { return label_selector_; }
  const Reflector& reflector() const { return reflector_; }

 private:
  void PrepareForCache(Json* obj) const;
  void Replace(std::vector<Json> items, const std::string& resource_version) override;
  void OnWatchEvent(const WatchEvent& event) override;
  void UpsertLocked(const std::string& key, ObjectPtr obj);
  void EraseLocked(const std::string& key);
  // Drops the written copy of `key` once `resource_version` (the cache's) has caught up with it.
  void CaughtUpLocked(const std::string& key, const std::string& resource_version);
  std::vector<EventHandler> Handlers() const;

  GroupVersionResource gvr_;
  std::string ns_;
  std::string label_selector_;
  Reflector reflector_;
  mutable std::shared_mutex mu_;
  std::map<std::string, ObjectPtr> items_;    // guarded by mu_
  std::map<std::string, ObjectPtr> written_;  // Wrote's copies ahead of the watch; guarded by mu_
  std::map<std::string, std::set<std::string>> by_ns_;     // guarded by mu_
  std::map<std::string, std::set<std::string>> by_owner_;  // guarded by mu_
  // name -> (function, value -> keys); guarded by mu_
  std::map<std::string, std::pair<IndexFunc, std::map<std::string, std::set<std::string>>>>
      indexes_;
  mutable std::mutex handlers_mu_;
  std::vector<EventHandler> handlers_;  // guarded by handlers_mu_
  std::atomic<bool> synced_{false};
};

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_INFORMER_H_
