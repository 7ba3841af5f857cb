// Campaign reports: Markdown plus an SVG chart (objective per iteration, failures marked, the
// baseline dashed, best-so-far as a step line), from the simulate JSON (SimulationJson) so the
// CLI's `report --from run.json` and the cluster's `report CAMPAIGN` share one renderer.
#ifndef PARATUNE_AGENTS_REPORT_REPORT_H_
#define PARATUNE_AGENTS_REPORT_REPORT_H_

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace paratune {

struct CampaignReport {
  std::string markdown;  // links the chart as `chart_file_name`
  std::string svg;
};

// kInvalidArgument naming the field when `run` lacks what a report needs ("trials",
// "objective.metric"). Pure function.
Result<CampaignReport> RenderCampaignReport(const nlohmann::json& run,
                                            const std::string& chart_file_name = "objective.svg");

// "llama3-8b on 8 x nvidia-h100-80gb, seq 8192, global batch 512" from a run's (or
// WorkloadJson's) workload section; "" when it is not a map.
std::string WorkloadText(const nlohmann::json& workload);

// The campaign's result as a knowledge-base record, {"pastOptimizations": [{id, workload,
// workloadSpec, before, after, metric, beforeValue, afterValue, note}]}: the format
// KnowledgeBase::AddPastOptimizations reads, so a file of it in a --knowledge-dir (or a knowledge
// ConfigMap) lets later proposals retrieve and cite what this campaign learned, and a later
// campaign on the same model and hardware start from its best (agents/engines/warm_start.h).
// kFailedPrecondition when the run has no successful baseline and best. Pure function.
Result<nlohmann::json> PastOptimizationRecord(const nlohmann::json& run);

// The SVG chart alone (640x360).
std::string RenderObjectiveChart(const nlohmann::json& run);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_REPORT_REPORT_H_
