#include "agents/predict/planning_cache.h"

#include <nlohmann/json.hpp>
#include <utility>

namespace paratune {

Result<PlannedSpace> BuildPlannedSpace(const CampaignSpec& spec, size_t max_points) {
  auto model = CreateModelPlanner(spec);
  if (!model.ok()) return model.status();
  PlannedSpace planned;
  planned.model = std::shared_ptr<const PlannerModel>(std::move(model).value());
  auto space = SearchSpaceIndex::Build(spec, *planned.model, max_points);
  if (!space.ok()) return space.status();
  planned.space = std::make_shared<const SearchSpaceIndex>(std::move(space).value());
  return planned;
}

std::string PlanningKey(const CampaignSpec& spec, size_t max_points) {
  nlohmann::json space = nlohmann::json::array();
  for (const auto& p : spec.search_space) {
    nlohmann::json values = nlohmann::json::array();
    for (const auto& v : p.values) values.push_back(v.ToJson());
    space.push_back({p.name, std::move(values)});
  }
  nlohmann::json key = {{"workload", WorkloadJson(spec)},
                        {"searchSpace", std::move(space)},
                        {"maxPoints", max_points}};
  return key.dump();
}

Result<PlannedSpace> PlanningCache::Get(const CampaignSpec& spec, size_t max_points) {
  const std::string key = PlanningKey(spec, max_points);
  std::promise<Result<PlannedSpace>> promise;
  std::unique_lock lock(mu_);
  auto found = entries_.find(key);
  if (found != entries_.end()) {
    ++stats_.hits;
    lru_.splice(lru_.begin(), lru_, found->second.lru);
    Built built = found->second.built;
    lock.unlock();
    return built.get();  // waits while another caller builds it
  }
  ++stats_.builds;
  lru_.push_front(key);
  Entry& e = entries_[key];
  e.built = promise.get_future().share();
  e.lru = lru_.begin();
  lock.unlock();

  Result<PlannedSpace> built = BuildPlannedSpace(spec, max_points);
  const size_t bytes = built.ok() ? built->space->ApproximateBytes() : 0;
  promise.set_value(built);
  lock.lock();
  auto it = entries_.find(key);
  if (it == entries_.end()) return built;  // not expected: an entry being built is never evicted
  if (!built.ok() || bytes > max_bytes_) {
    lru_.erase(it->second.lru);
    entries_.erase(it);
    return built;
  }
  it->second.bytes = bytes;
  stats_.bytes += bytes;
  EvictLocked(key);
  return built;
}

void PlanningCache::EvictLocked(const std::string& keep) {
  auto victim = lru_.end();
  while (stats_.bytes > max_bytes_ && victim != lru_.begin()) {
    --victim;
    if (*victim == keep) continue;
    auto it = entries_.find(*victim);
    if (it->second.bytes == 0) continue;  // still building: its builder accounts for it
    stats_.bytes -= it->second.bytes;
    ++stats_.evictions;
    entries_.erase(it);
    victim = lru_.erase(victim);
  }
}

PlanningCacheStats PlanningCache::stats() const {
  std::lock_guard lock(mu_);
  PlanningCacheStats s = stats_;
  s.entries = entries_.size();
  return s;
}

}  // namespace paratune
