#include "agents/engines/analyst.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/strings.h"

namespace paratune {

namespace {

double Objective(const TrialRecord& t, const CampaignSpec& spec) {
  return t.metrics ? t.metrics->Objective(spec.objective.metric) : 0;
}

// Relative gain of `b` over `a` in the objective's better direction.
double Gain(double a, double b, bool maximize) {
  if (a <= 0 || b <= 0) return 0;
  return maximize ? b / a - 1 : a / b - 1;
}

struct Part {
  const char* name;
  double seconds;
};

std::vector<Part> Parts(const TimeBreakdown& t) {
  return {{"compute", t.compute},
          {"exposed tensor-parallel communication", t.tensor_parallel},
          {"context-parallel exchange", t.context_parallel},
          {"pipeline bubble", t.pipeline_bubble},
          {"pipeline point-to-point", t.pipeline_p2p},
          {"exposed data-parallel communication", t.data_parallel},
          {"expert all-to-all", t.expert_parallel},
          {"optimizer step", t.optimizer}};
}

// The breakdown component that moves most between two predictions, as a phrase.
std::string LargestShift(const PointPrediction& from, const PointPrediction& to) {
  const auto a = Parts(from.time), b = Parts(to.time);
  size_t best = 0;
  double shift = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(b[i].seconds - a[i].seconds);
    if (d > shift) {
      shift = d;
      best = i;
    }
  }
  if (shift <= 0)
    return "step time " + Fixed(from.step_time_seconds, 2) + " s -> " +
           Fixed(to.step_time_seconds, 2) + " s";
  return std::string(a[best].name) + " " + Fixed(a[best].seconds, 2) + " s -> " +
         Fixed(b[best].seconds, 2) + " s";
}

std::string HealthState(const PointPrediction& p, double observed_mfu, double capacity,
                        std::string* bottleneck) {
  const double step = std::max(p.step_time_seconds, 1e-9);
  const double comm = CommunicationSeconds(p.time) - p.time.pipeline_p2p;
  const double pipe = p.time.pipeline_bubble + p.time.pipeline_p2p;
  std::string state;
  if (pipe / step > 0.15) {
    *bottleneck = "pipeline";
    state = "high-pipeline-overhead";
  } else if (comm / step > 0.25) {
    *bottleneck = "communication";
    state = "communication-bound";
  } else if (capacity > 0 && p.peak_memory_gib / capacity > 0.92) {
    *bottleneck = "memory-capacity";
    state = "memory-bound";
  } else {
    *bottleneck = "compute";
    state = "compute-bound";
  }
  if (observed_mfu > 0 && observed_mfu < 0.2) return "severely-under-utilized";
  return state;
}

}  // namespace

std::string DescribeChange(const Config& from, const Config& to) {
  std::string s;
  for (const auto& [k, v] : to) {
    auto it = from.find(k);
    if (it != from.end() && it->second == v) continue;
    if (!s.empty()) s += ", ";
    s += k + " " + (it == from.end() ? std::string("-") : it->second.ToString()) + "->" +
         v.ToString();
  }
  return s;
}

std::vector<ControlledComparison> FindControlledComparisons(const MessagePool& pool,
                                                            const CampaignSpec& spec) {
  std::vector<ControlledComparison> out;
  const auto& t = pool.trials();
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i].phase != TrialPhase::kSucceeded || Objective(t[i], spec) <= 0) continue;
    for (size_t j = i + 1; j < t.size(); ++j) {
      if (t[j].phase != TrialPhase::kSucceeded || Objective(t[j], spec) <= 0) continue;
      const auto changed = ChangedKeys(t[i].config, t[j].config);
      if (changed.size() != 1) continue;
      const std::string& k = changed.front();
      if (t[i].config.count(k) == 0 || t[j].config.count(k) == 0) continue;
      out.push_back(
          {k, t[i].config.at(k), t[j].config.at(k), t[i].name, t[j].name,
           Gain(Objective(t[i], spec), Objective(t[j], spec), spec.objective.Maximize())});
    }
  }
  return out;
}

Config ReferenceConfig(const EngineContext& ctx) {
  if (const TrialRecord* best = ctx.BestTrial()) return best->config;
  if (ctx.spec->baseline) return *ctx.spec->baseline;
  const size_t* top = nullptr;
  double top_u = -1e300;
  for (const size_t& i : ctx.space->valid()) {
    const double u = ctx.predictor->Utility(ctx.predictor->Predict(i).objective);
    if (u > top_u) {
      top_u = u;
      top = &i;
    }
  }
  return top == nullptr ? Config{} : ctx.space->points()[*top].config;
}

Analysis AnalyzeBottlenecks(const EngineContext& ctx, size_t max_suggestions) {
  Analysis a;
  a.iteration = ctx.iteration;
  const Config ref = ReferenceConfig(ctx);
  if (ref.empty()) {
    a.health_state = "unknown";
    a.summary = "No valid configuration in the search space.";
    return a;
  }
  const TrialRecord* best = ctx.BestTrial();
  const PointPrediction ref_pred = ctx.Score(ref);
  const double observed_mfu = best && best->metrics ? best->metrics->mfu : 0;
  a.health_state = HealthState(ref_pred, observed_mfu, ctx.model->CapacityGiB(), &a.bottleneck);
  const bool maximize = ctx.spec->objective.Maximize();
  const auto comparisons = FindControlledComparisons(*ctx.pool, *ctx.spec);
  for (const auto& param : ctx.spec->search_space) {
    for (const auto& v : param.values) {
      if (!ref.count(param.name) || ref.at(param.name) == v) continue;
      Config cand = ref;
      cand[param.name] = v;
      const ValidationVerdict verdict = ctx.Validate(cand);
      if (!verdict.ok) continue;
      Suggestion s{param.name, ref.at(param.name), v, "", 0};
      s.expected_gain = Gain(ref_pred.objective, verdict.prediction.objective, maximize);
      s.reason = "predicted " + SignedPercent(s.expected_gain, 1) + " (" +
                 LargestShift(ref_pred, verdict.prediction) + ")";
      for (const auto& c : comparisons) {
        if (c.parameter != param.name) continue;
        const bool same = c.from == s.from && c.to == s.to;
        const bool reverse = c.from == s.to && c.to == s.from;
        if (!same && !reverse) continue;
        s.reason += "; measured " + c.from_trial + " -> " + c.to_trial + ": " +
                    SignedPercent(c.relative_change, 1);
      }
      a.suggestions.push_back(std::move(s));
    }
  }
  std::stable_sort(
      a.suggestions.begin(), a.suggestions.end(),
      [](const Suggestion& x, const Suggestion& y) { return x.expected_gain > y.expected_gain; });
  if (a.suggestions.size() > max_suggestions) a.suggestions.resize(max_suggestions);
  std::string who = best ? best->name : (ctx.spec->baseline ? "the baseline" : "the model's pick");
  a.summary = who + " is " + a.health_state + " (bottleneck: " + a.bottleneck +
              "; predicted step " + Fixed(ref_pred.step_time_seconds, 2) + " s, peak " +
              Fixed(ref_pred.peak_memory_gib, 1) + " GiB).";
  if (!a.suggestions.empty() && a.suggestions.front().expected_gain > 0) {
    a.summary += " Top single step: " + a.suggestions.front().Text() + ".";
  } else {
    a.summary += " No single-parameter step is predicted to help.";
  }
  return a;
}

}  // namespace paratune
