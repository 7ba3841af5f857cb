#include "controllers/kueue_workload.h"

#include "base/json_fields.h"
#include "controllers/conditions.h"

namespace paratune::controllers {

Result<KueuePending> ReadKueuePending(kube::KubeClient* client, const kube::Json& workload) {
  KueuePending out;
  const std::string uid = kube::UidOf(workload);
  if (uid.empty()) return out;
  kube::ListOptions opts;
  opts.label_selector = std::string(kKueueJobUidLabel) + "=" + uid;
  auto list = client->List(kKueueWorkloads, kube::NamespaceOf(workload), opts);
  if (!list.ok() && list.status().code() == StatusCode::kNotFound) {
    list = client->List(kKueueWorkloadsV1beta2, kube::NamespaceOf(workload), opts);
  }
  if (!list.ok()) {
    const StatusCode code = list.status().code();
    if (code == StatusCode::kNotFound || code == StatusCode::kPermissionDenied) return out;
    return list.status();
  }
  for (const auto& wl : list->items) {
    KueuePending read;
    read.workload = kube::NameOf(wl);
    const kube::Json& active = ObjectField(wl, "spec").value("active", kube::Json());
    read.deactivated = active.is_boolean() && !active.get<bool>();
    const kube::Json& status = ObjectField(wl, "status");
    const auto conditions = status.find("conditions");
    if (conditions != status.end()) {
      const kube::Json* reserved = FindCondition(*conditions, "QuotaReserved");
      if (reserved != nullptr && reserved->value("status", "") == "False") {
        read.message = reserved->value("message", "");
      }
      const kube::Json* evicted = FindCondition(*conditions, "Evicted");
      if (evicted != nullptr && evicted->value("status", "") == "True") {
        read.evicted_reason = evicted->value("reason", "");
        read.evicted_message = evicted->value("message", "");
      }
    }
    const auto checks = status.find("admissionChecks");
    if (checks != status.end() && checks->is_array()) {
      for (const auto& check : *checks) {
        if (!check.is_object() || check.value("state", "") == "Ready") continue;
        const std::string said = check.value("message", "");
        read.checks += std::string(read.checks.empty() ? "" : "; ") + check.value("name", "?") +
                       " (" + check.value("state", "?") + ")" + (said.empty() ? "" : ": " + said);
      }
    }
    out = std::move(read);
    if (!out.message.empty() || out.deactivated || !out.evicted_reason.empty() ||
        !out.checks.empty()) {
      break;
    }
  }
  return out;
}

}  // namespace paratune::controllers
