#include "controllers/config_map_cache.h"

#include <chrono>
#include <thread>

#include "controllers/conditions.h"

namespace paratune::controllers {

ConfigMapCache::ConfigMapCache(kube::KubeClient* client, std::vector<kube::Informer*> informers)
    : client_(client), informers_(std::move(informers)) {}

const kube::Informer* ConfigMapCache::Serving(const std::string& ns) const {
  for (const kube::Informer* inf : informers_) {
    if (inf != nullptr && (inf->namespace_().empty() || inf->namespace_() == ns)) {
      return inf->HasSynced() ? inf : nullptr;
    }
  }
  return nullptr;
}

Result<kube::Json> ConfigMapCache::Get(const std::string& ns, const std::string& name) const {
  const kube::Informer* inf = Serving(ns);
  if (inf == nullptr) return GetLive(ns, name);
  kube::ObjectPtr obj = inf->Get({ns, name});
  if (!obj) return Status::NotFound("configmaps \"" + name + "\" not found (cached)");
  return *obj;
}

Result<kube::Json> ConfigMapCache::GetLive(const std::string& ns, const std::string& name) const {
  return client_->Get(kube::resources::kConfigMaps, ns, name);
}

Result<std::vector<kube::ObjectPtr>> ConfigMapCache::ListLabelled(const std::string& ns,
                                                                  const std::string& label) const {
  std::vector<kube::ObjectPtr> out;
  const kube::Informer* inf = Serving(ns);
  if (inf == nullptr) {
    kube::ListOptions opts;
    opts.label_selector = label;
    auto live = client_->List(kube::resources::kConfigMaps, ns, opts);
    if (!live.ok()) return live.status();
    for (auto& cm : live->items) out.push_back(std::make_shared<const kube::Json>(std::move(cm)));
    return out;
  }
  for (kube::ObjectPtr& cm : inf->List(ns)) {
    const kube::Json& labels = ObjectField(ObjectField(*cm, "metadata"), "labels");
    if (labels.is_object() && labels.contains(label)) out.push_back(std::move(cm));
  }
  return out;
}

bool ConfigMapCache::AwaitChange(const std::string& ns, const std::string& name,
                                 const std::string& stale_rv, Millis timeout) const {
  const kube::Informer* inf = Serving(ns);
  if (inf == nullptr) return false;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    kube::ObjectPtr obj = inf->Get({ns, name});
    // A failed create (stale_rv ""): the winner's object; a failed update: any other version.
    const bool moved =
        stale_rv.empty() ? obj != nullptr : (!obj || kube::ResourceVersionOf(*obj) != stale_rv);
    if (moved) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace paratune::controllers
