#include "agents/engines/builtin_engine.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <unordered_set>

#include "agents/engines/analyst.h"
#include "agents/engines/warm_start.h"
#include "base/strings.h"

namespace paratune {

namespace {

double Gain(double a, double b, bool maximize) {
  if (a <= 0 || b <= 0) return 0;
  return maximize ? b / a - 1 : a / b - 1;
}

// Configurations the model cannot tell apart (e.g. sequenceParallel at tp 1) run the same plan:
// once one of them is tried, the others are equivalent duplicates. Keyed by the exact estimate.
// The bits of the three figures (two estimates are alike only when all three are exactly equal;
// formatting them as text for every point of every ranking was half of a reconcile's planning).
struct Signature {
  explicit Signature(const Estimate& e)
      : step(std::bit_cast<uint64_t>(e.step_time_seconds)),
        peak(std::bit_cast<uint64_t>(e.peak_memory_gib)),
        tflops(std::bit_cast<uint64_t>(e.hardware_tflops_per_device)) {}
  bool operator==(const Signature&) const = default;
  uint64_t step, peak, tflops;
};

struct SignatureHash {
  size_t operator()(const Signature& s) const {
    return std::hash<uint64_t>()(s.step ^ (s.peak * 0x9E3779B97F4A7C15ull) ^
                                 (s.tflops * 0xC2B2AE3D27D4EB4Full));
  }
};

using Signatures = std::unordered_set<Signature, SignatureHash>;

Signatures TriedSignatures(const EngineContext& ctx) {
  Signatures out;
  for (const auto& t : ctx.pool->trials()) {
    if (t.phase == TrialPhase::kRejected) continue;
    const int64_t i = ctx.space->Find(ConfigKey(t.config));
    if (i >= 0 && ctx.space->points()[i].valid) out.insert(Signature(ctx.space->points()[i].base));
  }
  return out;
}

std::unordered_set<std::string> TriedKeys(const MessagePool& pool) {
  std::unordered_set<std::string> keys;
  for (const auto& t : pool.trials()) {
    if (t.phase != TrialPhase::kRejected) keys.insert(ConfigKey(t.config));
  }
  return keys;
}

}  // namespace

double ExplorationWeight(const EngineContext& ctx) {
  int64_t successes = 0;
  for (const auto& t : ctx.pool->trials()) successes += t.phase == TrialPhase::kSucceeded;
  // Early on the calibration rests on little: lean on optimism; later, exploit.
  return successes < 3 ? 0.6 : 0.3;
}

std::vector<RankedCandidate> RankCandidates(const EngineContext& ctx, size_t limit,
                                            double exploration) {
  const auto tried = TriedKeys(*ctx.pool);
  const auto equivalent = TriedSignatures(ctx);
  const double capacity = ctx.model->CapacityGiB();
  const bool check_memory = ctx.validator->options().check_memory;
  const bool maximize = ctx.spec->objective.Maximize();
  std::vector<RankedCandidate> all;
  all.reserve(ctx.space->valid().size());
  for (size_t i : ctx.space->valid()) {
    const SpacePoint& p = ctx.space->points()[i];
    if (tried.count(p.key) > 0 || equivalent.count(Signature(p.base)) > 0) continue;
    RankedCandidate c{i, ctx.predictor->Predict(i), 0};
    if (check_memory && c.prediction.peak_memory_gib + c.prediction.memory_margin_gib >
                            c.prediction.UsableGiB(capacity))
      continue;
    const double bonus = std::exp(exploration * c.prediction.uncertainty);
    c.score = maximize ? c.prediction.objective * bonus : -c.prediction.objective / bonus;
    all.push_back(c);
  }
  std::sort(all.begin(), all.end(), [](const RankedCandidate& a, const RankedCandidate& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.index < b.index;
  });
  std::vector<RankedCandidate> out;
  for (const auto& c : all) {
    if (out.size() >= limit) break;
    const ValidationVerdict v = ctx.Validate(ctx.space->points()[c.index].config);
    if (v.ok) out.push_back(c);
  }
  return out;
}

std::optional<RankedCandidate> BestBorderline(const EngineContext& ctx, double bar_utility) {
  if (!ctx.validator->options().check_memory || ctx.pool->calibration().oom_observations > 0) {
    return std::nullopt;
  }
  for (const auto& t : ctx.pool->trials()) {
    if (t.phase == TrialPhase::kFailed && t.failure && t.failure->RanOutOfDeviceMemory()) {
      return std::nullopt;
    }
  }
  const auto tried = TriedKeys(*ctx.pool);
  const auto equivalent = TriedSignatures(ctx);
  const double capacity = ctx.model->CapacityGiB();
  std::optional<RankedCandidate> best;
  for (size_t i : ctx.space->valid()) {
    const SpacePoint& p = ctx.space->points()[i];
    if (tried.count(p.key) > 0 || equivalent.count(Signature(p.base)) > 0) continue;
    const PointPrediction pred = ctx.predictor->Predict(i);
    const double usable = pred.UsableGiB(capacity);
    if (pred.peak_memory_gib > usable || pred.peak_memory_gib + pred.memory_margin_gib <= usable)
      continue;
    const double u = ctx.predictor->Utility(pred.objective);
    if (u <= bar_utility || (best && u <= best->score)) continue;
    best = RankedCandidate{i, pred, u};
  }
  if (best &&
      !ctx.validator->Check(ctx.space->points()[best->index].config, *ctx.pool, *ctx.predictor, 0.0)
           .ok) {
    return std::nullopt;
  }
  return best;
}

Proposal BuiltinEngine::Explain(const EngineContext& ctx, const RankedCandidate& candidate,
                                const Analysis& analysis) {
  Proposal p;
  p.proposed_by = "builtin";
  const Config& cfg = ctx.space->points()[candidate.index].config;
  const PointPrediction& pred = candidate.prediction;
  const bool maximize = ctx.spec->objective.Maximize();
  const std::string metric = ObjectiveMetricName(ctx.spec->objective.metric);
  p.confidence = std::clamp(0.9 - 2.5 * pred.uncertainty, 0.2, 0.95);
  const TrialRecord* best = ctx.BestTrial();
  if (best == nullptr) {
    p.rationale = std::string(ctx.pool->trials().empty() ? "No baseline given: " : "") +
                  "starting from the model's best prediction over " +
                  std::to_string(ctx.space->valid().size()) + " valid configurations (" +
                  analysis.bottleneck + "-bound by the model; predicted peak " +
                  Significant(pred.peak_memory_gib, 3) + " GiB of " +
                  Significant(pred.UsableGiB(ctx.model->CapacityGiB()), 3) + ").";
    p.expected_impact = metric + " " + Significant(pred.objective, 3) + " predicted";
    return p;
  }
  const double observed = best->metrics->Objective(ctx.spec->objective.metric);
  const double gain = Gain(observed, pred.objective, maximize);
  const auto changed = ChangedKeys(best->config, cfg);
  const std::string change = DescribeChange(best->config, cfg);
  p.expected_impact = metric + " " + Significant(observed, 3) + " -> " +
                      Significant(pred.objective, 3) + " (" + SignedPercent(gain, 1) + ")";
  if (changed.size() == 1) {
    const std::string& k = changed.front();
    std::string reason;
    for (const auto& s : analysis.suggestions) {
      if (s.parameter == k && s.to == cfg.at(k)) reason = s.reason;
    }
    p.rationale = "Change " + k + " from " + best->config.at(k).ToString() + " to " +
                  cfg.at(k).ToString() + " on " + best->name + " (" + analysis.health_state + ")" +
                  (reason.empty() ? "" : ": " + reason) + ".";
  } else {
    double single = 0;
    std::string single_text = "none";
    if (!analysis.suggestions.empty()) {
      single = analysis.suggestions.front().expected_gain;
      single_text = analysis.suggestions.front().Text();
    }
    p.rationale = "Joint move of " + std::to_string(changed.size()) + " parameters from " +
                  best->name + " (" + change + "): predicted " + SignedPercent(gain, 1) +
                  " while the best " + "single step (" + single_text + ") predicts " +
                  SignedPercent(single, 1) + "; single steps cannot reach it.";
  }
  if (gain <= ctx.noise_fraction) {
    p.rationale +=
        " Exploratory: no untried candidate is predicted to beat the best by more "
        "than the noise; this one carries the most model uncertainty upside.";
  }
  return p;
}

Result<EngineProposal> BuiltinEngine::Propose(const EngineContext& ctx) {
  EngineProposal out;
  const Analysis analysis = ctx.analysis != nullptr ? *ctx.analysis : AnalyzeBottlenecks(ctx);
  const auto ranked =
      RankCandidates(ctx, static_cast<size_t>(std::max(1, ctx.want)) + 2, ExplorationWeight(ctx));
  for (const auto& c : ranked) {
    out.candidates.push_back({ctx.space->points()[c.index].config, Explain(ctx, c, analysis)});
  }
  // One memory-borderline attempt when it is predicted to beat everything safe by a clear margin.
  const TrialRecord* best = ctx.BestTrial();
  double bar =
      ranked.empty() ? -1e300 : ctx.predictor->Utility(ranked.front().prediction.objective);
  if (best != nullptr) {
    bar =
        std::max(bar, ctx.predictor->Utility(best->metrics->Objective(ctx.spec->objective.metric)));
  }
  bar += std::abs(bar) * 2 * ctx.noise_fraction;
  if (auto b = BestBorderline(ctx, bar)) {
    EngineCandidate c{ctx.space->points()[b->index].config, Explain(ctx, *b, analysis), true};
    char buf[160];
    std::snprintf(buf, sizeof(buf),
                  " Memory-borderline: predicted peak %.1f GiB of %.1f GiB is inside the %.1f GiB "
                  "margin; one such attempt is allowed while nothing has run out of memory.",
                  b->prediction.peak_memory_gib, b->prediction.UsableGiB(ctx.model->CapacityGiB()),
                  ctx.predictor->calibration().memory_margin_gib);
    c.proposal.rationale += buf;
    c.proposal.confidence = std::min(c.proposal.confidence, 0.5);
    out.candidates.insert(out.candidates.begin(), std::move(c));
  }
  // The best known configuration of a past campaign on the same model and hardware goes first.
  WarmStart warm = FindWarmStart(ctx);
  if (warm.candidate) {
    const std::string key = ConfigKey(warm.candidate->config);
    out.candidates.erase(
        std::remove_if(out.candidates.begin(), out.candidates.end(),
                       [&](const EngineCandidate& c) { return ConfigKey(c.config) == key; }),
        out.candidates.end());
    out.candidates.insert(out.candidates.begin(), std::move(*warm.candidate));
  } else if (!warm.skipped.empty() && !out.candidates.empty()) {
    out.candidates.front().proposal.rationale += " " + warm.skipped;
  }
  (void)seed_;
  return out;
}

}  // namespace paratune
