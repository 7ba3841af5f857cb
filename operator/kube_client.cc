#include "operator/kube_client.h"

namespace paratune::kube {

std::string GroupVersionResource::ApiVersion() const {
  return group.empty() ? version : group + "/" + version;
}

std::string GroupVersionResource::GroupResource() const {
  return group.empty() ? plural : plural + "." + group;
}

ObjectKey ObjectKey::Of(const Json& obj) { return {NamespaceOf(obj), NameOf(obj)}; }

ObjectKey ObjectKey::Parse(const std::string& key) {
  auto slash = key.find('/');
  if (slash == std::string::npos) return {"", key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

const char* WatchEventTypeName(WatchEvent::Type t) {
  switch (t) {
    case WatchEvent::Type::kAdded:
      return "ADDED";
    case WatchEvent::Type::kModified:
      return "MODIFIED";
    case WatchEvent::Type::kDeleted:
      return "DELETED";
    case WatchEvent::Type::kBookmark:
      return "BOOKMARK";
  }
  return "UNKNOWN";
}

namespace {
std::string MetaString(const Json& obj, const char* field) {
  if (!obj.is_object()) return "";
  auto m = obj.find("metadata");
  if (m == obj.end() || !m->is_object()) return "";
  auto f = m->find(field);
  if (f == m->end() || !f->is_string()) return "";
  return f->get<std::string>();
}
}  // namespace

std::string NameOf(const Json& obj) { return MetaString(obj, "name"); }
std::string NamespaceOf(const Json& obj) { return MetaString(obj, "namespace"); }
std::string UidOf(const Json& obj) { return MetaString(obj, "uid"); }
std::string ResourceVersionOf(const Json& obj) { return MetaString(obj, "resourceVersion"); }

const Json* ControllerOwnerOf(const Json& obj) {
  if (!obj.is_object() || !obj.contains("metadata")) return nullptr;
  const Json& meta = obj["metadata"];
  auto refs = meta.find("ownerReferences");
  if (refs == meta.end() || !refs->is_array()) return nullptr;
  for (const Json& ref : *refs) {
    if (ref.value("controller", false)) return &ref;
  }
  return nullptr;
}

Json MakeControllerRef(const Json& owner) {
  return Json{{"apiVersion", owner.value("apiVersion", "")},
              {"kind", owner.value("kind", "")},
              {"name", NameOf(owner)},
              {"uid", UidOf(owner)},
              {"controller", true},
              {"blockOwnerDeletion", true}};
}

std::string StatusText(const Status& s) { return s.ToString(); }

}  // namespace paratune::kube
