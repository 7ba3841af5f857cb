#include "operator/object_reader.h"

#include <algorithm>
#include <map>
#include <utility>

namespace paratune::kube {

IndexFunc LabelIndex(const std::string& key) {
  return [key](const Json& obj) {
    std::vector<std::string> out;
    const Json& meta = obj.value("metadata", Json::object());
    const Json& labels = meta.is_object() ? meta.value("labels", Json::object()) : Json();
    if (!labels.is_object()) return out;
    auto it = labels.find(key);
    if (it != labels.end() && it->is_string()) {
      out.push_back(NamespaceOf(obj) + "/" + it->get<std::string>());
    }
    return out;
  };
}

std::vector<std::string> OwnerUidsOf(const Json& obj) {
  std::vector<std::string> out;
  const Json& meta = obj.value("metadata", Json::object());
  if (!meta.is_object() || !meta.contains("ownerReferences")) return out;
  const Json& refs = meta["ownerReferences"];
  if (!refs.is_array()) return out;
  for (const Json& ref : refs) {
    if (ref.is_object() && ref.contains("uid") && ref["uid"].is_string()) {
      out.push_back(ref["uid"].get<std::string>());
    }
  }
  return out;
}

NamespacedReader::NamespacedReader(std::vector<ObjectReader*> per_namespace,
                                   std::vector<std::string> namespaces)
    : readers_(std::move(per_namespace)), namespaces_(std::move(namespaces)) {}

ObjectReader* NamespacedReader::For(const std::string& ns) const {
  for (size_t i = 0; i < namespaces_.size(); ++i) {
    if (namespaces_[i] == ns) return readers_[i];
  }
  return nullptr;
}

ObjectPtr NamespacedReader::Get(const ObjectKey& key) const {
  const ObjectReader* r = For(key.ns);
  return r == nullptr ? nullptr : r->Get(key);
}

void NamespacedReader::Wrote(const Json& obj) {
  if (ObjectReader* r = For(NamespaceOf(obj))) r->Wrote(obj);
}

std::vector<ObjectPtr> NamespacedReader::List(const std::string& ns) const {
  if (!ns.empty()) {
    const ObjectReader* r = For(ns);
    return r == nullptr ? std::vector<ObjectPtr>{} : r->List(ns);
  }
  return Merge([](const ObjectReader& r) { return r.List(); });  // Merge keeps each one's ns
}

std::vector<ObjectPtr> NamespacedReader::ByOwner(const std::string& owner_uid) const {
  return Merge([&](const ObjectReader& r) { return r.ByOwner(owner_uid); });
}

void NamespacedReader::AddIndex(const std::string& name, IndexFunc fn) {
  for (ObjectReader* r : readers_) r->AddIndex(name, fn);
}

std::vector<ObjectPtr> NamespacedReader::ByIndex(const std::string& name,
                                                 const std::string& value) const {
  return Merge([&](const ObjectReader& r) { return r.ByIndex(name, value); });
}

std::vector<ObjectPtr> NamespacedReader::Merge(
    const std::function<std::vector<ObjectPtr>(const ObjectReader&)>& read) const {
  std::vector<ObjectPtr> out;
  for (size_t i = 0; i < readers_.size(); ++i) {
    for (ObjectPtr& obj : read(*readers_[i])) {
      // Each reader answers for its own namespace only (the informer sees nothing else).
      if (NamespaceOf(*obj) == namespaces_[i]) out.push_back(std::move(obj));
    }
  }
  std::sort(out.begin(), out.end(), [](const ObjectPtr& a, const ObjectPtr& b) {
    return ObjectKey::Of(*a) < ObjectKey::Of(*b);
  });
  return out;
}

}  // namespace paratune::kube
