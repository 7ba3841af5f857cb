#include "agents/knowledge/proposer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <set>

#include "agents/knowledge/moves.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"
#include "base/strings.h"

namespace paratune {

namespace {

constexpr double kMemoryLimit = 0.95;     // of capacity: the rest is fragmentation headroom
constexpr double kAssumedHbmPeak = 0.80;  // when neither profile nor model says

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
  double gain = 0, step = 0, duty = 0, mem_fraction = 0, mem_gib = 0;
  bool relieves = false;   // moves the figure behind the named bottleneck the right way
  bool per_layer = false;  // raises an axis whose collectives run in every layer
  std::string accounting;  // the model's per-axis figures, current -> proposed
  // The model's verdict and interval (contract section 14), step times scaled like `step`.
  std::string verdict;
  double step_low = 0, step_high = 0, mem_low = 0, mem_high = 0;
};

struct Context {
  const ProposeInput* in;
  const ProfileAnalysis* analysis;
  std::optional<Estimate> current;  // model estimate of the current config (fits or not)
  Calibration calibration;          // from the profile's evidence (CalibrateFromProfile)
  double base_step = 0;             // step time the gains are relative to
  double scale = 1;                 // profiled / predicted step time of the current config
  bool relative = true;             // gains compare with a configuration that runs
  bool tpu = false;
};

double Collectives(const TimeBreakdown& t) {
  return t.tensor_parallel + t.context_parallel + t.pipeline_p2p + t.data_parallel +
         t.expert_parallel;
}

// Whether the model says candidate `e` relieves `bottleneck` relative to the current `cur`.
bool Relieves(const std::string& bottleneck, const Estimate& cur, const Estimate& e) {
  if (bottleneck == "communication") return Collectives(e.time) < 0.97 * Collectives(cur.time);
  if (bottleneck == "hbm" || bottleneck == "memory-capacity")
    return e.peak_memory_gib < 0.97 * cur.peak_memory_gib;
  if (bottleneck == "pipeline") return e.time.pipeline_bubble < 0.97 * cur.time.pipeline_bubble;
  if (bottleneck == "compute") return e.time.compute < 0.99 * cur.time.compute;
  return false;  // input: no parallelism axis feeds the host faster
}

std::string Accounting(const Estimate& cur, const Estimate& e) {
  auto ms = [](double s) { return Fixed(s * 1000, 0); };
  const TimeBreakdown &a = cur.time, &b = e.time;
  std::string t = "model: exposed collectives " + ms(Collectives(a)) + " -> " + ms(Collectives(b)) +
                  " ms (tensor/sequence " + ms(a.tensor_parallel + a.context_parallel) + " -> " +
                  ms(b.tensor_parallel + b.context_parallel) + ", data/fsdp " +
                  ms(a.data_parallel) + " -> " + ms(b.data_parallel) + ")";
  if (a.pipeline_bubble + b.pipeline_bubble > 0)
    t += ", bubble " + ms(a.pipeline_bubble) + " -> " + ms(b.pipeline_bubble) + " ms";
  t += ", compute " + ms(a.compute) + " -> " + ms(b.compute) + " ms, memory " +
       Fixed(cur.peak_memory_gib, 1) + " -> " + Fixed(e.peak_memory_gib, 1) + " GiB per device";
  return t;
}

// Axes whose collectives run inside every layer (TP/SP all-gathers and reduce-scatters, CP
// ring passes, MoE all-to-alls; MaxText's tensor, sequence and expert axes): raising one adds
// collectives to every layer's critical path.
bool AddsPerLayerCollectives(const Config& from, const Config& to) {
  for (const char* k : {"tp", "cp", "ep", "iciTensor", "iciSequence", "iciExpert"}) {
    auto a = from.find(k);
    auto b = to.find(k);
    const int64_t before = a != from.end() ? a->second.AsInt() : 1;
    if (b != to.end() && b->second.AsInt() > before) return true;
  }
  return false;
}

std::optional<Scored> ScoreWithModel(const MoveCandidate& c, const Context& ctx) {
  Estimate e = EstimateConfig(*ctx.in->workload, c.config, ctx.calibration);
  if (!e.fits || e.step_time_seconds <= 0) return std::nullopt;
  if (e.capacity_gib > 0 && e.peak_memory_gib > kMemoryLimit * e.capacity_gib) return std::nullopt;
  Scored s;
  s.cand = c;
  s.step = e.step_time_seconds * ctx.scale;
  s.gain = ctx.base_step > 0 ? ctx.base_step / s.step - 1 : 0;
  s.duty = e.step_time_seconds > 0 ? 1 - e.time.pipeline_bubble / e.step_time_seconds : 0;
  s.mem_gib = e.peak_memory_gib;
  s.mem_fraction = e.capacity_gib > 0 ? e.peak_memory_gib / e.capacity_gib : 0;
  s.verdict = e.verdict;
  s.step_low = e.step_time_range.low * ctx.scale;
  s.step_high = e.step_time_range.high * ctx.scale;
  s.mem_low = e.peak_memory_range.low;
  s.mem_high = e.peak_memory_range.high;
  if (ctx.current && ctx.current->step_time_seconds > 0) {
    s.relieves = Relieves(ctx.analysis->bottleneck, *ctx.current, e);
    s.accounting = Accounting(*ctx.current, e);
  } else {
    s.relieves = c.targets_bottleneck;
  }
  return s;
}

std::optional<Scored> ScoreWithRules(const MoveCandidate& c, const Context& ctx) {
  const ProfileSummary* p = ctx.in->profile;
  double peak =
      ctx.analysis->hbm_peak_fraction > 0 ? ctx.analysis->hbm_peak_fraction : kAssumedHbmPeak;
  Scored s;
  s.cand = c;
  s.mem_fraction = peak * c.memory_factor;
  if (s.mem_fraction > kMemoryLimit) return std::nullopt;
  double saved = std::min(0.9, c.saved_fraction);
  s.gain = 1 / (1 - saved) - 1;
  if (p != nullptr && p->step_time_seconds > 0) s.step = p->step_time_seconds / (1 + s.gain);
  if (p != nullptr && p->device_duty_cycle > 0) s.duty = p->device_duty_cycle;
  const std::string& b = ctx.analysis->bottleneck;
  s.relieves =
      c.targets_bottleneck || ((b == "hbm" || b == "memory-capacity") && c.memory_factor < 0.97);
  return s;
}

// Confidence from the evidence: a model that agrees with the profile, a clear profile, a move
// that relieves the named bottleneck, a retrieved past optimization of the same kind.
double Confidence(const Scored& s, const Context& ctx, bool past_cited) {
  const bool model = ctx.in->workload != nullptr;
  double c = model ? 0.5 : 0.3;
  if (model && ctx.in->profile != nullptr && ctx.scale > 0) {
    c += 0.15 * (1 - std::min(1.0, std::abs(std::log(ctx.scale)) / std::log(2.0)));
  }
  if (ctx.in->profile != nullptr) c += 0.15 * ctx.analysis->clarity;
  c += s.relieves ? 0.05 : -0.1;
  if (past_cited) c += 0.1;
  if (!model) c = std::min(c, 0.6);
  if (model && s.step_high > s.step_low && s.step > 0) {
    // The interval: a wide one lowers confidence, and a gain inside it may be no gain at all.
    const double half = 0.5 * std::log(s.step_high / s.step_low);
    c -= std::min(0.2, 0.5 * half);
    if (std::log1p(std::max(0.0, s.gain)) < half) c -= 0.1;
    if (s.verdict == "marginal") c -= 0.1;
  }
  return std::clamp(c, 0.05, 0.95);
}

std::string ImpactText(const Scored& s, const Context& ctx) {
  std::string t;
  if (!ctx.relative) {
    t = "a predicted step time of " + Fixed(s.step, 3) + " s (the current configuration " +
        "cannot run, so there is no baseline to compare with)";
  } else {
    t = s.gain >= 0 ? "about " + Fixed(s.gain * 100, 0) + "% faster steps"
                    : "about " + Fixed(-s.gain * 100, 0) + "% slower steps";
    if (s.step > 0) t += " (step time " + Fixed(s.step, 3) + " s)";
  }
  if (s.duty > 0) t += ", duty cycle " + Fixed(s.duty * 100, 0) + "%";
  t += ", peak memory " + Fixed(s.mem_fraction * 100, 0) + "% of device memory";
  if (s.mem_gib > 0) t += " (" + Fixed(s.mem_gib, 1) + " GiB)";
  if (ctx.in->workload == nullptr) t += "; rule-of-thumb estimate without a model description";
  if (!s.accounting.empty()) t += " (" + s.accounting + ")";
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
// A communication-bound job never gets a move that adds per-layer collectives first: such moves
// sort after every other, and when nothing else is left they are not proposed at all.
std::vector<Scored> Select(std::vector<Scored> all, size_t k, bool communication_bound) {
  // Moves that relieve the named bottleneck come first; a move that does not is proposed only
  // when fewer than k do (and says so in its rationale).
  std::stable_sort(all.begin(), all.end(), [&](const Scored& a, const Scored& b) {
    if (communication_bound && a.per_layer != b.per_layer) return !a.per_layer;
    if (a.relieves != b.relieves) return a.relieves;
    return a.gain != b.gain ? a.gain > b.gain : a.cand.changes.size() < b.cand.changes.size();
  });
  std::vector<Scored> chosen;
  for (const auto& s : all) {
    if (chosen.size() == k) break;
    if (communication_bound && s.per_layer && chosen.empty()) break;
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
  p.verdict = s.verdict;
  p.step_time_interval = {s.step_low, s.step_high};
  p.memory_interval = {s.mem_low, s.mem_high};
  const std::string relief =
      s.relieves ? "" : " (this move does not relieve that bottleneck; it is the best of the rest)";
  p.rationale = "Change " + Join(s.cand.changes, ", ") + ": the job is " +
                ctx.analysis->bottleneck + "-bound" + relief + "; " + Join(s.cand.reasons, "; ") +
                ". The global batch is unchanged, so step times compare equal work. Expected " +
                ImpactText(s, ctx) + ".";
  p.tradeoffs = Join(s.cand.costs, "; ");
  if (p.tradeoffs.empty()) p.tradeoffs = "none significant";
  p.citations = Citations(s.cand, *ctx.in, ctx.tpu, kb);
  bool past = std::any_of(p.citations.begin(), p.citations.end(),
                          [](const std::string& c) { return c.rfind("past:", 0) == 0; });
  p.confidence = std::round(Confidence(s, ctx, past) * 100) / 100;
  return p;
}

// Evidence over the model: when a profile gives the step time and the collectives' share, the
// model is calibrated from it before any candidate is ranked: the collectives' bandwidth so that
// the model's exposed collectives take the profiled share of the step, then the kernels'
// efficiency so that the step takes the profiled time. Returns the sentence the analysis shows
// ("" when there was nothing to calibrate from).
std::string CalibrateFromProfile(const ProposeInput& in, const ProfileAnalysis& a, Context* ctx) {
  if (in.workload == nullptr || in.profile == nullptr || !ctx->current) return "";
  const Estimate before = *ctx->current;
  const double profiled = in.profile->step_time_seconds;
  const double share = a.communication_fraction;
  if (!before.fits || before.step_time_seconds <= 0 || profiled <= 0) return "";
  const double modeled_share = Collectives(before.time) / before.step_time_seconds;
  Calibration cal;
  if (share > 0 && modeled_share > 0) {
    cal.communication_efficiency = std::clamp(modeled_share / share, 0.1, 10.0);
  }
  Estimate e = EstimateConfig(*in.workload, in.current, cal);
  const double rest = e.step_time_seconds - e.time.compute;
  if (e.time.compute > 0 && profiled - rest > 0.05 * profiled) {
    cal.compute_efficiency = std::clamp(e.time.compute / (profiled - rest), 0.2, 5.0);
  }
  e = EstimateConfig(*in.workload, in.current, cal);
  ctx->calibration = cal;
  ctx->current = e;
  return "Model calibrated from the profile before ranking: collectives " +
         Fixed(modeled_share * 100, 0) + "% -> " +
         Fixed(Collectives(e.time) / e.step_time_seconds * 100, 0) + "% of the step (profiled " +
         Fixed(share * 100, 0) + "%), step " + Fixed(before.step_time_seconds, 3) + " -> " +
         Fixed(e.step_time_seconds, 3) + " s (profiled " + Fixed(profiled, 3) + " s).";
}

// What the proposer could not know from its inputs, said plainly in the analysis.
void AddUnknowns(const ProposeInput& in, ProfileAnalysis* a) {
  if (in.workload == nullptr) {
    a->unknowns.push_back(
        "No model shape: memory per device of each proposal is scaled from the profiled HBM "
        "peak by rules of thumb, not computed; whether it fits is not checked exactly.");
    a->unknowns.push_back(
        "No model shape: collective bytes per axis and heads/layers divisibility of new "
        "tp/pp/mesh values are not known; a proposal may fail a framework check.");
  }
  if (in.profile == nullptr) {
    a->unknowns.push_back("No profile: the bottleneck and step times are the model's alone.");
  } else {
    if (in.profile->hbm_peak_fraction <= 0)
      a->unknowns.push_back("The profile gives no HBM peak: 80% of capacity is assumed.");
    if (in.profile->step_time_seconds <= 0)
      a->unknowns.push_back("The profile gives no step time: gains are relative only.");
  }
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
  if (!verdict.empty()) {
    // Contract section 14: the model's verdict and interval for this configuration.
    auto r = [](double v) { return std::round(v * 1e4) / 1e4; };
    predicted["verdict"] = verdict;
    predicted["interval"] = {
        {"stepTimeSeconds", {r(step_time_interval.first), r(step_time_interval.second)}},
        {"peakMemoryGiB", {r(memory_interval.first), r(memory_interval.second)}}};
  }
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
  Context ctx{&in, nullptr, std::nullopt, Calibration{}};
  ctx.tpu = ai.tpu;
  if (in.workload != nullptr) {
    ctx.current = EstimateConfig(*in.workload, in.current);
    if (in.profile == nullptr) ai.estimate = &*ctx.current;
  }
  ProposalSet out;
  out.analysis = AnalyzeProfile(ai);
  ctx.analysis = &out.analysis;
  const std::string calibrated = CalibrateFromProfile(in, out.analysis, &ctx);
  if (!calibrated.empty()) out.analysis.evidence.push_back(calibrated);
  const bool current_ok = ctx.current && ctx.current->fits && ctx.current->step_time_seconds > 0;
  const double profiled = in.profile != nullptr ? in.profile->step_time_seconds : 0;
  if (current_ok && profiled > 0) ctx.scale = profiled / ctx.current->step_time_seconds;
  ctx.base_step = profiled > 0 ? profiled : (current_ok ? ctx.current->step_time_seconds : 0);
  MoveContext mc{in.spec, &out.analysis, ai.tpu, ai.devices, ai.devices_per_node, &in.current};
  AddUnknowns(in, &out.analysis);
  std::vector<Scored> scored;
  for (const MoveCandidate& c : GenerateCandidates(in.current, mc)) {
    auto s = in.workload != nullptr ? ScoreWithModel(c, ctx) : ScoreWithRules(c, ctx);
    if (!s) continue;
    s->per_layer = AddsPerLayerCollectives(in.current, c.config);
    scored.push_back(*s);
  }
  if (in.workload != nullptr && ctx.base_step <= 0 && !scored.empty()) {
    // Nothing to compare against (the current mesh no longer fits): rank by predicted step.
    double worst = 0;
    for (const auto& s : scored) worst = std::max(worst, s.step);
    for (auto& s : scored) s.gain = worst / s.step - 1;
    ctx.relative = false;
  }
  if (in.workload != nullptr && current_ok == false && profiled <= 0) ctx.relative = false;
  if (ctx.relative && ctx.base_step > 0) {
    // A configuration predicted to be slower is not a better configuration: it is not offered,
    // unless the job is bound by memory and the move relieves it (it trades speed for room).
    const std::string& b = out.analysis.bottleneck;
    const bool memory_bound = b == "hbm" || b == "memory-capacity";
    const size_t before = scored.size();
    scored.erase(std::remove_if(
                     scored.begin(), scored.end(),
                     [&](const Scored& s) { return s.gain <= 0 && !(memory_bound && s.relieves); }),
                 scored.end());
    if (scored.size() < in.k && before > scored.size()) {
      out.analysis.unknowns.push_back(
          "Fewer than " + std::to_string(in.k) + " proposals: only " +
          std::to_string(scored.size()) + " candidate(s) are predicted to be faster than the " +
          "current configuration; " + std::to_string(before - scored.size()) +
          " predicted slower are not offered.");
    }
  }
  const bool comm = out.analysis.bottleneck == "communication";
  for (const Scored& s : Select(std::move(scored), in.k, comm))
    out.proposals.push_back(ToProposal(s, ctx, kb));
  if (comm && out.proposals.size() < in.k) {
    out.analysis.unknowns.push_back(
        "The job is communication-bound: moves that add per-layer collectives (more tensor, "
        "context, expert or sequence parallelism) are never proposed first.");
  }
  return out;
}

}  // namespace paratune
