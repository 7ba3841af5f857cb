#include "agents/knowledge/proposer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

#include "agents/knowledge/moves.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"

namespace paratune {

namespace {

constexpr double kMemoryLimit = 0.95;     // of capacity: the rest is fragmentation headroom
constexpr double kAssumedHbmPeak = 0.80;  // when neither profile nor model says

std::string Fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string Join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) {
    if (p.empty()) continue;
    out += (out.empty() ? "" : sep) + p;
  }
  return out;
}

struct Scored {
  MoveCandidate cand;
  double gain = 0, step = 0, duty = 0, mem_fraction = 0, mem_gib = 0, confidence = 0;
};

struct Context {
  const ProposeInput* in;
  const ProfileAnalysis* analysis;
  std::optional<Estimate> current;  // model estimate of the current config (fits or not)
  double base_step = 0;             // step time the gains are relative to
  double scale = 1;                 // profiled / predicted step time of the current config
  bool relative = true;             // gains compare with a configuration that runs
  bool tpu = false;
};

std::optional<Scored> ScoreWithModel(const MoveCandidate& c, const Context& ctx) {
  Estimate e = EstimateConfig(*ctx.in->workload, c.config);
  if (!e.fits || e.step_time_seconds <= 0) return std::nullopt;
  if (e.capacity_gib > 0 && e.peak_memory_gib > kMemoryLimit * e.capacity_gib) return std::nullopt;
  Scored s{c};
  s.step = e.step_time_seconds * ctx.scale;
  s.gain = ctx.base_step > 0 ? ctx.base_step / s.step - 1 : 0;
  s.duty = e.step_time_seconds > 0 ? 1 - e.time.pipeline_bubble / e.step_time_seconds : 0;
  s.mem_gib = e.peak_memory_gib;
  s.mem_fraction = e.capacity_gib > 0 ? e.peak_memory_gib / e.capacity_gib : 0;
  s.confidence = ctx.in->profile != nullptr && ctx.scale > 0.8 && ctx.scale < 1.25 ? 0.75 : 0.6;
  return s;
}

std::optional<Scored> ScoreWithRules(const MoveCandidate& c, const Context& ctx) {
  const ProfileSummary* p = ctx.in->profile;
  double peak =
      ctx.analysis->hbm_peak_fraction > 0 ? ctx.analysis->hbm_peak_fraction : kAssumedHbmPeak;
  Scored s{c};
  s.mem_fraction = peak * c.memory_factor;
  if (s.mem_fraction > kMemoryLimit) return std::nullopt;
  double saved = std::min(0.9, c.saved_fraction);
  s.gain = 1 / (1 - saved) - 1;
  if (p != nullptr && p->step_time_seconds > 0) s.step = p->step_time_seconds / (1 + s.gain);
  if (p != nullptr && p->device_duty_cycle > 0) s.duty = p->device_duty_cycle;
  s.confidence = (p != nullptr ? 0.45 : 0.3) + (c.targets_bottleneck ? 0.1 : 0) +
                 (ctx.analysis->hbm_peak_fraction > 0 ? 0.05 : 0);
  return s;
}

std::string ImpactText(const Scored& s, const Context& ctx) {
  std::string t;
  if (!ctx.relative) {
    t = "a predicted step time of " + Fmt("%.3f", s.step) + " s (the current configuration " +
        "cannot run, so there is no baseline to compare with)";
  } else {
    t = s.gain >= 0 ? "about " + Fmt("%.0f", s.gain * 100) + "% faster steps"
                    : "about " + Fmt("%.0f", -s.gain * 100) + "% slower steps";
    if (s.step > 0) t += " (step time " + Fmt("%.3f", s.step) + " s)";
  }
  if (s.duty > 0) t += ", duty cycle " + Fmt("%.0f", s.duty * 100) + "%";
  t += ", peak memory " + Fmt("%.0f", s.mem_fraction * 100) + "% of device memory";
  if (s.mem_gib > 0) t += " (" + Fmt("%.1f", s.mem_gib) + " GiB)";
  if (ctx.in->workload == nullptr) t += "; rule-of-thumb estimate without a model description";
  return t;
}

std::vector<std::string> Citations(const MoveCandidate& c, const ProposeInput& in, bool tpu,
                                   const KnowledgeBase& kb) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto add = [&](const std::vector<KnowledgeHit>& hits, size_t n, bool past_only) {
    for (const auto& h : hits) {
      if (n == 0) break;
      if (past_only && h.kind != "past-optimization") continue;
      if (h.kind == "signature") continue;  // failure signatures do not justify a speed-up
      // TPU mesh notes do not support GPU moves and vice versa.
      bool tpu_doc = h.id.find("tpu") != std::string::npos;
      if (h.kind == "document" && tpu_doc != tpu) continue;
      if (seen.insert(h.id).second) out.push_back(h.id);
      --n;
    }
  };
  for (size_t i = 0; i < c.queries.size(); ++i)
    add(kb.Search(c.queries[i], 4), i == 0 ? 2 : 1, false);
  std::string past_query =
      in.spec->model.preset + " " + in.spec->hardware.accelerator + " " + Join(c.changes, " ");
  add(kb.Search(past_query, 8), 1, true);
  return out;
}

// Best first; a candidate whose changes extend an already chosen one must beat it clearly.
std::vector<Scored> Select(std::vector<Scored> all, size_t k) {
  std::stable_sort(all.begin(), all.end(), [](const Scored& a, const Scored& b) {
    double ra = a.gain + (a.cand.targets_bottleneck ? 0.005 : 0);
    double rb = b.gain + (b.cand.targets_bottleneck ? 0.005 : 0);
    return ra != rb ? ra > rb : a.cand.changes.size() < b.cand.changes.size();
  });
  std::vector<Scored> chosen;
  for (const auto& s : all) {
    if (chosen.size() == k) break;
    bool redundant = false;
    for (const auto& c : chosen) {
      bool superset =
          std::all_of(c.cand.changes.begin(), c.cand.changes.end(), [&](const auto& ch) {
            return std::find(s.cand.changes.begin(), s.cand.changes.end(), ch) !=
                   s.cand.changes.end();
          });
      redundant = redundant || (superset && s.gain < c.gain + 0.02);
    }
    if (!redundant) chosen.push_back(s);
  }
  return chosen;
}

ConfigProposal ToProposal(const Scored& s, const Context& ctx, const KnowledgeBase& kb) {
  ConfigProposal p;
  p.config = s.cand.config;
  p.changes = s.cand.changes;
  p.expected_gain = s.gain;
  p.predicted_step_time_seconds = s.step;
  p.predicted_duty_cycle = s.duty;
  p.predicted_memory_fraction = s.mem_fraction;
  p.predicted_memory_gib = s.mem_gib;
  p.rationale = "Change " + Join(s.cand.changes, ", ") + ": the job is " +
                ctx.analysis->bottleneck + "-bound; " + Join(s.cand.reasons, "; ") + ". Expected " +
                ImpactText(s, ctx) + ".";
  p.tradeoffs = Join(s.cand.costs, "; ");
  if (p.tradeoffs.empty()) p.tradeoffs = "none significant";
  p.confidence = std::round(std::clamp(s.confidence, 0.05, 0.95) * 100) / 100;
  p.citations = Citations(s.cand, *ctx.in, ctx.tpu, kb);
  return p;
}

}  // namespace

nlohmann::json ConfigProposal::ToJson() const {
  nlohmann::json predicted = {
      {"stepTimeChange", std::round(-expected_gain / (1 + expected_gain) * 1e4) / 1e4},
      {"memoryFraction", std::round(predicted_memory_fraction * 1e4) / 1e4}};
  if (predicted_step_time_seconds > 0)
    predicted["stepTimeSeconds"] = std::round(predicted_step_time_seconds * 1e4) / 1e4;
  if (predicted_duty_cycle > 0)
    predicted["dutyCycle"] = std::round(predicted_duty_cycle * 1e4) / 1e4;
  if (predicted_memory_gib > 0)
    predicted["peakMemoryGiB"] = std::round(predicted_memory_gib * 100) / 100;
  std::string impact = rationale.substr(
      rationale.find("Expected ") == std::string::npos ? 0 : rationale.find("Expected ") + 9);
  if (!impact.empty() && impact.back() == '.') impact.pop_back();
  return {{"config", ConfigToJson(config)}, {"changes", changes},     {"rationale", rationale},
          {"expectedImpact", impact},       {"predicted", predicted}, {"tradeoffs", tradeoffs},
          {"confidence", confidence},       {"citations", citations}};
}

nlohmann::json ProposalSet::ToJson() const {
  nlohmann::json ps = nlohmann::json::array();
  for (const auto& p : proposals) ps.push_back(p.ToJson());
  return {{"analysis", analysis.ToJson()}, {"proposals", ps}};
}

Result<ProposalSet> Propose(const ProposeInput& in, const KnowledgeBase& kb) {
  if (in.spec == nullptr) return Status::Invalid("propose: campaign spec is required");
  if (in.k == 0) return Status::Invalid("-k: must be >= 1");
  if (in.current.empty()) {
    return Status::Invalid(
        "spec.baseline: a configuration is required (set spec.baseline or "
        "profile.config)");
  }
  const HardwareSpec& hw = in.spec->hardware;
  AnalysisInput ai;
  ai.profile = in.profile;
  ai.config = in.current;
  ai.tpu = in.workload != nullptr ? in.workload->IsTpu() : hw.IsTpu();
  ai.devices = in.workload != nullptr ? in.workload->devices : hw.TotalDevices();
  ai.devices_per_node =
      in.workload != nullptr ? in.workload->DevicesPerNode() : hw.devices_per_node;
  Context ctx{&in, nullptr, std::nullopt};
  ctx.tpu = ai.tpu;
  if (in.workload != nullptr) {
    ctx.current = EstimateConfig(*in.workload, in.current);
    if (in.profile == nullptr) ai.estimate = &*ctx.current;
  }
  ProposalSet out;
  out.analysis = Analyze(ai);
  ctx.analysis = &out.analysis;
  const bool current_ok = ctx.current && ctx.current->fits && ctx.current->step_time_seconds > 0;
  const double profiled = in.profile != nullptr ? in.profile->step_time_seconds : 0;
  if (current_ok && profiled > 0) ctx.scale = profiled / ctx.current->step_time_seconds;
  ctx.base_step = profiled > 0 ? profiled : (current_ok ? ctx.current->step_time_seconds : 0);
  MoveContext mc{in.spec, &out.analysis, ai.tpu, ai.devices, ai.devices_per_node};
  std::vector<Scored> scored;
  for (const MoveCandidate& c : GenerateCandidates(in.current, mc)) {
    auto s = in.workload != nullptr ? ScoreWithModel(c, ctx) : ScoreWithRules(c, ctx);
    if (s) scored.push_back(*s);
  }
  if (in.workload != nullptr && ctx.base_step <= 0 && !scored.empty()) {
    // Nothing to compare against (the current mesh no longer fits): rank by predicted step.
    double worst = 0;
    for (const auto& s : scored) worst = std::max(worst, s.step);
    for (auto& s : scored) s.gain = worst / s.step - 1;
    ctx.relative = false;
  }
  if (in.workload != nullptr && current_ok == false && profiled <= 0) ctx.relative = false;
  for (const Scored& s : Select(std::move(scored), in.k))
    out.proposals.push_back(ToProposal(s, ctx, kb));
  return out;
}

}  // namespace paratune
