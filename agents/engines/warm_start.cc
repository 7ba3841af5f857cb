#include "agents/engines/warm_start.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "agents/report/report.h"
#include "base/strings.h"

namespace paratune {
namespace {

// "llama3-8b on 8 x nvidia-h100-80gb" of "llama3-8b on 8 x nvidia-h100-80gb, seq 8192, ...".
std::string ModelAndHardwareText(const std::string& workload_text) {
  return workload_text.substr(0, workload_text.find(", seq"));
}

int64_t Devices(const nlohmann::json& hw) {
  return hw.value("nodes", int64_t{1}) * hw.value("devicesPerNode", int64_t{1});
}

// The record's configuration over the campaign's searched keys; nullopt when a key is missing
// and the baseline does not supply it.
std::optional<Config> SearchedConfig(const CampaignSpec& spec, const Config& after) {
  Config c;
  for (const auto& p : spec.search_space) {
    auto it = after.find(p.name);
    if (it != after.end()) {
      c[p.name] = it->second;
    } else if (spec.baseline && spec.baseline->count(p.name)) {
      c[p.name] = spec.baseline->at(p.name);
    } else {
      return std::nullopt;
    }
  }
  return c;
}

bool Tried(const MessagePool& pool, const std::string& key) {
  return std::any_of(pool.trials().begin(), pool.trials().end(),
                     [&](const TrialRecord& t) { return ConfigKey(t.config) == key; });
}

std::string Rationale(const EngineContext& ctx, const PastOptimization& p,
                      const PointPrediction& pred) {
  const std::string metric = ObjectiveMetricName(ctx.spec->objective.metric);
  std::string r = "Warm start from past:" + p.id + ": the best known configuration for " +
                  (p.workload.empty() ? std::string("this model and hardware") : p.workload);
  if (!p.metric.empty()) r += " (" + p.metric + " " + Significant(p.after_value, 3) + " there)";
  r +=
      "; it is in this campaign's search space and the memory model says it fits (predicted peak " +
      Significant(pred.peak_memory_gib, 3) + " GiB of " +
      Significant(pred.UsableGiB(ctx.model->CapacityGiB()), 3) + "), predicted " + metric + " " +
      Significant(pred.objective, 3) + " here.";
  return r;
}

}  // namespace

bool SameModelAndHardware(const CampaignSpec& spec, const PastOptimization& p) {
  const nlohmann::json mine = WorkloadJson(spec);
  if (p.workload_spec.is_object()) {
    const nlohmann::json theirs_hw = p.workload_spec.value("hardware", nlohmann::json::object());
    const nlohmann::json mine_hw = mine.value("hardware", nlohmann::json::object());
    return p.workload_spec.value("model", nlohmann::json::object()) ==
               mine.value("model", nlohmann::json::object()) &&
           theirs_hw.value("accelerator", std::string()) ==
               mine_hw.value("accelerator", std::string()) &&
           Devices(theirs_hw) == Devices(mine_hw) &&
           theirs_hw.value("tpuTopology", std::string()) ==
               mine_hw.value("tpuTopology", std::string());
  }
  if (spec.model.preset.empty()) return false;
  return !p.workload.empty() &&
         ModelAndHardwareText(p.workload) == ModelAndHardwareText(WorkloadText(mine));
}

std::vector<const PastOptimization*> MatchingPastOptimizations(
    const CampaignSpec& spec, const std::vector<PastOptimization>& past) {
  const std::string metric = ObjectiveMetricName(spec.objective.metric);
  const bool maximize = spec.objective.Maximize();
  std::vector<const PastOptimization*> same, other;
  for (const auto& p : past) {
    if (!SameModelAndHardware(spec, p)) continue;
    (p.metric == metric ? same : other).push_back(&p);
  }
  std::stable_sort(same.begin(), same.end(), [&](const auto* a, const auto* b) {
    return maximize ? a->after_value > b->after_value : a->after_value < b->after_value;
  });
  same.insert(same.end(), other.begin(), other.end());
  return same;
}

WarmStart FindWarmStart(const EngineContext& ctx) {
  WarmStart w;
  if (ctx.past == nullptr || ctx.past->empty()) return w;
  // The warm start is the engine's first proposal: once the engine proposed anything, the
  // campaign's own trials rule (and skipped records are not repeated in every rationale).
  for (const auto& t : ctx.pool->trials()) {
    if (t.proposal.proposed_by != "baseline") return w;
  }
  std::vector<std::string> skipped;
  for (const PastOptimization* p : MatchingPastOptimizations(*ctx.spec, *ctx.past)) {
    const std::optional<Config> c = SearchedConfig(*ctx.spec, p->after);
    if (!c) {
      skipped.push_back(p->id + " (it does not set every searched parameter)");
      continue;
    }
    const std::string key = ConfigKey(*c);
    if (Tried(*ctx.pool, key)) continue;  // the baseline already is this configuration
    if (ctx.space->Find(key) < 0) {
      skipped.push_back(p->id + " (" + ConfigKey(*c) + " is outside the search space)");
      continue;
    }
    const ValidationVerdict v = ctx.Validate(*c);
    if (!v.ok) {
      skipped.push_back(p->id + " (" + v.reason + ")");
      continue;
    }
    Proposal proposal;
    proposal.proposed_by = "builtin";
    proposal.rationale = Rationale(ctx, *p, v.prediction);
    proposal.expected_impact = std::string(ObjectiveMetricName(ctx.spec->objective.metric)) + " " +
                               Significant(v.prediction.objective, 3) + " predicted";
    proposal.confidence = 0.9;
    w.candidate = EngineCandidate{*c, proposal, false};
    return w;
  }
  if (!skipped.empty()) w.skipped = "Warm start skipped: past:" + Join(skipped, "; past:") + ".";
  return w;
}

Result<std::vector<PastOptimization>> LoadPastOptimizationFiles(
    const std::vector<std::string>& paths) {
  std::vector<PastOptimization> out;
  for (const auto& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return Status::NotFound(path + ": cannot read the past-optimization file");
    std::ostringstream text;
    text << in.rdbuf();
    auto parsed = ParsePastOptimizations(path, text.str());
    if (!parsed.ok()) return parsed.status();
    out.insert(out.end(), parsed->begin(), parsed->end());
  }
  return out;
}

}  // namespace paratune
