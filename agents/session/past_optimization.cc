#include "agents/session/past_optimization.h"

#include "agents/core/campaign.h"
#include "agents/report/report.h"
#include "base/strings.h"

namespace paratune {

nlohmann::json PastOptimizationOfSession(const TuningSession& session) {
  const SessionSummary sum = session.Summary();
  if (!sum.best) return nullptr;
  const CampaignSpec& spec = session.spec();
  const std::string metric = ObjectiveMetricName(spec.objective.metric);
  const nlohmann::json workload = WorkloadJson(spec);
  const double after = session.ObjectiveOf(*sum.best);
  nlohmann::json rec = {{"id", spec.name + "/" + sum.best->name},
                        {"workload", WorkloadText(workload)},
                        {"workloadSpec", workload},
                        {"after", ConfigToJson(sum.best->config)},
                        {"metric", metric},
                        {"afterValue", after}};
  std::string note =
      spec.name + ": best " + metric + " " + Significant(after, 4) + " (" + sum.best->name + ")";
  if (sum.baseline && sum.baseline->metrics) {
    const double before = session.ObjectiveOf(*sum.baseline);
    rec["before"] = ConfigToJson(sum.baseline->config);
    rec["beforeValue"] = before;
    note += ", baseline " + Significant(before, 4) + " (" + sum.baseline->name + ")";
  }
  rec["note"] = note;
  return {{"pastOptimizations", nlohmann::json::array({rec})}};
}

}  // namespace paratune
