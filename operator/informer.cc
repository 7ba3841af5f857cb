#include "operator/informer.h"

#include <charconv>
#include <optional>
#include <thread>

namespace paratune::kube {

namespace {

// An etcd resourceVersion as a number (client-go's MutationCache compares them so); nullopt when
// it is not one, and then nothing is taken as newer than the cache.
std::optional<uint64_t> VersionNumber(const std::string& rv) {
  uint64_t v = 0;
  const auto [end, ec] = std::from_chars(rv.data(), rv.data() + rv.size(), v);
  if (ec != std::errc() || end != rv.data() + rv.size() || rv.empty()) return std::nullopt;
  return v;
}

// True when resourceVersion `a` is known to be newer than `b`.
bool Newer(const std::string& a, const std::string& b) {
  const auto va = VersionNumber(a);
  const auto vb = VersionNumber(b);
  return va && vb && *va > *vb;
}

// Written copies kept at most (each lives from a write until its watch event, usually
// milliseconds); past it one is dropped, and Get reads the watch's copy for it, as without them.
constexpr size_t kMaxWritten = 4096;

}  // namespace

Informer::Informer(KubeClient* client, GroupVersionResource gvr, ReflectorOptions opts,
                   TimeSource* time, MetricsRegistry* metrics)
    : gvr_(gvr),
      ns_(opts.ns),
      label_selector_(opts.label_selector),
      reflector_(client, gvr, std::move(opts), this, time, metrics) {}

void Informer::AddEventHandler(EventHandler handler) {
  {
    std::lock_guard lock(handlers_mu_);
    handlers_.push_back(handler);
  }
  if (!synced_.load() || !handler.on_add) return;
  for (const ObjectPtr& obj : List()) handler.on_add(*obj);
}

std::vector<EventHandler> Informer::Handlers() const {
  std::lock_guard lock(handlers_mu_);
  return handlers_;
}

void Informer::Run(std::stop_token stop) { reflector_.Run(stop); }

bool Informer::WaitForSync(std::stop_token stop, Millis timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!synced_.load() && !stop.stop_requested() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(Millis(5));
  }
  return synced_.load();
}

ObjectPtr Informer::Get(const ObjectKey& key) const {
  std::shared_lock lock(mu_);
  const std::string k = key.String();
  auto it = items_.find(k);
  ObjectPtr cached = it == items_.end() ? nullptr : it->second;
  auto w = written_.find(k);
  if (w != written_.end() &&
      (!cached || Newer(ResourceVersionOf(*w->second), ResourceVersionOf(*cached)))) {
    return w->second;
  }
  return cached;
}

void Informer::Wrote(const Json& obj) {
  if (!obj.is_object() || !VersionNumber(ResourceVersionOf(obj))) return;
  if (!ns_.empty() && NamespaceOf(obj) != ns_) return;  // not this informer's to serve
  Json copy = obj;
  PrepareForCache(&copy);
  const std::string key = ObjectKey::Of(copy).String();
  std::unique_lock lock(mu_);
  auto it = items_.find(key);
  if (it != items_.end() && !Newer(ResourceVersionOf(copy), ResourceVersionOf(*it->second))) {
    return;  // the watch was quicker
  }
  auto w = written_.find(key);
  if (w != written_.end() && !Newer(ResourceVersionOf(copy), ResourceVersionOf(*w->second))) {
    return;
  }
  if (written_.size() >= kMaxWritten && w == written_.end()) written_.erase(written_.begin());
  written_[key] = std::make_shared<const Json>(std::move(copy));
}

void Informer::CaughtUpLocked(const std::string& key, const std::string& resource_version) {
  auto w = written_.find(key);
  if (w == written_.end()) return;
  if (!Newer(ResourceVersionOf(*w->second), resource_version)) written_.erase(w);
}

std::vector<ObjectPtr> Informer::List(const std::string& ns) const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  if (ns.empty()) {
    out.reserve(items_.size());
    for (const auto& [k, v] : items_) out.push_back(v);
    return out;
  }
  auto it = by_ns_.find(ns);
  if (it == by_ns_.end()) return out;
  for (const std::string& key : it->second) out.push_back(items_.at(key));
  return out;
}

std::vector<ObjectPtr> Informer::ByOwner(const std::string& owner_uid) const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  auto it = by_owner_.find(owner_uid);
  if (it == by_owner_.end()) return out;
  for (const std::string& key : it->second) out.push_back(items_.at(key));
  return out;
}

void Informer::AddIndex(const std::string& name, IndexFunc fn) {
  std::unique_lock lock(mu_);
  if (indexes_.count(name) > 0) return;
  auto& [index_fn, values] = indexes_[name];
  index_fn = std::move(fn);
  for (const auto& [key, obj] : items_) {
    for (const std::string& v : index_fn(*obj)) values[v].insert(key);
  }
}

std::vector<ObjectPtr> Informer::ByIndex(const std::string& name, const std::string& value) const {
  std::shared_lock lock(mu_);
  std::vector<ObjectPtr> out;
  auto index = indexes_.find(name);
  if (index == indexes_.end()) return out;
  auto it = index->second.second.find(value);
  if (it == index->second.second.end()) return out;
  for (const std::string& key : it->second) out.push_back(items_.at(key));
  return out;
}

size_t Informer::Size() const {
  std::shared_lock lock(mu_);
  return items_.size();
}

void Informer::EraseLocked(const std::string& key) {
  auto it = items_.find(key);
  if (it == items_.end()) return;
  const Json& obj = *it->second;
  auto ns = by_ns_.find(NamespaceOf(obj));
  if (ns != by_ns_.end() && ns->second.erase(key) && ns->second.empty()) by_ns_.erase(ns);
  for (const std::string& uid : OwnerUidsOf(obj)) {
    auto o = by_owner_.find(uid);
    if (o != by_owner_.end() && o->second.erase(key) && o->second.empty()) by_owner_.erase(o);
  }
  for (auto& [name, index] : indexes_) {
    auto& [fn, values] = index;
    for (const std::string& v : fn(obj)) {
      auto e = values.find(v);
      if (e != values.end() && e->second.erase(key) && e->second.empty()) values.erase(e);
    }
  }
  items_.erase(it);
}

void Informer::UpsertLocked(const std::string& key, ObjectPtr obj) {
  EraseLocked(key);
  by_ns_[NamespaceOf(*obj)].insert(key);
  for (const std::string& uid : OwnerUidsOf(*obj)) by_owner_[uid].insert(key);
  for (auto& [name, index] : indexes_) {
    for (const std::string& v : index.first(*obj)) index.second[v].insert(key);
  }
  items_[key] = std::move(obj);
}

// What the cache keeps of an object: kind and apiVersion always (a list's items lack them), and
// no metadata.managedFields. No reader needs the server-side-apply field owners, and they are
// often the larger part of an object's metadata (client-go's TransformStripManagedFields;
// issue 17: operator RSS at 200 campaigns).
void Informer::PrepareForCache(Json* obj) const {
  if (!obj->contains("kind") && !gvr_.kind.empty()) (*obj)["kind"] = gvr_.kind;
  if (!obj->contains("apiVersion")) (*obj)["apiVersion"] = gvr_.ApiVersion();
  auto meta = obj->find("metadata");
  if (meta != obj->end() && meta->is_object()) meta->erase("managedFields");
}

void Informer::Replace(std::vector<Json> items, const std::string& resource_version) {
  std::vector<std::pair<ObjectPtr, ObjectPtr>> changed;  // (old, new); new null: deleted.
  {
    std::unique_lock lock(mu_);
    std::map<std::string, ObjectPtr> fresh;
    for (Json& item : items) {
      PrepareForCache(&item);
      std::string key = ObjectKey::Of(item).String();
      fresh[key] = std::make_shared<const Json>(std::move(item));
    }
    for (const auto& [key, old] : items_) {
      if (!fresh.count(key)) changed.emplace_back(old, nullptr);
    }
    for (auto& [key, obj] : fresh) {
      auto it = items_.find(key);
      ObjectPtr old = it == items_.end() ? nullptr : it->second;
      if (old && ResourceVersionOf(*old) == ResourceVersionOf(*obj)) continue;
      changed.emplace_back(old, obj);
    }
    for (const auto& [old, obj] : changed) {
      if (obj) {
        UpsertLocked(ObjectKey::Of(*obj).String(), obj);
      } else {
        EraseLocked(ObjectKey::Of(*old).String());
      }
    }
    // A written copy older than the list is stale (the object may since have been deleted).
    for (auto w = written_.begin(); w != written_.end();) {
      auto f = fresh.find(w->first);
      const std::string& seen = f != fresh.end() ? ResourceVersionOf(*f->second) : resource_version;
      w = Newer(ResourceVersionOf(*w->second), seen) ? std::next(w) : written_.erase(w);
    }
  }
  synced_.store(true);
  for (const EventHandler& h : Handlers()) {
    for (const auto& [old, obj] : changed) {
      if (!obj && h.on_delete) h.on_delete(*old);
      if (obj && !old && h.on_add) h.on_add(*obj);
      if (obj && old && h.on_update) h.on_update(*old, *obj);
    }
  }
}

void Informer::OnWatchEvent(const WatchEvent& event) {
  Json obj = event.object;
  PrepareForCache(&obj);
  std::string key = ObjectKey::Of(obj).String();
  auto ptr = std::make_shared<const Json>(std::move(obj));
  ObjectPtr old;
  {
    std::unique_lock lock(mu_);
    auto it = items_.find(key);
    if (it != items_.end()) old = it->second;
    if (event.type == WatchEvent::Type::kDeleted) {
      EraseLocked(key);
      written_.erase(key);
    } else {
      UpsertLocked(key, ptr);
      CaughtUpLocked(key, ResourceVersionOf(*ptr));
    }
  }
  for (const EventHandler& h : Handlers()) {
    if (event.type == WatchEvent::Type::kDeleted) {
      if (h.on_delete) h.on_delete(old ? *old : *ptr);
    } else if (old) {
      if (h.on_update) h.on_update(*old, *ptr);
    } else if (h.on_add) {
      h.on_add(*ptr);
    }
  }
}

}  // namespace paratune::kube
