#include "controllers/pod_policy.h"

#include <string>

namespace paratune::controllers {

namespace {

using nlohmann::json;

constexpr const char* kPodSpecPath = "spec.trialTemplate.spec.template.spec";

bool IsTrue(const json& obj, const char* key) {
  return obj.is_object() && obj.contains(key) && obj[key].is_boolean() && obj[key].get<bool>();
}

Status Refuse(const std::string& path, const std::string& what) {
  return Status::Invalid(path + ": " + what + " (the trial pod policy refuses it; " +
                         "an administrator may allow it, see docs/security.md)");
}

Status CheckSecurityContext(const json& sc, const std::string& path, const TrialPodPolicy& p) {
  if (!sc.is_object()) return Status::Ok();
  if (!p.allow_privileged) {
    if (IsTrue(sc, "privileged")) return Refuse(path + ".privileged", "privileged containers");
    if (IsTrue(sc, "allowPrivilegeEscalation")) {
      return Refuse(path + ".allowPrivilegeEscalation", "privilege escalation");
    }
    if (IsTrue(sc.value("windowsOptions", json::object()), "hostProcess")) {
      return Refuse(path + ".windowsOptions.hostProcess", "host processes");
    }
  }
  const json& caps = sc.value("capabilities", json::object());
  const json& add = caps.is_object() ? caps.value("add", json::array()) : json::array();
  if (!add.is_array() || p.allowed_capabilities.count("ALL") > 0) return Status::Ok();
  for (size_t i = 0; i < add.size(); ++i) {
    const std::string cap = add[i].is_string() ? add[i].get<std::string>() : add[i].dump();
    if (p.allowed_capabilities.count(cap) == 0) {
      return Refuse(path + ".capabilities.add[" + std::to_string(i) + "]",
                    "adding capability " + cap);
    }
  }
  return Status::Ok();
}

Status CheckContainers(const json& pod, const char* field, const std::string& path,
                       const TrialPodPolicy& p) {
  const json& list = pod.value(field, json::array());
  if (!list.is_array()) return Status::Ok();  // the renderer and the API server refuse it
  for (size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_object()) continue;
    const std::string at = path + "." + field + "[" + std::to_string(i) + "]";
    PARATUNE_RETURN_IF_ERROR(
        CheckSecurityContext(list[i].value("securityContext", json()), at + ".securityContext", p));
  }
  return Status::Ok();
}

bool ToleratesControlPlane(const json& t) {
  if (!t.is_object()) return false;
  const std::string key = t.value("key", "");
  const std::string op = t.value("operator", "Equal");
  if (key.empty()) return op == "Exists";  // tolerates every taint
  return key == "node-role.kubernetes.io/control-plane" || key == "node-role.kubernetes.io/master";
}

Status CheckTolerations(const json& list, const std::string& path, const TrialPodPolicy& p) {
  if (p.allow_control_plane_tolerations || !list.is_array()) return Status::Ok();
  for (size_t i = 0; i < list.size(); ++i) {
    if (ToleratesControlPlane(list[i])) {
      return Refuse(path + "[" + std::to_string(i) + "]", "tolerating control-plane taints");
    }
  }
  return Status::Ok();
}

Status CheckHost(const json& pod, const std::string& path, const TrialPodPolicy& p) {
  if (!p.allow_host_namespaces) {
    for (const char* f : {"hostNetwork", "hostPID", "hostIPC"}) {
      if (IsTrue(pod, f)) return Refuse(path + "." + f, "sharing the node's namespaces");
    }
  }
  if (!p.allow_host_path) {
    const json& volumes = pod.value("volumes", json::array());
    for (size_t i = 0; volumes.is_array() && i < volumes.size(); ++i) {
      if (volumes[i].is_object() && volumes[i].contains("hostPath")) {
        return Refuse(path + ".volumes[" + std::to_string(i) + "].hostPath",
                      "mounting the node's filesystem");
      }
    }
  }
  return Status::Ok();
}

Status CheckServiceAccount(const json& pod, const std::string& path, const TrialPodPolicy& p) {
  for (const char* f : {"serviceAccountName", "serviceAccount"}) {
    if (!pod.contains(f)) continue;
    const std::string sa = pod[f].is_string() ? pod[f].get<std::string>() : pod[f].dump();
    if (sa.empty() || sa == "default" || p.allowed_service_accounts.count(sa) > 0) continue;
    return Refuse(path + "." + f, "running as ServiceAccount \"" + sa + "\" (only the " +
                                      "namespace's default and the allowed ones)");
  }
  return Status::Ok();
}

}  // namespace

Status CheckPodSpecPolicy(const json& pod, const std::string& path, const TrialPodPolicy& p) {
  if (!pod.is_object()) return Status::Ok();
  PARATUNE_RETURN_IF_ERROR(CheckHost(pod, path, p));
  PARATUNE_RETURN_IF_ERROR(CheckServiceAccount(pod, path, p));
  if (!p.allow_privileged) {
    const json& psc = pod.value("securityContext", json::object());
    if (IsTrue(psc.is_object() ? psc.value("windowsOptions", json::object()) : json::object(),
               "hostProcess")) {
      return Refuse(path + ".securityContext.windowsOptions.hostProcess", "host processes");
    }
  }
  for (const char* field : {"initContainers", "containers", "ephemeralContainers"}) {
    PARATUNE_RETURN_IF_ERROR(CheckContainers(pod, field, path, p));
  }
  return CheckTolerations(pod.value("tolerations", json::array()), path + ".tolerations", p);
}

Status CheckTrialPodPolicy(const CampaignSpec& spec, const TrialPodPolicy& policy) {
  PARATUNE_RETURN_IF_ERROR(
      CheckTolerations(spec.hardware.tolerations, "spec.hardware.tolerations", policy));
  const json& tmpl = spec.trial_template;
  if (!tmpl.is_object()) return Status::Ok();
  const json& job = tmpl.value("spec", json::object());
  if (!job.is_object()) return Status::Ok();
  const json& pod_template = job.value("template", json::object());
  if (!pod_template.is_object()) return Status::Ok();
  return CheckPodSpecPolicy(pod_template.value("spec", json::object()), kPodSpecPath, policy);
}

}  // namespace paratune::controllers
