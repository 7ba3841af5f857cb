#include "agents/knowledge/analyzer.h"

#include <cstdio>

namespace paratune {

namespace {

std::string Pct(double f) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f%%", f * 100);
  return buf;
}

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
  if (p.step_time_seconds > 0) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "step time %.3f s", p.step_time_seconds);
    s = buf;
  }
  if (p.device_duty_cycle > 0)
    s += (s.empty() ? "" : ", ") + std::string("device duty cycle ") + Pct(p.device_duty_cycle);
  s += (s.empty() ? "" : ", ") + std::string("collectives ") + Pct(a.communication_fraction) +
       " of step time";
  if (p.hbm_peak_fraction > 0) s += ", HBM peak " + Pct(p.hbm_peak_fraction) + " of capacity";
  ev->push_back("Profile: " + s + ".");
  std::string ops;
  for (size_t i = 0; i < p.top_ops.size() && i < 3; ++i) {
    const ProfileOp& op = p.top_ops[i];
    ops += (i ? "; " : "") + op.name + " (" + op.category + ", " + Pct(op.time_fraction) +
           ", bottleneck " + op.bottleneck;
    if (op.flops_utilization > 0) ops += ", FLOP util " + Pct(op.flops_utilization);
    if (op.hbm_bandwidth_utilization > 0)
      ops += ", HBM BW util " + Pct(op.hbm_bandwidth_utilization);
    ops += ")";
  }
  if (!ops.empty()) ev->push_back("Top operations: " + ops + ".");
}

// The bottleneck from the figures, in order of what most constrains the next move.
std::string Classify(const AnalysisInput& in, const ProfileAnalysis& a,
                     std::vector<std::string>* ev) {
  const ProfileSummary* p = in.profile;
  const bool top_is_collective =
      p != nullptr && !p->top_ops.empty() && p->top_ops[0].IsCollective();
  const int64_t pp = GetInt(in.config, "pp", 1);
  if (a.idle_fraction > 0.10 && pp > 1) {
    ev->push_back("Devices idle " + Pct(a.idle_fraction) + " of the step with pp " +
                  std::to_string(pp) + ": the pipeline bubble.");
    return "pipeline";
  }
  if (a.idle_fraction > 0.25) {
    ev->push_back("Devices idle " + Pct(a.idle_fraction) +
                  " of the step without a pipeline: waiting on the host (input pipeline, "
                  "dataloader or launch overhead).");
    return "input";
  }
  if (top_is_collective || a.communication_fraction >= 0.25) {
    std::string why = top_is_collective
                          ? "the top operation is a collective (" + p->top_ops[0].name + ", " +
                                Pct(p->top_ops[0].time_fraction) + ")"
                          : "collectives take " + Pct(a.communication_fraction) + " of the step";
    if (p != nullptr && p->device_duty_cycle > 0.9) {
      why += "; the " + Pct(p->device_duty_cycle) +
             " duty cycle counts time spent in collectives, so it does not mean compute-bound";
    }
    ev->push_back("Communication-bound: " + why + ".");
    return "communication";
  }
  if (a.hbm_peak_fraction >= 0.90) {
    ev->push_back("HBM peak at " + Pct(a.hbm_peak_fraction) +
                  " of capacity: memory capacity blocks larger batches or lighter "
                  "recomputation.");
    return "memory-capacity";
  }
  if (a.hbm_bound_fraction >= 0.35 || (a.matmul_fraction > 0 && a.matmul_flops_utilization > 0 &&
                                       a.matmul_flops_utilization < 0.35)) {
    ev->push_back("HBM-bound: operations limited by memory bandwidth take " +
                  Pct(a.hbm_bound_fraction) + " of the step (matmul FLOP utilization " +
                  Pct(a.matmul_flops_utilization) + ").");
    return "hbm";
  }
  if (p == nullptr && in.estimate != nullptr && !in.estimate->bottleneck.empty()) {
    ev->push_back("No profile: the performance model's breakdown says " + in.estimate->bottleneck +
                  ".");
    return in.estimate->bottleneck;
  }
  ev->push_back("Compute-bound: matmul and attention take " + Pct(a.matmul_fraction) +
                " of the step and collectives only " + Pct(a.communication_fraction) + ".");
  return "compute";
}

}  // namespace

int64_t MeshProduct(const Config& c) {
  int64_t prod = 1;
  for (const char* k : {"iciData", "iciFsdp", "iciTensor", "iciSequence", "iciExpert"}) {
    prod *= std::max<int64_t>(1, GetInt(c, k, 1));
  }
  return prod;
}

ProfileAnalysis Analyze(const AnalysisInput& in) {
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
  a.bottleneck = Classify(in, a, &a.evidence);
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
            {"hbmBoundFraction", hbm_bound_fraction}}}};
}

}  // namespace paratune
