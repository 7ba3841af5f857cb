#include "controllers/status_writer.h"

#include <spdlog/spdlog.h>

namespace paratune::controllers {

kube::Json MergePatchBetween(const kube::Json& before, const kube::Json& after) {
  if (!before.is_object() || !after.is_object()) return after;
  kube::Json patch = kube::Json::object();
  for (const auto& [key, value] : after.items()) {
    auto it = before.find(key);
    if (it == before.end()) {
      patch[key] = value;
    } else if (*it != value) {
      patch[key] = it->is_object() && value.is_object() ? MergePatchBetween(*it, value) : value;
    }
  }
  for (const auto& [key, value] : before.items()) {
    if (!after.contains(key)) patch[key] = nullptr;
  }
  return patch;
}

Result<kube::Json> PatchStatus(kube::KubeClient* client, const kube::GroupVersionResource& gvr,
                               const kube::Json& obj, const kube::Json& previous,
                               kube::ObjectReader* reads_back) {
  const kube::Json& status = obj.contains("status") ? obj["status"] : kube::Json::object();
  const kube::Json before = previous.is_object() ? previous : kube::Json::object();
  kube::Json diff = MergePatchBetween(before, status.is_object() ? status : kube::Json::object());
  if (diff.empty()) return obj;
  auto written =
      client->Patch(gvr, kube::NamespaceOf(obj), kube::NameOf(obj), kube::PatchType::kMerge,
                    kube::Json{{"status", std::move(diff)}}, {}, "status");
  if (written.ok() && reads_back != nullptr) reads_back->Wrote(*written);
  return written;
}

Result<kube::Json> WriteStatus(kube::KubeClient* client, const kube::GroupVersionResource& gvr,
                               const kube::Json& obj, int attempts) {
  kube::Json attempt = obj;
  Result<kube::Json> written = client->UpdateStatus(gvr, attempt);
  for (int i = 1; i < attempts && !written.ok() && written.status().code() == StatusCode::kConflict;
       ++i) {
    const std::string ns = kube::NamespaceOf(obj);
    const std::string name = kube::NameOf(obj);
    auto fresh = client->Get(gvr, ns, name);
    if (!fresh.ok()) return fresh.status();
    spdlog::debug("{} {}/{}: status conflict, retrying on resourceVersion {}", gvr.GroupResource(),
                  ns, name,
                  fresh->value("metadata", kube::Json::object()).value("resourceVersion", ""));
    attempt = std::move(fresh).value();
    attempt["status"] = obj.contains("status") ? obj["status"] : kube::Json::object();
    written = client->UpdateStatus(gvr, attempt);
  }
  return written;
}

}  // namespace paratune::controllers
