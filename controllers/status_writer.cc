#include "controllers/status_writer.h"

#include <spdlog/spdlog.h>

namespace paratune::controllers {

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
