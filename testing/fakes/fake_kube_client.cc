#include "testing/fakes/fake_kube_client.h"

#include <chrono>

#include "base/time_source.h"

namespace paratune::kube {

namespace {
bool Namespaced(const GroupVersionResource& gvr) { return gvr.namespaced; }

Json WithoutVolatile(Json obj) {
  if (obj.contains("metadata") && obj["metadata"].is_object()) {
    obj["metadata"].erase("resourceVersion");
    obj["metadata"].erase("managedFields");
  }
  return obj;
}

std::string NotFoundMessage(const GroupVersionResource& gvr, const std::string& name) {
  return gvr.GroupResource() + " \"" + name + "\" not found";
}
}  // namespace

FakeKubeClient::FakeKubeClient()
    : status_plurals_{"pods",      "jobs",        "nodes",      "tuningcampaigns",
                      "trialruns", "deployments", "namespaces", "services"} {}

bool FakeKubeClient::HasStatus(const std::string& plural) const {
  return status_plurals_.count(plural) > 0;
}

void FakeKubeClient::SetHasStatus(const std::string& plural, bool has_status) {
  std::lock_guard lock(mu_);
  if (has_status) {
    status_plurals_.insert(plural);
  } else {
    status_plurals_.erase(plural);
  }
}

Status FakeKubeClient::TakeInjected(const std::string& verb, const std::string& plural) {
  calls_[verb]++;
  for (const std::string& p : {plural, std::string()}) {
    auto it = injected_.find({verb, p});
    if (it != injected_.end() && it->second.second > 0) {
      Status s = it->second.first;
      if (--it->second.second == 0) injected_.erase(it);
      return s;
    }
  }
  return Status::Ok();
}

void FakeKubeClient::InjectError(const std::string& verb, const std::string& plural, Status status,
                                 int times) {
  std::lock_guard lock(mu_);
  injected_[{verb, plural}] = {std::move(status), times};
}

int FakeKubeClient::Calls(const std::string& verb) const {
  std::lock_guard lock(mu_);
  auto it = calls_.find(verb);
  return it == calls_.end() ? 0 : it->second;
}

int FakeKubeClient::TotalCalls() const {
  std::lock_guard lock(mu_);
  int total = 0;
  for (const auto& [verb, n] : calls_) total += n;
  return total;
}

void FakeKubeClient::ResetCalls() {
  std::lock_guard lock(mu_);
  calls_.clear();
}

void FakeKubeClient::StampLocked(const GroupVersionResource& gvr, Json* obj) {
  (*obj)["apiVersion"] = gvr.ApiVersion();
  if (!gvr.kind.empty()) (*obj)["kind"] = gvr.kind;
  (*obj)["metadata"]["resourceVersion"] = std::to_string(++rv_);
}

void FakeKubeClient::RecordLocked(const GroupVersionResource& gvr, WatchEvent::Type type,
                                  const Json& obj) {
  gvrs_[gvr.GroupResource()] = gvr;
  history_.push_back({gvr, NamespaceOf(obj), WatchEvent{type, obj}, rv_});
  cv_.notify_all();
}

Result<Json> FakeKubeClient::Get(const GroupVersionResource& gvr, const std::string& ns,
                                 const std::string& name) {
  std::lock_guard lock(mu_);
  PARATUNE_RETURN_IF_ERROR(TakeInjected("get", gvr.plural));
  auto it = objects_.find({gvr.GroupResource(), Namespaced(gvr) ? ns : "", name});
  if (it == objects_.end()) return Status::NotFound(NotFoundMessage(gvr, name));
  return it->second;
}

Result<ObjectList> FakeKubeClient::List(const GroupVersionResource& gvr, const std::string& ns,
                                        const ListOptions& opts) {
  std::lock_guard lock(mu_);
  PARATUNE_RETURN_IF_ERROR(TakeInjected("list", gvr.plural));
  ObjectList out;
  out.resource_version = std::to_string(rv_);
  std::string resource = gvr.GroupResource();
  auto it = objects_.lower_bound({resource, "", ""});
  if (!opts.continue_token.empty()) {
    auto c = ObjectKey::Parse(opts.continue_token);
    it = objects_.upper_bound({resource, c.ns, c.name});
  }
  for (; it != objects_.end() && std::get<0>(it->first) == resource; ++it) {
    const Json& obj = it->second;
    if (!ns.empty() && Namespaced(gvr) && std::get<1>(it->first) != ns) continue;
    const Json& meta = obj["metadata"];
    if (!MatchesLabelSelector(meta.contains("labels") ? meta["labels"] : Json(),
                              opts.label_selector) ||
        !MatchesFieldSelector(obj, opts.field_selector)) {
      continue;
    }
    if (opts.limit > 0 && static_cast<int64_t>(out.items.size()) == opts.limit) {
      out.continue_token = ObjectKey::Of(out.items.back()).String();
      break;
    }
    out.items.push_back(obj);
  }
  return out;
}

Result<Json> FakeKubeClient::Create(const GroupVersionResource& gvr, const std::string& ns,
                                    const Json& obj, const WriteOptions& opts) {
  std::lock_guard lock(mu_);
  PARATUNE_RETURN_IF_ERROR(TakeInjected("create", gvr.plural));
  if (!obj.is_object()) return Status::Invalid("body: must be an object");
  Json stored = obj;
  Json& meta = stored["metadata"];
  if (!meta.is_object()) meta = Json::object();
  std::string name = meta.value("name", "");
  if (name.empty() && meta.contains("generateName")) {
    name = meta["generateName"].get<std::string>() + std::to_string(uid_ + 1);
    meta["name"] = name;
  }
  if (name.empty()) return Status::Invalid("metadata.name: Required value");
  std::string obj_ns = Namespaced(gvr) ? meta.value("namespace", ns) : "";
  if (Namespaced(gvr) && obj_ns.empty()) return Status::Invalid("metadata.namespace: Required");
  if (Namespaced(gvr)) meta["namespace"] = obj_ns;
  StoreKey key{gvr.GroupResource(), obj_ns, name};
  if (objects_.count(key)) {
    return Status(StatusCode::kAlreadyExists,
                  gvr.GroupResource() + " \"" + name + "\" already exists");
  }
  if (opts.dry_run) return stored;
  meta["uid"] = "uid-" + std::to_string(++uid_);
  meta["creationTimestamp"] = FormatRfc3339(std::chrono::system_clock::now());
  meta["generation"] = 1;
  if (HasStatus(gvr.plural) && gvr.plural != "pods" && gvr.plural != "nodes") {
    stored.erase("status");
  }
  StampLocked(gvr, &stored);
  objects_[key] = stored;
  RecordLocked(gvr, WatchEvent::Type::kAdded, stored);
  return stored;
}

Result<Json> FakeKubeClient::WriteLocked(const GroupVersionResource& gvr, Json obj,
                                         bool status_only) {
  std::string name = NameOf(obj);
  std::string ns = Namespaced(gvr) ? NamespaceOf(obj) : "";
  auto it = objects_.find({gvr.GroupResource(), ns, name});
  if (it == objects_.end()) return Status::NotFound(NotFoundMessage(gvr, name));
  const Json& old = it->second;
  std::string rv = ResourceVersionOf(obj);
  if (!rv.empty() && rv != ResourceVersionOf(old)) {
    return Status::Conflict("Operation cannot be fulfilled on " + gvr.GroupResource() + " \"" +
                            name +
                            "\": the object has been modified; please apply your "
                            "changes to the latest version and try again");
  }
  Json next = old;
  if (status_only) {
    if (obj.contains("status")) next["status"] = obj["status"];
  } else {
    next = obj;
    for (const char* f : {"uid", "creationTimestamp", "generation", "deletionTimestamp"}) {
      if (old["metadata"].contains(f)) next["metadata"][f] = old["metadata"][f];
    }
    if (HasStatus(gvr.plural)) {
      if (old.contains("status")) {
        next["status"] = old["status"];
      } else {
        next.erase("status");
      }
    }
    if (next.value("spec", Json()) != old.value("spec", Json())) {
      next["metadata"]["generation"] = old["metadata"].value("generation", 1) + 1;
    }
  }
  next["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"];
  if (WithoutVolatile(next) == WithoutVolatile(old)) return old;  // no-op: no new version.
  StampLocked(gvr, &next);
  bool finalized = next["metadata"].contains("deletionTimestamp") &&
                   next["metadata"].value("finalizers", Json::array()).empty();
  if (finalized) {
    objects_.erase(it);
    RecordLocked(gvr, WatchEvent::Type::kDeleted, next);
    CollectGarbageLocked(UidOf(next));
    return next;
  }
  it->second = next;
  RecordLocked(gvr, WatchEvent::Type::kModified, next);
  return next;
}

Result<Json> FakeKubeClient::Update(const GroupVersionResource& gvr, const Json& obj,
                                    const WriteOptions& opts) {
  std::lock_guard lock(mu_);
  PARATUNE_RETURN_IF_ERROR(TakeInjected("update", gvr.plural));
  return WriteLocked(gvr, obj, false);
}

Result<Json> FakeKubeClient::UpdateStatus(const GroupVersionResource& gvr, const Json& obj,
                                          const WriteOptions& opts) {
  std::lock_guard lock(mu_);
  PARATUNE_RETURN_IF_ERROR(TakeInjected("updatestatus", gvr.plural));
  return WriteLocked(gvr, obj, true);
}

Result<Json> FakeKubeClient::Patch(const GroupVersionResource& gvr, const std::string& ns,
                                   const std::string& name, PatchType type, const Json& patch,
                                   const WriteOptions& opts, const std::string& subresource) {
  std::unique_lock lock(mu_);
  PARATUNE_RETURN_IF_ERROR(TakeInjected("patch", gvr.plural));
  std::string obj_ns = Namespaced(gvr) ? ns : "";
  auto it = objects_.find({gvr.GroupResource(), obj_ns, name});
  if (it == objects_.end()) {
    if (type != PatchType::kApply) return Status::NotFound(NotFoundMessage(gvr, name));
    if (opts.field_manager.empty()) return Status::Invalid("fieldManager: Required value");
    lock.unlock();
    calls_["patch"]--;  // counted once.
    return Create(gvr, ns, patch, opts);
  }
  if (type == PatchType::kApply && opts.field_manager.empty()) {
    return Status::Invalid("fieldManager: Required value for apply patch");
  }
  Json next = it->second;
  try {
    if (type == PatchType::kJson) {
      next = next.patch(patch);
    } else {
      next.merge_patch(patch);
    }
  } catch (const std::exception& e) {
    return Status::Invalid(std::string("patch: ") + e.what());
  }
  if (subresource == "status") return WriteLocked(gvr, next, true);
  return WriteLocked(gvr, next, false);
}

void FakeKubeClient::CollectGarbageLocked(const std::string& owner_uid) {
  if (owner_uid.empty()) return;
  std::vector<std::pair<GroupVersionResource, Json>> dependents;
  for (const auto& [key, obj] : objects_) {
    for (const Json& ref : obj["metadata"].value("ownerReferences", Json::array())) {
      if (ref.value("uid", "") == owner_uid) {
        dependents.emplace_back(gvrs_[std::get<0>(key)], obj);
        break;
      }
    }
  }
  for (const auto& [gvr, obj] : dependents) {
    (void)DeleteLocked(gvr, NamespaceOf(obj), NameOf(obj), "Background");
  }
}

Status FakeKubeClient::DeleteLocked(const GroupVersionResource& gvr, const std::string& ns,
                                    const std::string& name, const std::string& policy) {
  auto it = objects_.find({gvr.GroupResource(), Namespaced(gvr) ? ns : "", name});
  if (it == objects_.end()) return Status::NotFound(NotFoundMessage(gvr, name));
  Json obj = it->second;
  if (!obj["metadata"].value("finalizers", Json::array()).empty()) {
    if (!obj["metadata"].contains("deletionTimestamp")) {
      obj["metadata"]["deletionTimestamp"] = FormatRfc3339(std::chrono::system_clock::now());
      StampLocked(gvr, &obj);
      it->second = obj;
      RecordLocked(gvr, WatchEvent::Type::kModified, obj);
    }
    return Status::Ok();
  }
  objects_.erase(it);
  if (gvr.GroupResource() == "pods") logs_.erase(ns + "/" + name);  // its log goes with it
  StampLocked(gvr, &obj);
  RecordLocked(gvr, WatchEvent::Type::kDeleted, obj);
  if (policy != "Orphan") CollectGarbageLocked(UidOf(obj));
  return Status::Ok();
}

Status FakeKubeClient::Delete(const GroupVersionResource& gvr, const std::string& ns,
                              const std::string& name, const DeleteOptions& opts) {
  std::lock_guard lock(mu_);
  PARATUNE_RETURN_IF_ERROR(TakeInjected("delete", gvr.plural));
  gvrs_[gvr.GroupResource()] = gvr;
  auto it = objects_.find({gvr.GroupResource(), Namespaced(gvr) ? ns : "", name});
  if (it != objects_.end()) {
    if ((!opts.precondition_uid.empty() && opts.precondition_uid != UidOf(it->second)) ||
        (!opts.precondition_resource_version.empty() &&
         opts.precondition_resource_version != ResourceVersionOf(it->second))) {
      return Status::Conflict("Precondition failed for " + gvr.GroupResource() + " \"" + name +
                              "\"");
    }
  }
  return DeleteLocked(gvr, ns, name, opts.propagation_policy);
}

Result<std::string> FakeKubeClient::GetPodLog(const std::string& ns, const std::string& name,
                                              const PodLogOptions& opts) {
  std::lock_guard lock(mu_);
  PARATUNE_RETURN_IF_ERROR(TakeInjected("log", "pods"));
  auto it = logs_.find(ns + "/" + name);
  if (it == logs_.end()) {
    if (!objects_.count({"pods", ns, name})) {
      return Status::NotFound("pods \"" + name + "\" not found");
    }
    return std::string();
  }
  std::string log = it->second;
  if (opts.tail_lines > 0) {
    size_t pos = log.size();
    int64_t lines = 0;
    if (pos > 0 && log[pos - 1] == '\n') --pos;
    while (pos > 0) {
      if (log[pos - 1] == '\n' && ++lines == opts.tail_lines) break;
      --pos;
    }
    log = log.substr(pos);
  }
  if (opts.limit_bytes > 0 && static_cast<int64_t>(log.size()) > opts.limit_bytes) {
    log.resize(opts.limit_bytes);
  }
  return log;
}

void FakeKubeClient::SetPodLog(const std::string& ns, const std::string& name, std::string log) {
  std::lock_guard lock(mu_);
  logs_[ns + "/" + name] = std::move(log);
}

void FakeKubeClient::Seed(const GroupVersionResource& gvr, Json obj) {
  std::lock_guard lock(mu_);
  gvrs_[gvr.GroupResource()] = gvr;
  if (UidOf(obj).empty()) obj["metadata"]["uid"] = "uid-" + std::to_string(++uid_);
  StampLocked(gvr, &obj);
  objects_[{gvr.GroupResource(), Namespaced(gvr) ? NamespaceOf(obj) : "", NameOf(obj)}] = obj;
}

int64_t FakeKubeClient::resource_version() const {
  std::lock_guard lock(mu_);
  return rv_;
}

void FakeKubeClient::Compact() {
  std::lock_guard lock(mu_);
  history_.clear();
  compacted_rv_ = rv_;
}

void FakeKubeClient::CloseWatches() {
  std::lock_guard lock(mu_);
  ++close_epoch_;
  cv_.notify_all();
}

int FakeKubeClient::OpenWatches() const {
  std::lock_guard lock(mu_);
  return open_watches_;
}

}  // namespace paratune::kube
