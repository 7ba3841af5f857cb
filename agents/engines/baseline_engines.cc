#include "agents/engines/baseline_engines.h"

#include <algorithm>
#include <random>
#include <unordered_set>

#include "agents/engines/analyst.h"

namespace paratune {

namespace {

// Tried configurations and candidates the Validator already turned away: a baseline that
// proposed only rejected candidates is asked again and must move on to new ones.
std::unordered_set<std::string> TriedKeys(const MessagePool& pool) {
  std::unordered_set<std::string> keys;
  for (const auto& t : pool.trials()) {
    if (t.phase != TrialPhase::kRejected) keys.insert(ConfigKey(t.config));
  }
  for (const auto& r : pool.rejected()) keys.insert(ConfigKey(r.config));
  return keys;
}

EngineCandidate Make(const Config& c, const std::string& by, const std::string& why) {
  EngineCandidate e;
  e.config = c;
  e.proposal.proposed_by = by;
  e.proposal.rationale = why;
  e.proposal.confidence = 0.5;
  return e;
}

// Valid (constraint-satisfying), untried points in index order.
std::vector<size_t> Untried(const EngineContext& ctx) {
  const auto tried = TriedKeys(*ctx.pool);
  std::vector<size_t> out;
  for (size_t i : ctx.space->valid()) {
    if (tried.count(ctx.space->points()[i].key) == 0) out.push_back(i);
  }
  return out;
}

}  // namespace

Result<EngineProposal> RandomSearchEngine::Propose(const EngineContext& ctx) {
  EngineProposal out;
  std::vector<size_t> open = Untried(ctx);
  std::mt19937_64 rng(seed_ * 0x9E3779B97F4A7C15ull + static_cast<uint64_t>(ctx.iteration));
  const size_t want = static_cast<size_t>(std::max(1, ctx.want)) + 2;
  for (size_t n = 0; n < want && !open.empty(); ++n) {
    std::uniform_int_distribution<size_t> pick(0, open.size() - 1);
    const size_t k = pick(rng);
    out.candidates.push_back(Make(ctx.space->points()[open[k]].config, "random",
                                  "Random search: drawn uniformly from the " +
                                      std::to_string(open.size()) +
                                      " untried valid configurations."));
    open.erase(open.begin() + static_cast<std::ptrdiff_t>(k));
  }
  return out;
}

Result<EngineProposal> GridSearchEngine::Propose(const EngineContext& ctx) {
  EngineProposal out;
  const std::vector<size_t> open = Untried(ctx);
  const size_t want = static_cast<size_t>(std::max(1, ctx.want)) + 2;
  for (size_t n = 0; n < want && n < open.size(); ++n) {
    out.candidates.push_back(Make(ctx.space->points()[open[n]].config, "grid",
                                  "Grid search: next configuration in search-space order."));
  }
  return out;
}

Result<EngineProposal> GreedyEngine::Propose(const EngineContext& ctx) {
  EngineProposal out;
  Config center;
  std::string from = "the baseline";
  if (const TrialRecord* best = ctx.BestTrial()) {
    center = best->config;
    from = best->name;
  } else if (ctx.spec->baseline) {
    center = *ctx.spec->baseline;
  } else if (!ctx.space->valid().empty()) {
    center = ctx.space->points()[ctx.space->valid().front()].config;
    from = "the first valid configuration";
  }
  const auto tried = TriedKeys(*ctx.pool);
  if (!center.empty() && tried.count(ConfigKey(center)) == 0) {
    out.candidates.push_back(Make(center, "greedy", "Greedy: start from " + from + "."));
  }
  const size_t want = static_cast<size_t>(std::max(1, ctx.want)) + 2;
  for (const auto& param : ctx.spec->search_space) {
    for (const auto& v : param.values) {
      if (out.candidates.size() >= want) return out;
      Config c = center;
      c[param.name] = v;
      const int64_t i = ctx.space->Find(ConfigKey(c));
      if (i < 0 || !ctx.space->points()[i].valid || tried.count(ConfigKey(c)) > 0) continue;
      out.candidates.push_back(Make(
          c, "greedy",
          "Greedy: one parameter at a time from " + from + ": " + DescribeChange(center, c) + "."));
    }
  }
  return out;
}

}  // namespace paratune
