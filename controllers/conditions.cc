#include "controllers/conditions.h"

namespace paratune::controllers {

bool SetCondition(nlohmann::json* conditions, const std::string& type, bool status,
                  const std::string& reason, const std::string& message,
                  int64_t observed_generation, const std::string& now_rfc3339) {
  if (!conditions->is_array()) *conditions = nlohmann::json::array();
  const std::string value = status ? "True" : "False";
  nlohmann::json wanted = {{"type", type},
                           {"status", value},
                           {"reason", reason},
                           {"message", message},
                           {"observedGeneration", observed_generation},
                           {"lastTransitionTime", now_rfc3339}};
  for (auto& c : *conditions) {
    if (!c.is_object() || c.value("type", "") != type) continue;
    if (c.value("status", "") == value) {
      wanted["lastTransitionTime"] = c.value("lastTransitionTime", now_rfc3339);
    }
    bool changed = c != wanted;
    c = wanted;
    return changed;
  }
  conditions->push_back(wanted);
  return true;
}

void DropEmptyStrings(nlohmann::json* obj) {
  if (obj->is_array()) {
    for (auto& e : *obj) {
      if (e.is_object()) DropEmptyStrings(&e);
    }
    return;
  }
  if (!obj->is_object()) return;
  for (auto it = obj->begin(); it != obj->end();) {
    if (it->is_string() && it->get<std::string>().empty()) {
      it = obj->erase(it);
    } else {
      DropEmptyStrings(&*it);
      ++it;
    }
  }
}

const nlohmann::json* FindCondition(const nlohmann::json& conditions, const std::string& type) {
  if (!conditions.is_array()) return nullptr;
  for (const auto& c : conditions) {
    if (c.is_object() && c.value("type", "") == type) return &c;
  }
  return nullptr;
}

bool IsConditionTrue(const nlohmann::json& conditions, const std::string& type) {
  const nlohmann::json* c = FindCondition(conditions, type);
  return c != nullptr && c->value("status", "") == "True";
}

}  // namespace paratune::controllers
