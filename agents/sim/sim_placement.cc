#include "agents/sim/sim_placement.h"

#include <algorithm>
#include <cstdio>
#include <random>

namespace paratune {

namespace {

uint64_t Fnv1a(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// The first `want` of `candidates` after a deterministic shuffle; busy nodes go last.
std::vector<std::string> Pick(std::vector<std::string> candidates, size_t want, uint64_t seed,
                              const std::set<std::string>& busy) {
  std::mt19937_64 rng(seed);
  std::shuffle(candidates.begin(), candidates.end(), rng);
  std::stable_partition(candidates.begin(), candidates.end(),
                        [&](const std::string& n) { return busy.count(n) == 0; });
  candidates.resize(std::min(want, candidates.size()));
  return candidates;
}

}  // namespace

Result<SimNodePool> SimNodePool::Create(int64_t count, int64_t per_trial, const std::string& prefix,
                                        uint64_t seed, health::LedgerOptions ledger) {
  if (count < 1 || count > 100000) {
    return Status::Invalid("--nodes: must be between 1 and 100000, got " + std::to_string(count));
  }
  if (per_trial < 1) per_trial = 1;
  if (count < per_trial) {
    return Status::Invalid("--nodes: " + std::to_string(count) +
                           " nodes cannot hold a trial that needs " + std::to_string(per_trial) +
                           " (the campaign's devices / devices per node)");
  }
  SimNodePool p;
  for (int64_t i = 0; i < count; ++i) p.names_.push_back(prefix + std::to_string(i));
  p.per_trial_ = per_trial;
  p.seed_ = seed;
  p.ledger_ = health::NodeLedger(std::move(ledger));
  return p;
}

std::vector<std::string> SimNodePool::Place(const std::string& trial,
                                            const std::vector<std::string>& avoid,
                                            const std::set<std::string>& busy) const {
  const size_t want = static_cast<size_t>(per_trial_);
  const uint64_t seed = Fnv1a(trial, 1469598103934665603ULL ^ seed_);
  std::vector<std::string> healthy, allowed;
  for (const auto& n : names_) {
    if (ledger_.IsSuspect(n)) continue;
    healthy.push_back(n);
    if (std::find(avoid.begin(), avoid.end(), n) == avoid.end()) allowed.push_back(n);
  }
  if (allowed.size() >= want) return Pick(allowed, want, seed, busy);
  if (healthy.size() >= want) return Pick(healthy, want, seed, busy);
  return Pick(names_, want, seed, busy);
}

std::string SimTime(int64_t index) {
  const int64_t minutes = std::max<int64_t>(0, index);
  const int64_t day = 21 + minutes / (24 * 60);
  char buf[40];
  std::snprintf(buf, sizeof(buf), "2026-11-%02lldT%02lld:%02lld:00Z", static_cast<long long>(day),
                static_cast<long long>((minutes / 60) % 24), static_cast<long long>(minutes % 60));
  return buf;
}

}  // namespace paratune
