#include "agents/sim/simulated_cluster.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "agents/model/parallel_plan.h"
#include "agents/sim/framework_log.h"
#include "agents/sim/reality.h"

namespace paratune {

namespace {

using sim::Rng;

struct Run {
  const Workload& w;
  const ParallelPlan& p;
  const sim::RealOutcome& real;
  const SimOptions& opt;
  Rng rng;
  double now;
  SimTrialResult result;
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
            static_cast<double>(r->p.mbs) * static_cast<double>(m.ffn_hidden_size) *
            (m.swiglu ? 4.0 : 2.0) / static_cast<double>(r->p.tp) / (1024.0 * 1024 * 1024);
    tried = std::max(0.02, tried);
  }
  const double free_gib = r->rng.Uniform(0.02, std::min(0.9 * tried, 1.6));
  const double reserved = r->rng.Uniform(0.2, 2.4);
  r->result.log += sim::CudaOomLog(r->w, o.oom_at_setup, tried, o.capacity_gib, free_gib, reserved);
}

void Fault(Run* r, int64_t iteration) {
  r->result.exit_code = 1;
  if (r->w.IsTpu()) {
    r->result.true_failure_category = "NodeFault";
    r->result.log += sim::TpuHaltLog();
    return;
  }
  const int rank = static_cast<int>(r->rng.Next() % static_cast<uint64_t>(r->w.devices));
  if (r->rng.Uniform() < 0.6) {
    r->result.true_failure_category = "CollectiveTimeout";
    r->now += 600;  // the watchdog waits out its 10 minute timeout
    r->result.log += sim::NcclTimeoutLog(r->w, r->now, 40 * iteration + 17, rank);
  } else {
    r->result.true_failure_category = "NodeFault";
    r->result.log += sim::EccErrorLog(r->w, r->now, rank);
  }
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
  for (int64_t it = tpu ? 0 : interval; tpu ? it < total : it <= total; it += interval) {
    if (stop_at >= 0 && it >= stop_at) break;
    double step = o.step_time_seconds * (1.0 + r->opt.noise * r->rng.Normal());
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

}  // namespace

SimTrialResult RunSimulatedTrial(const Workload& w, const Config& c, const SimOptions& opt,
                                 int64_t attempt) {
  const ParallelPlan p = PlanFromConfig(w, c);
  const sim::Reality reality = sim::RealityForSeed(opt.seed);
  const sim::RealOutcome real = sim::EvaluateReality(w, p, reality);
  uint64_t h = sim::HashCombine(opt.seed, sim::HashString(ConfigKey(PlanToConfig(w, p))));
  h = sim::HashCombine(h, static_cast<uint64_t>(attempt));
  Run r{w, p, real, opt, Rng(h), opt.start_unix_seconds, {}};
  r.result.log = sim::StartupLog(w, p, r.now);
  r.now += 45;  // initialization, model build, data loaders
  if (real.invalid) {
    r.result.exit_code = 1;
    r.result.true_failure_category = "InvalidParallelism";
    r.result.log += sim::ConfigErrorLog(w, real.violation.framework_error);
  } else if (real.oom) {
    FailOom(&r);
  } else if (r.rng.Uniform() < opt.infra_fault_rate) {
    const int64_t iters = w.IsTpu() ? std::max<int64_t>(2, opt.train_iters / 10) : opt.train_iters;
    const int64_t at = 1 + static_cast<int64_t>(r.rng.Next() % static_cast<uint64_t>(iters));
    Train(&r, at);
    Fault(&r, at);
  } else {
    r.result.metrics = Train(&r, -1);
    r.result.termination_message = nlohmann::json{{"metrics", r.result.metrics.ToJson()}}.dump();
  }
  r.result.simulated_seconds = r.now - opt.start_unix_seconds;
  return r.result;
}

SimTruth TrueOutcome(const Workload& w, const Config& c, const SimOptions& opt) {
  const sim::RealOutcome real =
      sim::EvaluateReality(w, PlanFromConfig(w, c), sim::RealityForSeed(opt.seed));
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
