// MoveCandidate generation for the Proposer: single and paired moves from the current configuration
// for the same devices, with rule-of-thumb effects used when no model description is known.
#ifndef PARATUNE_AGENTS_KNOWLEDGE_MOVES_H_
#define PARATUNE_AGENTS_KNOWLEDGE_MOVES_H_

#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/core/config.h"
#include "agents/knowledge/analyzer.h"

namespace paratune {

struct MoveCandidate {
  Config config;
  std::vector<std::string> changes;  // "tp 2 -> 1"
  std::vector<std::string> reasons;  // one per change: why it should help
  std::vector<std::string> costs;    // one per change: what it costs
  std::vector<std::string> queries;  // knowledge-base queries for citations
  // Rule-of-thumb effects: fraction of step time saved (negative: slower) and memory factor.
  double saved_fraction = 0;
  double memory_factor = 1;
  bool targets_bottleneck = false;
};

struct MoveContext {
  const CampaignSpec* spec = nullptr;
  const ProfileAnalysis* analysis = nullptr;
  bool tpu = false;
  int64_t devices = 0;
  int64_t devices_per_node = 8;
  const Config* current = nullptr;  // the profiled configuration (global batch, changed keys)
};

// Valid configurations one or two moves from `current` (or from a repaired mesh when the TPU
// topology changed), deduplicated, without `current` itself. Every candidate:
//  - changes only keys of the campaign's search space, to values it lists (when the campaign
//    lists any): no axis appears that the campaign does not search;
//  - uses the same devices;
//  - keeps the global batch: on GPUs mbs x dp must divide training.globalBatchSize (gradient
//    accumulation makes up the rest); on TPUs the global batch is perDeviceBatchSize x chips, so
//    perDeviceBatchSize stays (or matches globalBatchSize / chips after a topology change).
std::vector<MoveCandidate> GenerateCandidates(const Config& current, const MoveContext& ctx);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_MOVES_H_
