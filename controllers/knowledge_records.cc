#include "controllers/knowledge_records.h"

#include "base/json_fields.h"
#include "controllers/job_renderer.h"

namespace paratune::controllers {
namespace {

// Adds the records of every data value of `cm` with a top-level pastOptimizations key (all of
// them when `only_key` is empty, else only that key).
void AddRecords(const kube::Json& cm, const std::string& only_key, PastRecords* out) {
  const kube::Json& data = ObjectField(cm, "data");  // no copy: most are pool shards
  if (!data.is_object()) return;
  const std::string name = cm["metadata"].value("name", std::string());
  for (const auto& [key, value] : data.items()) {
    if (!value.is_string()) continue;
    if (!only_key.empty() && key != only_key) continue;
    const std::string& text = value.get_ref<const std::string&>();
    if (only_key.empty() && text.find("pastOptimizations") == std::string::npos) continue;
    auto parsed = ParsePastOptimizations("ConfigMap " + name + " key " + key, text);
    if (!parsed.ok()) {
      out->warnings.push_back(parsed.status().message() + " (skipped)");
      continue;
    }
    out->records.insert(out->records.end(), parsed->begin(), parsed->end());
  }
}

}  // namespace

bool WarmStartPending(const MessagePool& pool) {
  for (const auto& t : pool.trials()) {
    if (t.proposal.proposed_by != "baseline") return false;
  }
  return true;
}

Result<PastRecords> LoadPastRecords(const ConfigMapCache& configmaps, const CampaignSpec& spec,
                                    const std::string& ns) {
  PastRecords out;
  for (const auto& name : spec.agents.knowledge_config_maps) {
    auto cm = configmaps.Get(ns, name);
    if (!cm.ok() && cm.status().code() == StatusCode::kNotFound) cm = configmaps.GetLive(ns, name);
    if (!cm.ok()) {
      if (cm.status().code() != StatusCode::kNotFound) return cm.status();
      out.warnings.push_back("knowledge ConfigMap " + name + " not found in namespace " + ns);
      continue;
    }
    AddRecords(*cm, "", &out);
  }
  auto published = configmaps.ListLabelled(ns, kCampaignLabel);
  if (!published.ok()) return published.status();
  for (const auto& cm : *published) {
    if ((*cm)["metadata"].value("name", std::string()) == spec.output_config_map) continue;
    AddRecords(*cm, kPastOptimizationKey, &out);
  }
  return out;
}

}  // namespace paratune::controllers
