// The simulated cluster (make bench): cost of one simulated trial, the observed fault rate, and
// how far the hidden reality sits from the model: over the sample campaign's search space and 10
// seeds, the model's top pick's true objective relative to the true optimum. Prints Markdown.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"
#include "agents/sim/simulated_cluster.h"

namespace {

using paratune::Config;

std::vector<Config> Product(const paratune::CampaignSpec& spec) {
  std::vector<Config> out{{}};
  for (const auto& p : spec.search_space) {
    std::vector<Config> next;
    for (const auto& c : out) {
      for (const auto& v : p.values) {
        Config n = c;
        n[p.name] = v;
        next.push_back(n);
      }
    }
    out = std::move(next);
  }
  return out;
}

}  // namespace

int main() {
  const std::string path =
      std::string(PARATUNE_SOURCE_DIR) + "/manifests/samples/llama3-8b-h100x8.yaml";
  auto spec = paratune::LoadCampaignFile(path);
  if (!spec.ok()) {
    std::fprintf(stderr, "%s\n", spec.status().ToString().c_str());
    return 1;
  }
  auto w = paratune::ResolveWorkload(*spec);
  if (!w.ok()) return 1;
  const std::vector<Config> configs = Product(*spec);
  std::printf("## Simulated cluster (agents/sim)\n\n");
  // Cost per trial and fault rate.
  paratune::SimOptions opt;
  const int kTrials = 10000;
  int faults = 0, ok = 0;
  auto a = std::chrono::steady_clock::now();
  for (int i = 0; i < kTrials; ++i) {
    auto r = paratune::RunSimulatedTrial(*w, configs[i % configs.size()], opt, i / 100);
    ok += r.exit_code == 0;
    faults +=
        r.true_failure_category == "CollectiveTimeout" || r.true_failure_category == "NodeFault";
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
  std::printf("| measure | value |\n|---|---|\n");
  std::printf("| one simulated trial (log built, no sleeping) | %.1f us |\n", secs / kTrials * 1e6);
  std::printf("| trials that succeeded (sample search space, %zu configs) | %.1f%% |\n",
              configs.size(), 100.0 * ok / kTrials);
  std::printf("| infrastructure faults among runnable trials (rate 2%%) | %.2f%% |\n\n",
              ok + faults > 0 ? 100.0 * faults / (ok + faults) : 0.0);
  // Model pick vs true optimum over seeds.
  std::printf("Model vs hidden reality on %s (%zu configurations), MFU objective:\n\n",
              spec->name.c_str(), configs.size());
  std::printf(
      "| seed | true optimum MFU | model's pick, true MFU | gap | model-feasible but OOM "
      "in reality |\n|---|---|---|---|---|\n");
  double gap_sum = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    opt.seed = seed;
    double best_true = 0, pick_est = -1, pick_true = 0;
    int false_fits = 0;
    for (const auto& c : configs) {
      const paratune::SimTruth t = paratune::TrueOutcome(*w, c, opt);
      const paratune::Estimate e = paratune::EstimateConfig(*w, c);
      if (t.ok) best_true = std::max(best_true, t.metrics.mfu);
      if (e.fits && !t.ok) ++false_fits;
      if (e.fits && e.mfu > pick_est) {
        pick_est = e.mfu;
        pick_true = t.ok ? t.metrics.mfu : 0;
      }
    }
    const double gap = best_true > 0 ? (best_true - pick_true) / best_true * 100 : 0;
    gap_sum += gap;
    std::printf("| %llu | %.3f | %.3f | %.1f%% | %d |\n", static_cast<unsigned long long>(seed),
                best_true, pick_true, gap, false_fits);
  }
  std::printf(
      "\nMean gap between the model's first choice and the true optimum: %.1f%% (what "
      "the agents' trials and calibration have to close).\n",
      gap_sum / 10);
  return 0;
}
