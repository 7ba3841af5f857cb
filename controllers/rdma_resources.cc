#include "controllers/rdma_resources.h"

#include <string>

namespace paratune::controllers {

namespace {

using nlohmann::json;

Status CheckResourceList(const json& list, const std::string& path, const std::string& declared) {
  if (!list.is_object()) return Status::Ok();
  for (const auto& [name, quantity] : list.items()) {
    if (name.rfind("rdma/", 0) != 0 || name == declared) continue;
    const std::string have = declared == "none" ? std::string("has no RDMA devices")
                                                : "advertises " + declared + " instead";
    return Status::Invalid(path + "." + name + ": the cluster " + have +
                           " (operator --rdma-resource, chart rdma.resourceName), so no node " +
                           "could ever run this trial; request " +
                           (declared == "none" ? std::string("no rdma/ resource") : declared) +
                           " or ask the administrator which RDMA resource the nodes carry");
  }
  return Status::Ok();
}

Status Walk(const json& node, const std::string& path, const std::string& declared) {
  if (node.is_array()) {
    for (size_t i = 0; i < node.size(); ++i) {
      PARATUNE_RETURN_IF_ERROR(Walk(node[i], path + "[" + std::to_string(i) + "]", declared));
    }
    return Status::Ok();
  }
  if (!node.is_object()) return Status::Ok();
  for (const auto& [key, value] : node.items()) {
    const std::string here = path + "." + key;
    if (key == "resources" && value.is_object()) {
      for (const char* kind : {"limits", "requests"}) {
        PARATUNE_RETURN_IF_ERROR(
            CheckResourceList(value.value(kind, json()), here + "." + kind, declared));
      }
      continue;
    }
    PARATUNE_RETURN_IF_ERROR(Walk(value, here, declared));
  }
  return Status::Ok();
}

}  // namespace

Status CheckRdmaRequests(const nlohmann::json& trial_template, const std::string& declared) {
  if (declared.empty()) return Status::Ok();
  return Walk(trial_template, "spec.trialTemplate", declared);
}

}  // namespace paratune::controllers
