#include "agents/knowledge/analyzer.h"

#include <algorithm>
#include <cstdio>

#include "base/strings.h"

namespace paratune {

namespace {

void ReadProfile(const ProfileSummary& p, ProfileAnalysis* a) {
  double coll = 0, mm_time = 0, mm_flops = 0;
  for (const auto& op : p.top_ops) {
    if (op.IsCollective()) {
      coll += op.time_fraction;
      if (op.category == "all-to-all") a->all_to_all_fraction += op.time_fraction;
    } else if (op.category == "matmul" || op.category == "attention") {
      mm_time += op.time_fraction;
      mm_flops += op.time_fraction * op.flops_utilization;
    }
    if (!op.IsCollective() && (op.bottleneck == "hbm" || op.bottleneck == "vmem") &&
        op.category != "matmul") {
      a->hbm_bound_fraction += op.time_fraction;
    }
  }
  a->communication_fraction = std::max(p.communication_fraction, coll);
  a->matmul_fraction = mm_time;
  a->matmul_flops_utilization = mm_time > 0 ? mm_flops / mm_time : 0;
  a->idle_fraction = p.device_duty_cycle > 0 ? 1 - p.device_duty_cycle : 0;
  a->hbm_peak_fraction = p.hbm_peak_fraction;
}

void ProfileEvidence(const ProfileSummary& p, const ProfileAnalysis& a,
                     std::vector<std::string>* ev) {
  std::string s;
  if (p.step_time_seconds > 0) s = "step time " + Fixed(p.step_time_seconds, 3) + " s";
  if (p.device_duty_cycle > 0)
    s += (s.empty() ? "" : ", ") + std::string("device duty cycle ") +
         Percent(p.device_duty_cycle, 1);
  s += (s.empty() ? "" : ", ") + std::string("collectives ") +
       Percent(a.communication_fraction, 1) + " of step time";
  if (p.hbm_peak_fraction > 0)
    s += ", HBM peak " + Percent(p.hbm_peak_fraction, 1) + " of capacity";
  ev->push_back("Profile: " + s + ".");
  std::string ops;
  for (size_t i = 0; i < p.top_ops.size() && i < 3; ++i) {
    const ProfileOp& op = p.top_ops[i];
    ops += (i ? "; " : "") + op.name + " (" + op.category + ", " + Percent(op.time_fraction, 1) +
           ", bottleneck " + op.bottleneck;
    if (op.flops_utilization > 0) ops += ", FLOP util " + Percent(op.flops_utilization, 1);
    if (op.hbm_bandwidth_utilization > 0)
      ops += ", HBM BW util " + Percent(op.hbm_bandwidth_utilization, 1);
    ops += ")";
  }
  if (!ops.empty()) ev->push_back("Top operations: " + ops + ".");
}

// Share of the top operations' time (the first kTopOps) spent in collectives: 0.5 or more means
// collectives dominate what the profile shows, whatever the duty cycle.
constexpr size_t kTopOps = 5;

double TopCollectiveShare(const ProfileSummary* p) {
  if (p == nullptr) return 0;
  double coll = 0, all = 0;
  for (size_t i = 0; i < p->top_ops.size() && i < kTopOps; ++i) {
    all += p->top_ops[i].time_fraction;
    if (p->top_ops[i].IsCollective()) coll += p->top_ops[i].time_fraction;
  }
  return all > 0 ? coll / all : 0;
}

// True when the top non-collective operations are limited by memory bandwidth.
bool MemoryBoundTop(const ProfileSummary* p, const ProfileAnalysis& a) {
  if (p == nullptr) return false;
  double mem = 0, compute = 0;
  for (size_t i = 0; i < p->top_ops.size() && i < kTopOps; ++i) {
    const ProfileOp& op = p->top_ops[i];
    if (op.IsCollective()) continue;
    bool hbm = op.bottleneck == "hbm" || op.bottleneck == "vmem" ||
               (op.hbm_bandwidth_utilization >= 0.6 && op.flops_utilization < 0.3);
    (hbm ? mem : compute) += op.time_fraction;
  }
  return mem > compute || a.hbm_bound_fraction >= 0.35;
}

std::string Communication(const ProfileSummary* p, const ProfileAnalysis& a, double top_share) {
  std::string why =
      top_share >= 0.5
          ? "collectives take " + Percent(top_share, 1) + " of the top operations' time (" +
                p->top_ops[0].name + " " + Percent(p->top_ops[0].time_fraction, 1) + ")"
          : "collectives take " + Percent(a.communication_fraction, 1) + " of the step";
  if (p != nullptr && p->device_duty_cycle > 0.9) {
    why += "; the " + Percent(p->device_duty_cycle, 1) +
           " duty cycle counts time spent in collectives, so it does not mean compute-bound";
  }
  return "Communication-bound: " + why + ".";
}

// The bottleneck from the figures, in order of what most constrains the next move:
// a pipeline bubble; collectives dominating the top operations (even at a high duty cycle, and
// ahead of idle time, which then is mostly waiting on peers); HBM capacity pressure with
// memory-bound top operations (even when some collectives exist); an idle device (input); a
// large collective share; capacity alone; memory-bound operations; else compute.
std::string Classify(const AnalysisInput& in, const ProfileAnalysis& a,
                     std::vector<std::string>* ev) {
  const ProfileSummary* p = in.profile;
  const double top_share = TopCollectiveShare(p);
  const int64_t pp = GetInt(in.config, "pp", 1);
  if (a.idle_fraction > 0.10 && pp > 1) {
    ev->push_back("Devices idle " + Percent(a.idle_fraction, 1) + " of the step with pp " +
                  std::to_string(pp) + ": the pipeline bubble.");
    return "pipeline";
  }
  if (top_share >= 0.5) {
    ev->push_back(Communication(p, a, top_share));
    return "communication";
  }
  if (a.hbm_peak_fraction >= 0.90 && MemoryBoundTop(p, a)) {
    ev->push_back("HBM-bound: HBM holds " + Percent(a.hbm_peak_fraction, 1) +
                  " of capacity and the top operations are limited by memory bandwidth (" +
                  Percent(a.hbm_bound_fraction, 1) + " of the step); collectives take only " +
                  Percent(a.communication_fraction, 1) +
                  ", so they are not what to relieve first.");
    return "hbm";
  }
  if (a.idle_fraction > 0.25) {
    ev->push_back("Devices idle " + Percent(a.idle_fraction, 1) +
                  " of the step without a pipeline: waiting on the host (input pipeline, "
                  "dataloader or launch overhead).");
    return "input";
  }
  if (a.communication_fraction >= 0.25) {
    ev->push_back(Communication(p, a, top_share));
    return "communication";
  }
  if (a.hbm_peak_fraction >= 0.90) {
    ev->push_back("HBM peak at " + Percent(a.hbm_peak_fraction, 1) +
                  " of capacity: memory capacity blocks larger batches or lighter "
                  "recomputation.");
    return "memory-capacity";
  }
  if (a.hbm_bound_fraction >= 0.35 || (a.matmul_fraction > 0 && a.matmul_flops_utilization > 0 &&
                                       a.matmul_flops_utilization < 0.35)) {
    ev->push_back("HBM-bound: operations limited by memory bandwidth take " +
                  Percent(a.hbm_bound_fraction, 1) + " of the step (matmul FLOP utilization " +
                  Percent(a.matmul_flops_utilization, 1) + ").");
    return "hbm";
  }
  if (p == nullptr && in.estimate != nullptr && !in.estimate->bottleneck.empty()) {
    ev->push_back("No profile: the performance model's breakdown says " + in.estimate->bottleneck +
                  ".");
    return in.estimate->bottleneck;
  }
  std::string util = a.matmul_flops_utilization > 0
                         ? " at " + Percent(a.matmul_flops_utilization, 1) + " FLOP utilization"
                         : "";
  ev->push_back("Compute-bound: matmul and attention take " + Percent(a.matmul_fraction, 1) +
                " of the step" + util + " and collectives only " +
                Percent(a.communication_fraction, 1) + ".");
  return "compute";
}

// How far the deciding figure is past its threshold, 0..1.
double Clarity(const ProfileAnalysis& a) {
  auto ramp = [](double v, double lo, double hi) {
    return std::clamp((v - lo) / (hi - lo), 0.0, 1.0);
  };
  const std::string& b = a.bottleneck;
  if (b == "communication")
    return std::max(ramp(a.top_collective_share, 0.3, 0.9),
                    ramp(a.communication_fraction, 0.15, 0.5));
  if (b == "hbm")
    return std::max(ramp(a.hbm_peak_fraction, 0.85, 1.0), ramp(a.hbm_bound_fraction, 0.2, 0.6));
  if (b == "memory-capacity") return ramp(a.hbm_peak_fraction, 0.85, 1.0);
  if (b == "pipeline") return ramp(a.idle_fraction, 0.05, 0.35);
  if (b == "input") return ramp(a.idle_fraction, 0.2, 0.6);
  return std::max(ramp(a.matmul_fraction, 0.3, 0.8), ramp(a.matmul_flops_utilization, 0.3, 0.7)) *
         (1 - ramp(a.communication_fraction, 0.05, 0.25));
}

}  // namespace

int64_t MeshProduct(const Config& c) {
  int64_t prod = 1;
  for (const char* k : {"iciData", "iciFsdp", "iciTensor", "iciSequence", "iciExpert"}) {
    prod *= std::max<int64_t>(1, GetInt(c, k, 1));
  }
  return prod;
}

ProfileAnalysis AnalyzeProfile(const AnalysisInput& in) {
  ProfileAnalysis a;
  if (in.profile != nullptr) ReadProfile(*in.profile, &a);
  if (in.estimate != nullptr && in.profile == nullptr) {
    const Estimate& e = *in.estimate;
    const TimeBreakdown& t = e.time;
    double comm = t.tensor_parallel + t.context_parallel + t.pipeline_p2p + t.data_parallel +
                  t.expert_parallel;
    if (e.step_time_seconds > 0) {
      a.communication_fraction = comm / e.step_time_seconds;
      a.all_to_all_fraction = t.expert_parallel / e.step_time_seconds;
      a.idle_fraction = t.pipeline_bubble / e.step_time_seconds;
    }
    if (e.capacity_gib > 0) a.hbm_peak_fraction = e.peak_memory_gib / e.capacity_gib;
  }
  if (in.tpu) {
    a.mesh_product = MeshProduct(in.config);
    a.mesh_mismatch = in.devices > 0 && a.mesh_product != in.devices;
  }
  if (in.profile != nullptr) ProfileEvidence(*in.profile, a, &a.evidence);
  if (a.mesh_mismatch) {
    a.evidence.push_back("The mesh product " + std::to_string(a.mesh_product) + " (ici axes of " +
                         ConfigKey(in.config) + ") does not equal the " +
                         std::to_string(in.devices) +
                         " chips of the current topology: the old mesh no longer fits and must "
                         "be re-factored.");
  }
  a.top_collective_share = TopCollectiveShare(in.profile);
  a.bottleneck = Classify(in, a, &a.evidence);
  a.clarity = Clarity(a);
  return a;
}

nlohmann::json ProfileAnalysis::ToJson() const {
  std::string ev;
  for (const auto& e : evidence) ev += (ev.empty() ? "" : " ") + e;
  return {{"bottleneck", bottleneck},
          {"evidence", ev},
          {"figures",
           {{"communicationFraction", communication_fraction},
            {"idleFraction", idle_fraction},
            {"hbmPeakFraction", hbm_peak_fraction},
            {"matmulFraction", matmul_fraction},
            {"hbmBoundFraction", hbm_bound_fraction},
            {"topCollectiveShare", top_collective_share}}},
          {"unknowns", unknowns}};
}

}  // namespace paratune
