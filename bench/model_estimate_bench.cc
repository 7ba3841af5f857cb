// Speed and accuracy of the performance model (make bench): one EstimateConfig (target < 5 us),
// a 100,000-configuration sweep on one core (target < 0.5 s), and the error against published
// measurements (Megatron-LM SC'21 Table 1, MaxText README MFU table). Prints Markdown.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "agents/model/perf_model.h"
#include "testing/eval/published.h"

namespace {

using paratune::Config;
using paratune::ParamValue;
using Clock = std::chrono::steady_clock;

paratune::Workload Llama8b() {
  paratune::Workload w;
  w.model = *paratune::FindModelPreset("llama3-8b");
  w.training.seq_length = 8192;
  w.training.global_batch_size = 512;
  w.hardware.nodes = 4;
  w.hardware.devices_per_node = 8;
  w.accel = paratune::FindAccelerator("nvidia-h100-80gb");
  w.devices = 32;
  return w;
}

std::vector<Config> SweepConfigs() {
  std::vector<Config> out;
  const char* recompute[] = {"none", "selective", "full"};
  for (int64_t tp : {1, 2, 4, 8})
    for (int64_t pp : {1, 2, 4, 8})
      for (int64_t mbs : {1, 2, 4})
        for (const char* r : recompute)
          for (int64_t vpp : {1, 2})
            for (bool dist : {false, true})
              for (bool overlap : {false, true})
                for (bool sp : {false, true}) {
                  out.push_back({{"tp", ParamValue::Int(tp)},
                                 {"pp", ParamValue::Int(pp)},
                                 {"vpp", ParamValue::Int(vpp)},
                                 {"mbs", ParamValue::Int(mbs)},
                                 {"recompute", ParamValue::Enum(r)},
                                 {"distributedOptimizer", ParamValue::Bool(dist)},
                                 {"overlapGradReduce", ParamValue::Bool(overlap)},
                                 {"sequenceParallel", ParamValue::Bool(sp)}});
                }
  return out;
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

void PrintSpeed() {
  const paratune::Workload w = Llama8b();
  const std::vector<Config> configs = SweepConfigs();
  volatile double sink = 0;
  // Single estimate: median of 2000 repetitions of one typical config.
  const Config one = configs[configs.size() / 3];
  std::vector<double> ns;
  for (int i = 0; i < 2000; ++i) {
    auto a = Clock::now();
    sink = sink + paratune::EstimateConfig(w, one).mfu;
    ns.push_back(Seconds(a, Clock::now()) * 1e9);
  }
  std::sort(ns.begin(), ns.end());
  // Sweep: 100,000 estimates cycling through the search space, one thread.
  const int kSweep = 100000;
  int fits = 0;
  auto a = Clock::now();
  for (int i = 0; i < kSweep; ++i) {
    const paratune::Estimate e = paratune::EstimateConfig(w, configs[i % configs.size()]);
    fits += e.fits;
    sink = sink + e.mfu;
  }
  const double sweep = Seconds(a, Clock::now());
  std::printf("### Speed (Llama 3 8B on 32 x H100, one core)\n\n");
  std::printf("| measure | value | target |\n|---|---|---|\n");
  std::printf("| one EstimateConfig, median | %.2f us | < 5 us |\n", ns[ns.size() / 2] / 1e3);
  std::printf("| one EstimateConfig, p99 | %.2f us | |\n", ns[ns.size() * 99 / 100] / 1e3);
  std::printf("| sweep of %d configurations (%zu distinct, %d fit) | %.3f s | < 0.5 s |\n\n",
              kSweep, configs.size(), fits, sweep);
}

void PrintTable(const paratune::PublishedTable& t, const char* unit) {
  const paratune::TableError err = paratune::EvaluateTable(t, paratune::ModelConstants::Defaults());
  std::printf("### %s\n\nSource: %s.\n\n", t.name.c_str(), t.source.c_str());
  std::printf("| case | published %s | predicted | error |\n|---|---|---|---|\n", unit);
  for (size_t i = 0; i < t.cases.size(); ++i) {
    const double p = err.predicted[i], pub = t.cases[i].published;
    std::printf("| %s | %.1f | %.1f | %+.1f%% |\n", t.cases[i].label.c_str(), pub, p,
                (p - pub) / pub * 100);
  }
  std::printf("\nMean absolute error %.1f%%, max %.1f%%.\n\n", err.mean_abs_pct, err.max_abs_pct);
}

}  // namespace

int main() {
  std::printf("## Performance model (agents/model)\n\n");
  PrintSpeed();
  PrintTable(paratune::Sc21Table1(), "TFLOP/s/GPU");
  PrintTable(paratune::MaxTextMfuTable(), "MFU %");
  return 0;
}
