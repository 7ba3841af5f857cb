// Warm start in the cluster (issue 15 item 5): the past-optimization records a campaign reads
// before its engine proposes anything. Sources, in the campaign's namespace only:
//   - the ConfigMaps named in spec.agents.knowledgeConfigMaps: every data value with a top-level
//     `pastOptimizations` key (a report's past-optimization.json);
//   - the published results of earlier campaigns (ConfigMaps labelled
//     tuning.paratune.dev/campaign, data key past-optimization.json).
// Other values of a knowledge ConfigMap (documents, signatures, known failures) are the
// campaign's knowledge (controllers/campaign_knowledge.h).
#ifndef PARATUNE_CONTROLLERS_KNOWLEDGE_RECORDS_H_
#define PARATUNE_CONTROLLERS_KNOWLEDGE_RECORDS_H_

#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/knowledge/knowledge_base.h"
#include "agents/trials/message_pool.h"
#include "controllers/config_map_cache.h"

namespace paratune::controllers {

// The data key under which a published result carries its past-optimization record.
inline constexpr const char* kPastOptimizationKey = "past-optimization.json";

// True while the campaign has no trial the engine proposed (only its baseline, if any): the
// only time a warm start can act, so the only time the records are read.
bool WarmStartPending(const MessagePool& pool);

struct PastRecords {
  std::vector<PastOptimization> records;
  // One sentence per named ConfigMap that is missing or value that is malformed (skipped).
  std::vector<std::string> warnings;
};

// Reads the records for `spec` from namespace `ns` (the campaign's own published result,
// `spec.output_config_map`, is skipped). Published results come from the cache of labelled
// ConfigMaps (no request when an informer serves `ns`); a named knowledge ConfigMap, which
// need not carry the label, is read live when the cache does not hold it. Transport errors
// other than NotFound are returned.
Result<PastRecords> LoadPastRecords(const ConfigMapCache& configmaps, const CampaignSpec& spec,
                                    const std::string& ns);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_KNOWLEDGE_RECORDS_H_
