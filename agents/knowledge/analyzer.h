// The Analyzer: what limits a training job, from a profile summary, the configuration and the
// hardware (and the performance model's estimate when a model description is known). Output:
// compute | hbm | communication | pipeline | memory-capacity | input, with the evidence (which
// numbers, which operations). A high duty cycle is not "compute-bound" when the top operations
// are collectives. Pure function; thread-safe.
#ifndef PARATUNE_AGENTS_KNOWLEDGE_ANALYZER_H_
#define PARATUNE_AGENTS_KNOWLEDGE_ANALYZER_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/core/results.h"
#include "agents/knowledge/profile.h"

namespace paratune {

struct AnalysisInput {
  const ProfileSummary* profile = nullptr;  // may be null: the estimate speaks alone
  const Estimate* estimate = nullptr;       // model estimate of `config`; may be null
  Config config;                            // the configuration profiled
  bool tpu = false;
  int64_t devices = 0;  // GPUs, or chips of the slice
  int64_t devices_per_node = 8;
};

struct ProfileAnalysis {
  std::string bottleneck;             // compute | hbm | communication | pipeline |
                                      // memory-capacity | input
  std::vector<std::string> evidence;  // one sentence per fact, numbers and op names included
  // Figures the Proposer uses (0 when unknown).
  double communication_fraction = 0;  // collectives' share of step time
  double all_to_all_fraction = 0;
  double idle_fraction = 0;  // 1 - duty cycle
  double hbm_peak_fraction = 0;
  double matmul_fraction = 0, matmul_flops_utilization = 0;
  double hbm_bound_fraction = 0;    // non-collective ops limited by HBM bandwidth
  double top_collective_share = 0;  // collectives' share of the top operations' time
  // How decisively the figures point at `bottleneck`, 0..1 (feeds proposal confidence).
  double clarity = 0;
  // What the inputs could not tell (no model shape, no profile): one sentence each.
  std::vector<std::string> unknowns;
  int64_t mesh_product = 0;    // TPU: product of ici axes in the config
  bool mesh_mismatch = false;  // TPU: mesh product != chips (topology changed)

  nlohmann::json ToJson() const;  // {"bottleneck", "evidence": "..."} (contract section 6)
};

ProfileAnalysis AnalyzeProfile(const AnalysisInput& in);

// Product of the ici* axes present in `c` (1 when none).
int64_t MeshProduct(const Config& c);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_ANALYZER_H_
