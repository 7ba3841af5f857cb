#include "controllers/trial_run_spec.h"

namespace paratune::controllers {

using nlohmann::json;

namespace {

Status WrongType(const std::string& field, const char* want) {
  return Status::Invalid(field + ": must be " + want);
}

}  // namespace

Result<TrialRunSpec> TrialRunSpecFromJson(const json& spec) {
  TrialRunSpec out;
  if (spec.is_null()) return out;
  if (!spec.is_object()) return WrongType("spec", "an object");
  if (auto it = spec.find("campaignRef"); it != spec.end()) {
    if (!it->is_object()) return WrongType("spec.campaignRef", "an object");
    const json& name = it->value("name", json(""));
    if (!name.is_string()) return WrongType("spec.campaignRef.name", "a string");
    out.campaign_name = name.get<std::string>();
  }
  if (auto it = spec.find("iteration"); it != spec.end()) {
    if (!it->is_number_integer()) return WrongType("spec.iteration", "an integer");
    out.iteration = it->get<int64_t>();
  }
  auto config = ConfigFromJson(spec.value("config", json::object()), "spec.config");
  if (!config.ok()) return config.status();
  out.config = std::move(*config);
  if (auto it = spec.find("proposal"); it != spec.end() && !it->is_null()) {
    if (!it->is_object()) return WrongType("spec.proposal", "an object");
    out.proposal = *it;
  }
  if (auto it = spec.find("prediction"); it != spec.end() && !it->is_null()) {
    if (!it->is_object()) return WrongType("spec.prediction", "an object");
    out.prediction = *it;
  }
  if (auto it = spec.find("retryOf"); it != spec.end()) {
    if (!it->is_string()) return WrongType("spec.retryOf", "a string");
    out.retry_of = it->get<std::string>();
  }
  if (auto it = spec.find("avoidNodes"); it != spec.end()) {
    if (!it->is_array()) return WrongType("spec.avoidNodes", "a list of node names");
    for (size_t i = 0; i < it->size(); ++i) {
      const json& n = (*it)[i];
      if (!n.is_string()) {
        return WrongType("spec.avoidNodes[" + std::to_string(i) + "]", "a node name");
      }
      if (!n.get<std::string>().empty()) out.avoid_nodes.push_back(n.get<std::string>());
    }
  }
  return out;
}

json ToJson(const TrialRunSpec& spec) {
  json out = {{"campaignRef", {{"name", spec.campaign_name}}},
              {"iteration", spec.iteration},
              {"config", ConfigToJson(spec.config)},
              {"proposal", spec.proposal.is_object() ? spec.proposal : json::object()},
              {"prediction", json::object()}};
  if (spec.prediction.is_object()) {
    for (const auto& [k, v] : spec.prediction.items()) {
      if (v.is_number()) out["prediction"][k] = v;  // the schema types these as numbers
      // Contract section 14: the verdict and the interval.
      if (k == "verdict" && v.is_string()) out["prediction"][k] = v;
      if (k == "interval" && v.is_object()) out["prediction"][k] = v;
    }
  }
  if (!spec.retry_of.empty()) out["retryOf"] = spec.retry_of;
  if (!spec.avoid_nodes.empty()) out["avoidNodes"] = spec.avoid_nodes;
  return out;
}

}  // namespace paratune::controllers
