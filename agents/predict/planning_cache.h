// PlanningCache: a campaign's performance model and its evaluated search space
// (SearchSpaceIndex: every configuration estimated once), built once and shared by every
// reconcile of every campaign with the same planning key, instead of rebuilt per reconcile.
//
// The key is what the two are a function of: the workload (WorkloadJson: model, training,
// hardware, as ResolveWorkload reads them), the search space (names and values, in order) and
// the point budget. A campaign whose spec is edited gets the new key's entry on its next
// reconcile, so nothing is stale; a sweep of campaigns over one model and space (a GitOps sync,
// a platform team's batch) shares one entry. The calibrated predictor is not cached: it is a
// function of the campaign's own trials and costs microseconds before any trial ends.
//
// Bounded: least recently used entries are dropped while the entries' bytes
// (SearchSpaceIndex::ApproximateBytes) exceed the budget; an entry larger than the whole budget
// is built, returned and not kept. Concurrent Gets of one key wait for a single build. Failed
// builds (an unknown preset, an empty space) are returned to every waiter and not kept.
// Thread-safe.
#ifndef PARATUNE_AGENTS_PREDICT_PLANNING_CACHE_H_
#define PARATUNE_AGENTS_PREDICT_PLANNING_CACHE_H_

#include <cstddef>
#include <cstdint>
#include <future>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "agents/core/campaign.h"
#include "agents/predict/planner_model.h"
#include "agents/predict/predictor.h"
#include "base/status.h"

namespace paratune {

// What a TuningSession plans with (SessionDeps::model and ::space).
struct PlannedSpace {
  std::shared_ptr<const PlannerModel> model;
  std::shared_ptr<const SearchSpaceIndex> space;
};

// The model and index of `spec` (CreateModelPlanner, SearchSpaceIndex::Build with `max_points`).
Result<PlannedSpace> BuildPlannedSpace(const CampaignSpec& spec, size_t max_points);

// Equal for two specs exactly when BuildPlannedSpace gives them the same model and index.
std::string PlanningKey(const CampaignSpec& spec, size_t max_points);

struct PlanningCacheStats {
  int64_t hits = 0;    // served from an entry (or by waiting on another caller's build)
  int64_t builds = 0;  // BuildPlannedSpace calls
  int64_t evictions = 0;
  size_t entries = 0;
  size_t bytes = 0;  // of the entries kept
};

class PlanningCache {
 public:
  static constexpr size_t kDefaultMaxBytes = size_t{64} << 20;

  explicit PlanningCache(size_t max_bytes = kDefaultMaxBytes) : max_bytes_(max_bytes) {}
  PlanningCache(const PlanningCache&) = delete;
  PlanningCache& operator=(const PlanningCache&) = delete;

  Result<PlannedSpace> Get(const CampaignSpec& spec, size_t max_points);
  PlanningCacheStats stats() const;

 private:
  using Built = std::shared_future<Result<PlannedSpace>>;
  struct Entry {
    Built built;
    size_t bytes = 0;  // 0 while building
    std::list<std::string>::iterator lru;
  };
  void EvictLocked(const std::string& keep);

  const size_t max_bytes_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Entry> entries_;  // guarded by mu_
  std::list<std::string> lru_;                      // most recently used first; guarded by mu_
  PlanningCacheStats stats_;                        // guarded by mu_ (entries, bytes computed)
};

}  // namespace paratune

#endif  // PARATUNE_AGENTS_PREDICT_PLANNING_CACHE_H_
