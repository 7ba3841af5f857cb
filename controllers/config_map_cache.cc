#include "controllers/config_map_cache.h"

#include <chrono>
#include <set>
#include <thread>

#include "base/json_fields.h"

namespace paratune::controllers {

ConfigMapCache::ConfigMapCache(kube::KubeClient* client, std::vector<kube::Informer*> informers)
    : client_(client), informers_(std::move(informers)) {}

std::vector<const kube::Informer*> ConfigMapCache::Serving(const std::string& ns) const {
  std::vector<const kube::Informer*> out;
  for (const kube::Informer* inf : informers_) {
    if (inf == nullptr || !(inf->namespace_().empty() || inf->namespace_() == ns)) continue;
    if (!inf->HasSynced()) return {};  // not yet: read live
    out.push_back(inf);
  }
  return out;
}

kube::ObjectPtr ConfigMapCache::Cached(const std::vector<const kube::Informer*>& serving,
                                       const std::string& ns, const std::string& name) {
  for (const kube::Informer* inf : serving) {
    if (kube::ObjectPtr obj = inf->Get({ns, name})) return obj;
  }
  return nullptr;
}

Result<kube::Json> ConfigMapCache::Get(const std::string& ns, const std::string& name) const {
  const auto serving = Serving(ns);
  if (serving.empty()) return GetLive(ns, name);
  kube::ObjectPtr obj = Cached(serving, ns, name);
  if (!obj) return Status::NotFound("configmaps \"" + name + "\" not found (cached)");
  return *obj;
}

Result<kube::Json> ConfigMapCache::GetLive(const std::string& ns, const std::string& name) const {
  return client_->Get(kube::resources::kConfigMaps, ns, name);
}

Result<std::vector<kube::ObjectPtr>> ConfigMapCache::ListLabelled(const std::string& ns,
                                                                  const std::string& label) const {
  std::vector<kube::ObjectPtr> out;
  const auto serving = Serving(ns);
  if (serving.empty()) {
    kube::ListOptions opts;
    opts.label_selector = label;
    auto live = client_->List(kube::resources::kConfigMaps, ns, opts);
    if (!live.ok()) return live.status();
    for (auto& cm : live->items) out.push_back(std::make_shared<const kube::Json>(std::move(cm)));
    return out;
  }
  std::set<std::string> seen;  // a ConfigMap two informers hold is listed once
  for (const kube::Informer* inf : serving) {
    for (kube::ObjectPtr& cm : inf->List(ns)) {
      const kube::Json& labels = ObjectField(ObjectField(*cm, "metadata"), "labels");
      if (!labels.is_object() || !labels.contains(label)) continue;
      if (seen.insert(kube::NameOf(*cm)).second) out.push_back(std::move(cm));
    }
  }
  return out;
}

bool ConfigMapCache::AwaitChange(const std::string& ns, const std::string& name,
                                 const std::string& stale_rv, Millis timeout) const {
  const auto serving = Serving(ns);
  if (serving.empty()) return false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    kube::ObjectPtr obj = Cached(serving, ns, name);
    // A failed create (stale_rv ""): the winner's object; a failed update: any other version.
    const bool moved =
        stale_rv.empty() ? obj != nullptr : (!obj || kube::ResourceVersionOf(*obj) != stale_rv);
    if (moved) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace paratune::controllers
