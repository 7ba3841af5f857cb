// The planning step of one campaign reconcile (issue 17, item 3): TuningSession::Create (the
// model, the evaluated search space, the calibration fit) and ProposeNext for the campaign's
// parallel trials, built per reconcile as before PlanningCache and from the cache as the
// operator now plans. For every campaign of manifests/samples (LLM engines run as builtin) and
// a 4,608-point Megatron-LM space, before any trial and after six (the simulated cluster's
// outcomes); then what one cache holds for a sweep of 1,000 campaigns. Median of repeated runs
// on one core. Prints Markdown; exit 1 only when it could not measure.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/predict/planning_cache.h"
#include "agents/session/tuning_session.h"
#include "agents/sim_campaign/sim_runner.h"
#include "agents/sim_campaign/simulation.h"
#include "agents/trials/failure_analyzer.h"
#include "agents/trials/knowledge_failure_analyzer.h"

namespace paratune {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Case {
  std::string name;
  CampaignSpec spec;
};

double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Resident set size of this process (/proc/self/statm), KiB.
double ResidentKiB() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  long pages = 0, resident = 0;
  const int n = std::fscanf(f, "%ld %ld", &pages, &resident);
  std::fclose(f);
  return n == 2
             ? static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1024.0
             : 0;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// The pool after `trials` trials of the built-in loop against the simulated cluster.
Result<MessagePool> PoolAfter(const CampaignSpec& spec, int trials) {
  MessagePool pool;
  if (trials == 0) return pool;
  auto runner = MakeSimulatedClusterRunner(spec, 7);
  if (!runner.ok()) return runner.status();
  SessionDeps deps;
  auto session = TuningSession::Create(spec, &pool, std::move(deps));
  if (!session.ok()) return session.status();
  int done = 0;
  while (done < trials) {
    auto plans = (*session)->ProposeNext(1);
    if (!plans.ok()) return plans.status();
    if (plans->empty()) break;
    for (const auto& p : *plans) {
      PARATUNE_RETURN_IF_ERROR((*session)->RecordOutcome((*runner)->Run(p, 0)));
      ++done;
    }
  }
  return pool;
}

// The operator's one failure analyzer (the knowledge base, loaded once at start-up and handed
// to every reconcile: controllers/campaign_reconciler.cc), so that a plan here costs what it
// costs there.
const std::shared_ptr<const FailureAnalyzer>& OperatorAnalyzer() {
  static const std::shared_ptr<const FailureAnalyzer> analyzer = MakeEmbeddedFailureAnalyzer();
  return analyzer;
}

// One reconcile's planning on a copy of `pool`: ms, or -1 when it failed.
double PlanOnce(const CampaignSpec& spec, const MessagePool& pool, PlanningCache* cache) {
  MessagePool copy = pool;
  const auto start = Clock::now();
  SessionDeps deps;
  deps.diagnostician = OperatorAnalyzer();
  if (cache != nullptr) {
    auto planned = cache->Get(spec, deps.options.max_space_points);
    if (!planned.ok()) return -1;
    deps.model = planned->model;
    deps.space = planned->space;
  }
  auto session = TuningSession::Create(spec, &copy, std::move(deps));
  if (!session.ok()) return -1;
  auto plans = (*session)->ProposeNext(static_cast<int>(spec.budget.parallel_trials));
  if (!plans.ok()) return -1;
  return Ms(start, Clock::now());
}

std::vector<Case> Cases(const fs::path& samples) {
  std::vector<Case> out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(samples)) {
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    auto spec = LoadCampaignFile(f.string());
    if (!spec.ok()) continue;  // not a campaign (the API key Secret)
    spec->agents.engine = "builtin";
    out.push_back({f.filename().string(), std::move(*spec)});
  }
  auto big = CampaignFromYaml(R"(
metadata: {name: llama3-8b-h100x32-wide}
spec:
  model: {preset: llama3-8b}
  training: {framework: megatron-lm, seqLength: 8192, globalBatchSize: 512}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 4, devicesPerNode: 8}
  searchSpace:
    parameters:
    - {name: tp, values: [1, 2, 4, 8]}
    - {name: pp, values: [1, 2, 4, 8]}
    - {name: vpp, values: [1, 2]}
    - {name: cp, values: [1, 2]}
    - {name: mbs, values: [1, 2, 4]}
    - {name: recompute, values: [none, selective, full]}
    - {name: sequenceParallel, values: [true, false]}
    - {name: distributedOptimizer, values: [true, false]}
    - {name: overlapGradReduce, values: [true, false]}
  objective: {metric: mfu}
  budget: {maxTrials: 12, parallelTrials: 2}
)");
  if (big.ok()) out.push_back({"(4,608-point Megatron-LM space, 32 x H100)", std::move(*big)});
  return out;
}

int Run(int argc, char** argv) {
  const fs::path samples = argc > 1 ? argv[1] : "manifests/samples";
  const std::vector<Case> cases = Cases(samples);
  if (cases.empty()) {
    std::fprintf(stderr, "no campaign in %s\n", samples.string().c_str());
    return 1;
  }
  std::printf("## Planning per campaign reconcile (loop_planning_bench)\n\n");
  std::printf(
      "One campaign reconcile's planning on one core: `TuningSession::Create` (performance "
      "model, search space evaluated point by point, calibration fit) and `ProposeNext` for the "
      "campaign's parallel trials. *Built*: the model and space built in the reconcile (the "
      "operator before PlanningCache); *cached*: from the operator's PlanningCache. Median of "
      "15 runs; *after 6*: the pool after six trials of the built-in loop on the simulated "
      "cluster.\n\n");
  std::printf(
      "| campaign | points (valid) | space KiB | built, first round | cached, first round | "
      "built, after 6 | cached, after 6 |\n|---|---:|---:|---:|---:|---:|---:|\n");
  bool failed = false;
  for (const auto& c : cases) {
    PlanningCache cache;
    auto planned = cache.Get(c.spec, SessionOptions{}.max_space_points);
    if (!planned.ok()) {
      std::fprintf(stderr, "%s: %s\n", c.name.c_str(), planned.status().ToString().c_str());
      failed = true;
      continue;
    }
    std::printf("| %s | %zu (%zu) | %.0f |", c.name.c_str(), planned->space->points().size(),
                planned->space->valid().size(),
                static_cast<double>(planned->space->ApproximateBytes()) / 1024.0);
    for (int trials : {0, 6}) {
      auto pool = PoolAfter(c.spec, trials);
      if (!pool.ok()) {
        std::fprintf(stderr, "%s: %s\n", c.name.c_str(), pool.status().ToString().c_str());
        failed = true;
        std::printf(" - | - |");
        continue;
      }
      std::vector<double> built, cached;
      for (int i = 0; i < 15; ++i) {
        built.push_back(PlanOnce(c.spec, *pool, nullptr));
        cached.push_back(PlanOnce(c.spec, *pool, &cache));
      }
      if (*std::min_element(built.begin(), built.end()) < 0 ||
          *std::min_element(cached.begin(), cached.end()) < 0) {
        std::fprintf(stderr, "%s: planning failed\n", c.name.c_str());
        failed = true;
      }
      std::printf(" %.2f ms | %.2f ms |", Median(built), Median(cached));
    }
    std::printf("\n");
  }
  // What an index really costs: the process's resident memory before and after holding 20.
  {
    const Case& big = cases.front();
    const double before = ResidentKiB();
    std::vector<PlannedSpace> held;
    size_t approximate = 0;
    for (int i = 0; i < 20; ++i) {
      auto planned = BuildPlannedSpace(big.spec, SessionOptions{}.max_space_points);
      if (!planned.ok()) return 1;
      approximate += planned->space->ApproximateBytes();
      held.push_back(std::move(*planned));
    }
    const double grown = ResidentKiB() - before;
    std::printf(
        "\nResident memory an index of `%s` holds, measured: %.0f KiB each (20 held; "
        "`ApproximateBytes`, what the cache budgets by: %.0f KiB). The operator's cache keeps "
        "at most %zu MiB of them.\n",
        big.name.c_str(), grown / 20.0, static_cast<double>(approximate) / 20.0 / 1024.0,
        PlanningCache::kDefaultMaxBytes >> 20);
  }
  // A sweep: 1,000 campaigns of the scale bench's workload, each reconciled once, one cache.
  const Case* found = &cases.front();
  for (const auto& c : cases) {
    if (c.name == "simulated-llama3-8b-anywhere.yaml") found = &c;
  }
  const Case& sweep = *found;
  PlanningCache cache;
  const auto start = Clock::now();
  for (int i = 0; i < 1000; ++i) {
    CampaignSpec spec = sweep.spec;
    spec.name = "sweep-" + std::to_string(i);
    if (PlanOnce(spec, MessagePool{}, &cache) < 0) failed = true;
  }
  const double cached_ms = Ms(start, Clock::now());
  const auto start_built = Clock::now();
  for (int i = 0; i < 1000; ++i) {
    if (PlanOnce(sweep.spec, MessagePool{}, nullptr) < 0) failed = true;
  }
  const double built_ms = Ms(start_built, Clock::now());
  const PlanningCacheStats s = cache.stats();
  std::printf(
      "\n1,000 campaigns of `%s`, each planned once (first round): %.2f s building each "
      "campaign's model and space, %.2f s through one PlanningCache (%lld build, %lld hits, "
      "%zu entry of %.0f KiB).\n",
      sweep.name.c_str(), built_ms / 1000.0, cached_ms / 1000.0, static_cast<long long>(s.builds),
      static_cast<long long>(s.hits), s.entries, static_cast<double>(s.bytes) / 1024.0);
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace paratune

int main(int argc, char** argv) { return paratune::Run(argc, argv); }
