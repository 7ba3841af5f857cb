// The Proposer: three (k) distinct configurations for the same devices, ranked by expected gain
// among those that fit, each with rationale, expected impact on step time, duty cycle and memory,
// trade-offs, confidence and citations of the knowledge base (documents and past optimizations).
//
// With a model description (`workload`), every candidate is scored by the performance model
// (agents/model/perf_model.h): memory capacity is a hard constraint and step times are scaled by
// the ratio of the profiled to the predicted step time of the current configuration. Without one,
// candidates are scored from the profile, mesh and hardware alone with documented rules of thumb
// (docs in agents/knowledge/data/docs) and lower confidence.
//
// Pure function of its inputs; thread-safe given a KnowledgeBase not being modified.
#ifndef PARATUNE_AGENTS_KNOWLEDGE_PROPOSER_H_
#define PARATUNE_AGENTS_KNOWLEDGE_PROPOSER_H_

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/core/config.h"
#include "agents/knowledge/analyzer.h"
#include "agents/knowledge/knowledge_base.h"
#include "agents/knowledge/profile.h"
#include "base/status.h"

namespace paratune {

struct Workload;  // agents/model/workload.h

struct ConfigProposal {
  Config config;                     // every key of the current config, changed or not
  std::vector<std::string> changes;  // "tp 2 -> 1"
  std::string rationale;
  double expected_gain = 0;                // step-time speedup - 1 (0.12: 12% faster)
  double predicted_step_time_seconds = 0;  // 0 when unknown
  double predicted_duty_cycle = 0;         // 0 when unknown
  double predicted_memory_fraction = 0;    // of device capacity
  double predicted_memory_gib = 0;         // 0 when unknown
  // The model's verdict (fits | marginal | does-not-fit) and interval ([low, high]) when a model
  // description was given; "" and zeros otherwise (contract section 14).
  std::string verdict;
  std::pair<double, double> step_time_interval, memory_interval;
  std::string tradeoffs;
  double confidence = 0;  // 0..1 (TrialRun spec.proposal.confidence)
  std::vector<std::string> citations;

  nlohmann::json ToJson() const;  // contract section 6 proposal shape
};

struct ProposeInput {
  const CampaignSpec* spec = nullptr;       // required: hardware, training, search space
  const Workload* workload = nullptr;       // model description; may be null
  const ProfileSummary* profile = nullptr;  // may be null
  Config current;                           // the profiled / baseline configuration
  size_t k = 3;
};

struct ProposalSet {
  ProfileAnalysis analysis;
  std::vector<ConfigProposal> proposals;  // best first; fewer than k when fewer fit
  nlohmann::json ToJson() const;          // {"analysis", "proposals"}
};

// Fails (kInvalidArgument naming the field) when the spec is missing, k is 0, or the current
// configuration is empty.
Result<ProposalSet> Propose(const ProposeInput& in, const KnowledgeBase& kb);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_PROPOSER_H_
