#include "testing/fakes/client_reader.h"

#include <algorithm>
#include <utility>

namespace paratune::kube::testing {

ClientReader::ClientReader(KubeClient* client, GroupVersionResource gvr, std::string label_selector)
    : client_(client), gvr_(std::move(gvr)), label_selector_(std::move(label_selector)) {}

ObjectPtr ClientReader::Get(const ObjectKey& key) const {
  // Through List so that the label selector applies as it does to an Informer's cache.
  for (ObjectPtr& obj : List(key.ns)) {
    if (ObjectKey::Of(*obj) == key) return std::move(obj);
  }
  return nullptr;
}

std::vector<ObjectPtr> ClientReader::List(const std::string& ns) const {
  ListOptions opts;
  opts.label_selector = label_selector_;
  auto list = client_->List(gvr_, ns, opts);
  std::vector<ObjectPtr> out;
  if (!list.ok()) return out;
  for (Json& item : list->items) out.push_back(std::make_shared<const Json>(std::move(item)));
  std::sort(out.begin(), out.end(), [](const ObjectPtr& a, const ObjectPtr& b) {
    return ObjectKey::Of(*a) < ObjectKey::Of(*b);
  });
  return out;
}

std::vector<ObjectPtr> ClientReader::ByOwner(const std::string& owner_uid) const {
  std::vector<ObjectPtr> out;
  for (ObjectPtr& obj : List()) {
    const auto uids = OwnerUidsOf(*obj);
    if (std::find(uids.begin(), uids.end(), owner_uid) != uids.end()) {
      out.push_back(std::move(obj));
    }
  }
  return out;
}

void ClientReader::AddIndex(const std::string& name, IndexFunc fn) {
  std::lock_guard lock(mu_);
  indexes_.emplace(name, std::move(fn));
}

std::vector<ObjectPtr> ClientReader::ByIndex(const std::string& name,
                                             const std::string& value) const {
  IndexFunc fn;
  {
    std::lock_guard lock(mu_);
    auto it = indexes_.find(name);
    if (it == indexes_.end()) return {};
    fn = it->second;
  }
  std::vector<ObjectPtr> out;
  for (ObjectPtr& obj : List()) {
    const auto values = fn(*obj);
    if (std::find(values.begin(), values.end(), value) != values.end()) {
      out.push_back(std::move(obj));
    }
  }
  return out;
}

}  // namespace paratune::kube::testing
