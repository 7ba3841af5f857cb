// Report sections about what happened before trials ran: the pre-flight of the campaign's
// baseline (run["baselinePreflight"], see baseline_preflight.h) and the time trials waited in
// a Kueue queue (trials[].queueSeconds, cluster campaigns only). Used by RenderCampaignReport.
// Pure function; thread-safe.
#ifndef PARATUNE_AGENTS_REPORT_REPORT_SCHEDULING_H_
#define PARATUNE_AGENTS_REPORT_REPORT_SCHEDULING_H_

#include <nlohmann/json.hpp>
#include <string>

namespace paratune {

// Markdown ("## Baseline pre-flight", "## Queue"), or "" when the run has neither.
std::string SchedulingSections(const nlohmann::json& run);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_REPORT_REPORT_SCHEDULING_H_
