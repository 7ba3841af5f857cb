#include "agents/predict/validator.h"

#include <cstdio>
#include <string>

#include "agents/predict/memory_fit.h"
#include "base/strings.h"

namespace paratune {

namespace {

// "tp=4, pp=2" for the implicated keys of a failure, as they were in `config`.
std::string Assignments(const std::vector<std::string>& keys, const Config& config) {
  std::string s;
  for (const auto& k : keys) {
    auto it = config.find(k);
    if (it == config.end()) continue;
    if (!s.empty()) s += ", ";
    s += k + "=" + it->second.ToString();
  }
  return s;
}

bool WasUnmeasured(const Config& c, const MessagePool& pool) {
  if (pool.rejected().empty()) return false;
  const std::string key = ConfigKey(c);
  for (const auto& r : pool.rejected()) {
    if (r.reason == kUnmeasuredReason && ConfigKey(r.config) == key) return true;
  }
  return false;
}

}  // namespace

bool IsMemoryRejection(const std::string& reason) {
  // The two memory sentences of MatchKnownFailure and Check below.
  return reason.rfind("predicted peak memory ", 0) == 0 ||
         reason.rfind("needs at least as much memory as ", 0) == 0;
}

std::string Validator::MatchKnownFailure(const Config& c, const MessagePool& pool,
                                         const CalibratedPredictor& predictor) const {
  for (const auto& t : pool.trials()) {
    if (t.phase != TrialPhase::kFailed || !t.failure || t.failure->retryable) continue;
    const FailureDiagnosis& d = *t.failure;
    if (d.RanOutOfMemory()) {
      if (NeedsAtLeastAsMuchMemory(c, t.config)) {
        return "needs at least as much memory as " + t.name + " (" + ConfigKey(t.config) +
               "), which failed with " + d.category +
               ": same settings, no smaller micro-batch, no more recomputation, no finer sharding";
      }
      // Same memory-relevant settings as a config that ran out of memory and no smaller
      // predicted footprint: it would run out too.
      const double failed = predictor.PredictConfig(t.config, *model_).peak_memory_gib;
      const double mine = predictor.PredictConfig(c, *model_).peak_memory_gib;
      if (mine >= failed - 1e-9 && failed > 0) {
        return "predicted peak memory " + Fixed(mine, 1) + " GiB is at least that of " + t.name +
               " (" + Fixed(failed, 1) + " GiB predicted), which failed with " + d.category;
      }
      continue;
    }
    std::vector<std::string> keys;
    for (const auto& k : d.parameters) {
      if (t.config.count(k) > 0) keys.push_back(k);
    }
    if (keys.empty()) continue;
    bool same = true;
    for (const auto& k : keys) {
      auto it = c.find(k);
      if (it == c.end() || !(it->second == t.config.at(k))) same = false;
    }
    if (same) {
      return "matches the failure of " + t.name + " (" + d.category + " with " +
             Assignments(keys, t.config) + ")";
    }
  }
  return "";
}

ValidationVerdict Validator::Check(const Config& c, const MessagePool& pool,
                                   const CalibratedPredictor& predictor,
                                   double margin_override_gib) const {
  ValidationVerdict v;
  Status in_space = spec_->CheckInSearchSpace(c, "config");
  if (!in_space.ok()) {
    v.reason = "outside the search space: " + in_space.message();
    return v;
  }
  for (const auto& p : spec_->search_space) {
    if (c.count(p.name) == 0) {
      v.reason = "incomplete: parameter " + p.name + " is not set";
      return v;
    }
  }
  const std::vector<std::string> violations = model_->Violations(c);
  if (!violations.empty()) {
    v.reason = "violates a constraint: " + violations.front();
    return v;
  }
  if (options_.check_duplicates && pool.WasTried(c)) {
    v.reason = "already tried";
    return v;
  }
  if (WasUnmeasured(c, pool)) {
    v.reason = kUnmeasuredReason;
    return v;
  }
  v.prediction = predictor.PredictConfig(c, *model_);
  if (options_.check_known_failures) {
    std::string known = MatchKnownFailure(c, pool, predictor);
    if (!known.empty()) {
      v.reason = known;
      return v;
    }
  }
  if (options_.check_memory) {
    const double capacity = v.prediction.UsableGiB(model_->CapacityGiB());
    const double margin =
        margin_override_gib >= 0 ? margin_override_gib : v.prediction.memory_margin_gib;
    if (v.prediction.peak_memory_gib + margin > capacity) {
      v.reason = "predicted peak memory " + Fixed(v.prediction.peak_memory_gib, 1) + " GiB + " +
                 Fixed(margin, 1) + " GiB margin exceeds the " + Fixed(capacity, 1) +
                 " GiB device capacity";
      return v;
    }
  }
  v.ok = true;
  return v;
}

}  // namespace paratune
