#include "cli/campaign_result.h"

#include <algorithm>
#include <map>
#include <string>

#include "base/json_fields.h"

namespace paratune::cli {

namespace {

using nlohmann::json;

// The TrialRun's spec.prediction with the campaign's objective as "objective" (the report's
// "predicted" column), as the offline simulate JSON has it.
json Prediction(const json& prediction, const std::string& metric) {
  json p = prediction.is_object() ? prediction : json::object();
  if (p.contains(metric) && !p.contains("objective")) p["objective"] = p[metric];
  return p;
}

json Row(const json& tr, const std::string& metric) {
  const json& spec = ObjectField(tr, "spec");
  const json& st = ObjectField(tr, "status");
  json row = {{"name", StringField(ObjectField(tr, "metadata"), "name")},
              {"iteration", spec.value("iteration", json(0))},
              {"config", ObjectField(spec, "config")},
              {"phase", StringField(st, "phase", "Pending")},
              {"metrics", ObjectField(st, "metrics")},
              {"failure", st.contains("failure") ? st["failure"] : json()},
              {"rationale", StringField(ObjectField(spec, "proposal"), "rationale")},
              {"prediction", Prediction(ObjectField(spec, "prediction"), metric)}};
  if (st.contains("queueSeconds")) row["queueSeconds"] = st["queueSeconds"];
  return row;
}

// status.best or status.baseline joined with its trial's row.
json Pick(const json& status, const char* key, const std::map<std::string, json>& rows) {
  const json& s = ObjectField(status, key);
  auto it = rows.find(StringField(s, "trialName"));
  if (it == rows.end()) return json::object();
  json r = it->second;
  r["trialName"] = it->first;
  r["objective"] = s.value("objective", json(0));
  r["improvementOverBaseline"] = s.value("improvementOverBaseline", json(0));
  return r;
}

}  // namespace

Result<json> CampaignResultOf(const json& campaign, const std::vector<json>& trial_runs) {
  const std::string name = StringField(ObjectField(campaign, "metadata"), "name");
  if (name.empty()) return Status::Invalid("metadata.name: the campaign has none");
  if (!campaign.contains("spec") || !campaign["spec"].is_object()) {
    return Status::Invalid("spec: the campaign " + name + " has none");
  }
  const json& spec = campaign["spec"];
  const json& status = ObjectField(campaign, "status");
  const std::string metric = StringField(ObjectField(spec, "objective"), "metric", "mfu");
  std::vector<json> rows;
  for (const json& tr : trial_runs) rows.push_back(Row(tr, metric));
  std::stable_sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
    return a["iteration"].is_number() && b["iteration"].is_number() &&
           a["iteration"].get<double>() < b["iteration"].get<double>();
  });
  std::map<std::string, json> by_name;
  for (const json& r : rows) by_name[r["name"].get<std::string>()] = r;
  json out = {{"campaign", name},
              {"trials", rows},
              {"objective", {{"metric", metric}, {"maximize", metric != "stepTimeSeconds"}}},
              {"strategy", StringField(ObjectField(spec, "agents"), "engine", "builtin")},
              {"trialCounts", ObjectField(status, "trials")},
              {"lastAnalysis", ObjectField(status, "lastAnalysis")},
              {"best", Pick(status, "best", by_name)},
              {"baseline", Pick(status, "baseline", by_name)}};
  const json& preflight = ObjectField(ObjectField(status, "baseline"), "preflight");
  if (!preflight.empty()) out["baselinePreflight"] = preflight;
  json hardware = ObjectField(spec, "hardware");
  if (!hardware.contains("nodes")) hardware["nodes"] = 1;
  if (!hardware.contains("devicesPerNode")) {
    hardware["devicesPerNode"] = StringField(hardware, "accelerator").rfind("tpu-", 0) == 0 ? 4 : 8;
  }
  out["workload"] = {{"model", ObjectField(spec, "model")},
                     {"training", ObjectField(spec, "training")},
                     {"hardware", hardware}};
  return out;
}

}  // namespace paratune::cli
