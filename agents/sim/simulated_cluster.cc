#include "agents/sim/simulated_cluster.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "agents/model/parallel_plan.h"
#include "agents/sim/framework_log.h"
#include "agents/sim/reality.h"

namespace paratune {

namespace {

// The hidden reality of `opt` (perturbed by default, structural with --reality structural).
sim::Reality RealityOf(const SimOptions& opt) {
  return opt.structural_reality ? *sim::RealityFor(opt.seed, "structural")
                                : sim::RealityForSeed(opt.seed);
}

using sim::Rng;

// What the faults on the trial's nodes do to this run (all neutral when there are none). Drawn
// from its own generator so that a faulted run sees the same noise as the healthy one.
struct FaultPlan {
  // Noise-free step times with the faults folded into the reality's decomposition (see
  // PlanFaults): `base_step` with the slow link only (what the first interval shows),
  // `full_step` with a throttled GPU at its final clock too. 0 = healthy.
  double base_step = 0, full_step = 0;
  bool fails = false;  // a flaky node kills the run at iteration `fail_at`
  bool xid = false;    // ... with Xid 79 (else an NCCL watchdog timeout)
  int64_t fail_at = 0;
  int fail_rank = 0, fail_local_rank = 0;
  std::vector<double> spikes;  // per logged line: step-time factor (1 = none); empty = none
  std::string played;
};

struct Run {
  const Workload& w;
  const ParallelPlan& p;
  const sim::RealOutcome& real;
  const SimOptions& opt;
  Rng rng;
  double now;
  SimTrialResult result;
  FaultPlan faults;
};

void FailOom(Run* r) {
  const sim::RealOutcome& o = r->real;
  r->result.exit_code = 1;
  if (r->w.IsTpu()) {
    r->result.true_failure_category = "TpuResourceExhausted";
    r->result.log += sim::XlaOomLog(o.peak_gib, o.capacity_gib, 0.75 * o.static_gib);
    return;
  }
  r->result.true_failure_category = "CudaOOM";
  const ModelShape& m = r->w.model;
  double tried = 0;
  if (o.oom_at_setup) {
    tried = std::max(0.5, o.estimate.memory.gradients_gib);
  } else {
    // An MLP activation of one micro-batch: s x b x ffn (x2 for SwiGLU) bf16, sharded by tp.
    tried = static_cast<double>(r->w.training.seq_length) / static_cast<double>(r->p.cp) *
            static_cast<double>(r->p.micro_batch) * static_cast<double>(m.ffn_hidden_size) *
            (m.swiglu ? 4.0 : 2.0) / static_cast<double>(r->p.tp) / (1024.0 * 1024 * 1024);
    tried = std::max(0.02, tried);
  }
  const double free_gib = r->rng.Uniform(0.02, std::min(0.9 * tried, 1.6));
  const double reserved = r->rng.Uniform(0.2, 2.4);
  r->result.log += sim::CudaOomLog(r->w, o.oom_at_setup, tried, o.capacity_gib, free_gib, reserved);
}

void Fault(Run* r, int64_t iteration) {
  r->result.exit_code = 1;
  const int rank = static_cast<int>(r->rng.Next() % static_cast<uint64_t>(r->w.devices));
  if (r->w.IsTpu()) {
    r->result.true_failure_category = "NodeFault";
    r->result.log += sim::TpuSliceFailureLog(r->w, r->now, rank);
    return;
  }
  if (r->rng.Uniform() < 0.6) {
    r->result.true_failure_category = "CollectiveTimeout";
    r->now += 600;  // the watchdog waits out its 10 minute timeout
    r->result.log += sim::NcclTimeoutLog(r->w, r->now, 40 * iteration + 17, rank);
  } else {
    r->result.true_failure_category = "NodeFault";
    r->result.log += sim::EccErrorLog(r->w, r->now, rank);
  }
}

// The noise-free step time of logged line `line` (iteration `since_first` after the first logged
// one, of `total`): the healthy step with no fault; with a throttled GPU the slowdown ramps in
// linearly from the first logged interval to its full effect at 30% of the run (the GPU heats
// up and its clock steps down, so the log shows upward drift); a flaky node's spikes multiply it.
double StepAt(const FaultPlan& f, const sim::RealOutcome& o, int64_t since_first, int64_t total,
              size_t line) {
  if (f.full_step <= 0 && f.spikes.empty()) return o.step_time_seconds;
  double step = o.step_time_seconds;
  if (f.full_step > 0) {
    const double ramp =
        std::min(1.0, static_cast<double>(since_first) / (0.3 * static_cast<double>(total)));
    step = f.base_step + ramp * (f.full_step - f.base_step);
  }
  if (line < f.spikes.size()) step *= f.spikes[line];
  return step;
}

// Logged iterations until `stop_at` (exclusive; -1: all). Returns the measured metrics.
TrialMetrics Train(Run* r, int64_t stop_at) {
  const sim::RealOutcome& o = r->real;
  const bool tpu = r->w.IsTpu();
  const int64_t interval = tpu ? 1 : std::max<int64_t>(1, r->opt.log_interval);
  const int64_t total = tpu ? std::max<int64_t>(2, r->opt.train_iters / 10)
                            : std::max<int64_t>(interval, r->opt.train_iters);
  const double v = static_cast<double>(r->w.model.vocab_size);
  double sum_step = 0;
  int64_t measured = 0;
  size_t line = 0;
  for (int64_t it = tpu ? 0 : interval; tpu ? it < total : it <= total; it += interval, ++line) {
    if (stop_at >= 0 && it >= stop_at) break;
    double step = StepAt(r->faults, o, it - (tpu ? 0 : interval), total, line) *
                  (1.0 + r->opt.noise * r->rng.Normal());
    const bool warmup = tpu ? it == 0 : it == interval;
    if (warmup) step *= tpu ? 1.0 + r->rng.Uniform(8.0, 20.0) / o.step_time_seconds : 1.06;
    r->now += step * static_cast<double>(interval);
    sim::IterationStats s;
    s.iteration = it;
    s.total = total;
    s.unix_seconds = r->now;
    s.step_seconds = step;
    s.model_tflops = o.metrics.tflops_per_device * o.step_time_seconds / step;
    s.tokens_per_second = o.metrics.tokens_per_second_per_device * o.step_time_seconds / step;
    s.mfu = o.metrics.mfu * o.step_time_seconds / step;
    s.loss = 4.2 + (std::log(v) - 4.2) * std::exp(-static_cast<double>(it) / 60.0) +
             0.02 * r->rng.Normal();
    s.grad_norm = 0.6 + 2.0 * std::exp(-static_cast<double>(it) / 30.0) + 0.05 * r->rng.Uniform();
    s.memory_gib = o.peak_gib;
    s.capacity_gib = o.capacity_gib;
    r->result.log += sim::IterationLine(r->w, r->p, s);
    r->result.step_times.push_back(step);
    if (warmup) {
      r->result.log += sim::MemoryLine(r->w, it, o.metrics.avg_memory_gib, o.peak_gib,
                                       o.peak_gib + 0.4, 0.75 * o.static_gib);
    } else {
      sum_step += step;
      ++measured;
    }
  }
  TrialMetrics m = o.metrics;
  if (measured > 0) {
    const double mean = sum_step / static_cast<double>(measured);
    const double ratio = o.step_time_seconds / mean;
    m.step_time_seconds = mean;
    m.mfu *= ratio;
    m.tflops_per_device *= ratio;
    m.tokens_per_second_per_device *= ratio;
  }
  return m;
}

// Logged progress lines of a full run (as Train logs them).
int64_t LoggedLines(const Workload& w, const SimOptions& opt) {
  if (w.IsTpu()) return std::max<int64_t>(2, opt.train_iters / 10);
  const int64_t interval = std::max<int64_t>(1, opt.log_interval);
  return std::max<int64_t>(interval, opt.train_iters) / interval;
}

// A flaky node's draw for this attempt: it fails the run with probability `severity`, else a
// few logged intervals (not the warm-up) run 2-4x slower (retransmits, ECC replays, a hung
// rank recovering). Deterministic from (seed, config, attempt, node).
void PlayFlaky(const Workload& w, const SimOptions& opt, const NodeFault& nf, uint64_t h,
               FaultPlan* f) {
  Rng fr(sim::HashCombine(h, sim::HashString("flaky/" + nf.node)));
  const std::string entry = FormatNodeFaults({nf});
  if (!f->fails && fr.Uniform() < nf.severity) {
    const int64_t iters = w.IsTpu() ? std::max<int64_t>(2, opt.train_iters / 10) : opt.train_iters;
    const int64_t dpn = std::max<int64_t>(1, std::min(w.DevicesPerNode(), w.devices));
    const auto node_index = static_cast<int64_t>(
        std::find(opt.nodes.begin(), opt.nodes.end(), nf.node) - opt.nodes.begin());
    f->fails = true;
    f->fail_at = 1 + static_cast<int64_t>(fr.Next() % static_cast<uint64_t>(iters));
    f->fail_local_rank = static_cast<int>(fr.Next() % static_cast<uint64_t>(dpn));
    f->fail_rank = static_cast<int>(std::min<int64_t>(node_index * dpn + f->fail_local_rank,
                                                      std::max<int64_t>(1, w.devices) - 1));
    f->xid = fr.Uniform() < 0.5;
    f->played += (f->played.empty() ? "" : ";") + entry + " failed";
    return;
  }
  const int64_t lines = LoggedLines(w, opt);
  if (lines >= 2) {
    f->spikes.resize(static_cast<size_t>(lines), 1.0);
    const int n = 2 + static_cast<int>(fr.Next() % 2);
    for (int i = 0; i < n; ++i) {
      const auto line = 1 + fr.Next() % static_cast<uint64_t>(lines - 1);
      f->spikes[line] = fr.Uniform(2.0, 4.0);
    }
  }
  f->played += (f->played.empty() ? "" : ";") + entry + " spikes";
}

// The faults of the trial's nodes, turned into what this run sees.
//  - throttle s: one device runs at s of its clock. Data-, tensor- and pipeline-parallel training
//    is synchronous: every collective (TP all-reduce per layer, DP gradient reduce per step, PP
//    send/recv per micro-batch) waits for the slowest rank, so the whole job computes at the
//    throttled device's pace: every kernel's FLOP/s scales by s (compute time ~ 1/s; HBM-bound
//    elementwise work and launch overheads do not change) and the gradient reduce now hides
//    behind the slower backward. Evaluated by re-running the reality with compute x s. Thermal
//    throttling sets in as the GPU heats: the slowdown ramps in (StepAt).
//  - slow-link s: the node's NIC carries s of its bandwidth; ring collectives run at the pace of
//    their slowest link, so every collective that crosses nodes (the model's scale-out
//    bandwidth) takes 1/s as long; NVLink/ICI inside a node are untouched, so single-node runs
//    are unaffected. Evaluated with scale-out bandwidth x s.
//  - flaky p: PlayFlaky.
// Several faults of a kind: the worst one paces the job.
FaultPlan PlanFaults(const Workload& w, const ParallelPlan& p, const sim::Reality& reality,
                     const sim::RealOutcome& real, const SimOptions& opt, uint64_t h) {
  FaultPlan f;
  if (opt.nodes.empty() || opt.node_faults.empty()) return f;
  sim::Degradation link, full;
  const bool multi_node = w.devices > w.DevicesPerNode();
  for (const NodeFault& nf : FaultsOn(opt.node_faults, opt.nodes)) {
    if (nf.kind == NodeFaultKind::kFlaky) {
      PlayFlaky(w, opt, nf, h, &f);
      continue;
    }
    if (nf.kind == NodeFaultKind::kSlowLink && !multi_node) continue;  // no effect to play
    if (nf.kind == NodeFaultKind::kThrottle) full.compute = std::min(full.compute, nf.severity);
    if (nf.kind == NodeFaultKind::kSlowLink) {
      link.scale_out = std::min(link.scale_out, nf.severity);
      full.scale_out = link.scale_out;
    }
    f.played += (f.played.empty() ? "" : ";") + FormatNodeFaults({nf});
  }
  if (!full.healthy()) {
    f.base_step = link.healthy() ? real.step_time_seconds
                                 : sim::EvaluateReality(w, p, reality, link).step_time_seconds;
    f.full_step = sim::EvaluateReality(w, p, reality, full).step_time_seconds;
  }
  return f;
}

// The run dies of the flaky node: Xid 79 and the CUDA error on its rank, or the NCCL watchdog
// of a rank stuck in a gradient all-reduce with it (TPU: the chip's driver fails and the
// slice with it).
void FlakyFail(Run* r) {
  const FaultPlan& f = r->faults;
  r->result.exit_code = 1;
  if (r->w.IsTpu()) {
    r->result.true_failure_category = "NodeFault";
    r->result.log += sim::TpuSliceFailureLog(r->w, r->now, f.fail_rank);
  } else if (f.xid) {
    r->result.true_failure_category = "NodeFault";
    r->now += 3;
    r->result.log += sim::XidFallenOffBusLog(r->w, f.fail_rank, f.fail_local_rank);
  } else {
    r->result.true_failure_category = "CollectiveTimeout";
    r->now += 600;  // the watchdog waits out its 10 minute timeout
    r->result.log += sim::NcclAllreduceTimeoutLog(r->now, 40 * f.fail_at + 23, f.fail_rank);
  }
}

// A run that fits: trains to the end (success) or dies of an infrastructure fault or a flaky
// node. The infrastructure draw comes first, as it always has, so that runs without node faults
// are unchanged.
void PlayRun(Run* r, const sim::Reality& reality, uint64_t h) {
  const Workload& w = r->w;
  r->faults = PlanFaults(w, r->p, reality, r->real, r->opt, h);
  r->result.fault_played = r->faults.played;
  const bool infra = r->rng.Uniform() < r->opt.infra_fault_rate;
  if (r->faults.fails) {
    Train(r, r->faults.fail_at);
    FlakyFail(r);
  } else if (infra) {
    const int64_t iters =
        w.IsTpu() ? std::max<int64_t>(2, r->opt.train_iters / 10) : r->opt.train_iters;
    const int64_t at = 1 + static_cast<int64_t>(r->rng.Next() % static_cast<uint64_t>(iters));
    Train(r, at);
    Fault(r, at);
  } else {
    r->result.metrics = Train(r, -1);
    r->result.termination_message = nlohmann::json{{"metrics", r->result.metrics.ToJson()}}.dump();
  }
}

}  // namespace

SimTrialResult RunSimulatedTrial(const Workload& w, const Config& c, const SimOptions& opt,
                                 int64_t attempt) {
  const ParallelPlan p = PlanFromConfig(w, c);
  const sim::Reality reality = RealityOf(opt);
  const sim::RealOutcome real = sim::EvaluateReality(w, p, reality);
  uint64_t h = sim::HashCombine(opt.seed, sim::HashString(ConfigKey(PlanToConfig(w, p))));
  h = sim::HashCombine(h, static_cast<uint64_t>(attempt));
  Run r{w, p, real, opt, Rng(h), opt.start_unix_seconds, {}, {}};
  r.result.log = sim::StartupLog(w, p, r.now, opt.train_iters);
  r.now += 45;  // initialization, model build, data loaders
  if (real.invalid) {
    r.result.exit_code = 1;
    r.result.true_failure_category = "InvalidParallelism";
    r.result.log += sim::ConfigErrorLog(w, real.violation.framework_error);
  } else if (real.oom) {
    FailOom(&r);
  } else {
    PlayRun(&r, reality, h);
  }
  r.result.simulated_seconds = r.now - opt.start_unix_seconds;
  return r.result;
}

SimTruth TrueOutcome(const Workload& w, const Config& c, const SimOptions& opt) {
  const sim::RealOutcome real = sim::EvaluateReality(w, PlanFromConfig(w, c), RealityOf(opt));
  SimTruth t;
  if (real.invalid) {
    t.failure = "InvalidParallelism: " + real.violation.sentence;
  } else if (real.oom) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s: needs %.1f GiB of %.2f GiB",
                  w.IsTpu() ? "TpuResourceExhausted" : "CudaOOM", real.peak_gib, real.capacity_gib);
    t.failure = buf;
  } else {
    t.ok = true;
    t.metrics = real.metrics;
  }
  return t;
}

}  // namespace paratune
