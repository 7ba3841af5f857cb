// Node placement for the in-process simulated cluster (`paratune simulate --nodes N`): a pool
// of named nodes, each trial placed on the number of nodes it needs, avoiding the nodes the
// node ledger holds suspect and the trial's own avoid list (the required anti-affinity the
// operator renders), much as kube-scheduler would spread sequential Jobs. When too few nodes are
// left it relaxes first the trial's avoid list, then the suspects (a real cluster would leave
// the pod Pending; the simulation must go on).
//
// Thread-safety: none. Deterministic for a seed.
#ifndef PARATUNE_AGENTS_SIM_SIM_PLACEMENT_H_
#define PARATUNE_AGENTS_SIM_SIM_PLACEMENT_H_

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "agents/health/node_ledger.h"
#include "base/status.h"

namespace paratune {

class SimNodePool {
 public:
  // `count` nodes named PREFIX0..PREFIX{count-1}; each trial needs `per_trial` of them.
  // kInvalidArgument naming --nodes when count < per_trial or count < 1.
  static Result<SimNodePool> Create(int64_t count, int64_t per_trial, const std::string& prefix,
                                    uint64_t seed, health::LedgerOptions ledger = {});

  // The nodes for trial `trial` (deterministic in seed and trial name), avoiding suspects,
  // `avoid` and, when possible, `busy` (nodes of trials running alongside).
  std::vector<std::string> Place(const std::string& trial, const std::vector<std::string>& avoid,
                                 const std::set<std::string>& busy) const;

  const std::vector<std::string>& names() const { return names_; }
  int64_t per_trial() const { return per_trial_; }
  health::NodeLedger& ledger() { return ledger_; }
  const health::NodeLedger& ledger() const { return ledger_; }

 private:
  std::vector<std::string> names_;
  int64_t per_trial_ = 1;
  uint64_t seed_ = 1;
  health::NodeLedger ledger_;
};

// A synthetic RFC 3339 time for simulated event `index` (one minute apart from
// 2026-11-21T00:00:00Z), for the ledger's timestamps.
std::string SimTime(int64_t index);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_SIM_SIM_PLACEMENT_H_
