#include "agents/sim/simulated_cluster.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <sstream>

#include "agents/model/perf_model.h"
#include "tests/sim/workloads.h"

namespace paratune {
namespace {

using testing::Llama7bV5e;
using testing::Llama8bH100;

using PV = ParamValue;

Config Good() {
  return {{"tp", PV::Int(2)},
          {"mbs", PV::Int(1)},
          {"recompute", PV::Enum("selective")},
          {"distributedOptimizer", PV::Bool(true)}};
}

SimOptions NoFaults(uint64_t seed = 7) {
  SimOptions o;
  o.seed = seed;
  o.infra_fault_rate = 0;
  return o;
}

std::string LastLine(const std::string& log) {
  std::string s = log;
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.substr(s.rfind('\n') + 1);
}

TEST(SimulatedClusterTest, SameInputsSameResult) {
  const Workload w = Llama8bH100();
  SimTrialResult a = RunSimulatedTrial(w, Good(), NoFaults(), 0);
  SimTrialResult b = RunSimulatedTrial(w, Good(), NoFaults(), 0);
  EXPECT_EQ(a.log, b.log);
  EXPECT_EQ(a.termination_message, b.termination_message);
  // A re-run (another attempt) sees other noise but the same reality.
  SimTrialResult c = RunSimulatedTrial(w, Good(), NoFaults(), 1);
  EXPECT_NE(a.log, c.log);
  EXPECT_NEAR(c.metrics.mfu, a.metrics.mfu, 0.02 * a.metrics.mfu);
  EXPECT_DOUBLE_EQ(c.metrics.peak_memory_gib, a.metrics.peak_memory_gib);
}

TEST(SimulatedClusterTest, SuccessPrintsMegatronLinesAndTerminationJson) {
  const Workload w = Llama8bH100();
  SimTrialResult r = RunSimulatedTrial(w, Good(), NoFaults(), 0);
  ASSERT_EQ(r.exit_code, 0) << r.log;
  const std::regex line(
      R"( \[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] iteration +(\d+)/ +100 \| consumed samples: +\d+ \| elapsed time per iteration \(ms\): ([\d.]+) \| throughput per GPU \(TFLOP/s/GPU\): ([\d.]+) \| learning rate: [\d.E+-]+ \| global batch size: +512 \| lm loss: [\d.E+-]+ \| loss scale: 1\.0 \| grad norm: [\d.]+ \| number of skipped iterations: +0 \| number of nan iterations: +0 \|)");
  std::istringstream in(r.log);
  int iterations = 0, memory_lines = 0;
  double tflops_sum = 0;
  for (std::string l; std::getline(in, l);) {
    std::smatch m;
    if (std::regex_match(l, m, line)) {
      ++iterations;
      if (iterations > 1) tflops_sum += std::stod(m[3]);
    }
    if (l.rfind("[Rank 0] (after 10 iterations) memory (MB) | allocated: ", 0) == 0) ++memory_lines;
  }
  EXPECT_EQ(iterations, 10);
  EXPECT_EQ(memory_lines, 1);
  auto j = nlohmann::json::parse(r.termination_message);
  auto m = TrialMetrics::FromJson(j.at("metrics"));
  ASSERT_TRUE(m.ok());
  // The termination message agrees with the log lines (the mean of the steady-state ones).
  EXPECT_NEAR(m->tflops_per_device, tflops_sum / 9, 0.005 * m->tflops_per_device);
  EXPECT_NEAR(m->mfu, m->tflops_per_device / 989.0, 0.005);
  EXPECT_GT(m->peak_memory_gib, 10);
  EXPECT_LT(m->peak_memory_gib, 79.11);
}

TEST(SimulatedClusterTest, RealityDiffersFromTheModelButNotWildly) {
  const Workload w = Llama8bH100();
  const Estimate e = EstimateConfig(w, Good());
  double max_rel = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SimTruth t = TrueOutcome(w, Good(), NoFaults(seed));
    ASSERT_TRUE(t.ok) << t.failure;
    const double rel = std::fabs(t.metrics.mfu - e.mfu) / e.mfu;
    max_rel = std::max(max_rel, rel);
    EXPECT_LT(rel, 0.35) << "seed " << seed;
    // The allocator and fragmentation overhead is only ever added.
    EXPECT_GT(t.metrics.peak_memory_gib, e.peak_memory_gib);
    EXPECT_LT(t.metrics.peak_memory_gib, e.peak_memory_gib + 10);
  }
  EXPECT_GT(max_rel, 0.03);  // the seeds do draw different realities
}

TEST(SimulatedClusterTest, OutOfMemoryPrintsTorchError) {
  const Workload w = Llama8bH100();
  Config c{{"tp", PV::Int(1)}, {"mbs", PV::Int(4)}, {"recompute", PV::Enum("none")}};
  SimTrialResult r = RunSimulatedTrial(w, c, NoFaults(), 0);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(r.termination_message.empty());
  EXPECT_EQ(r.metrics.mfu, 0);
  EXPECT_EQ(r.true_failure_category, "CudaOOM");
  const std::regex oom(
      R"(\[rank0\]: torch\.OutOfMemoryError: CUDA out of memory\. Tried to allocate [\d.]+ GiB\. GPU 0 has a total capacity of 79\.11 GiB of which [\d.]+ GiB is free\..*)");
  EXPECT_TRUE(std::regex_match(LastLine(r.log), oom)) << LastLine(r.log);
  EXPECT_NE(r.log.find("[rank0]: Traceback (most recent call last):"), std::string::npos);
  EXPECT_FALSE(TrueOutcome(w, c, NoFaults()).ok);
}

TEST(SimulatedClusterTest, DivisibilityErrorsUseMegatronText) {
  Workload w = Llama8bH100();
  w.model = *FindModelPreset("qwen2.5-0.5b");  // 14 heads
  SimTrialResult r = RunSimulatedTrial(w, {{"tp", PV::Int(4)}}, NoFaults(), 0);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.true_failure_category, "InvalidParallelism");
  EXPECT_EQ(LastLine(r.log),
            "[rank0]: ValueError: num_attention_heads (14) must be a multiple of "
            "tensor_model_parallel_size (4).");
  r = RunSimulatedTrial(Llama8bH100(), {{"mbs", PV::Int(3)}}, NoFaults(), 0);
  EXPECT_EQ(LastLine(r.log),
            "[rank0]: AssertionError: global batch size (512) is not divisible by micro batch "
            "size (3) times data parallel size (8)");
}

TEST(SimulatedClusterTest, TpuRunsPrintMaxTextAndXlaErrors) {
  const Workload w = Llama7bV5e();
  SimTrialResult ok = RunSimulatedTrial(w, {{"remat", PV::Enum("full")}}, NoFaults(), 0);
  ASSERT_EQ(ok.exit_code, 0) << ok.log;
  const std::regex step(
      R"(completed step: \d+, seconds: [\d.]+, TFLOP/s/device: [\d.]+, Tokens/s/device: [\d.]+, total_weights: 131072, loss: [\d.]+)");
  EXPECT_TRUE(std::regex_match(LastLine(ok.log), step)) << LastLine(ok.log);
  EXPECT_NE(ok.log.find("Total memory size: "), std::string::npos);
  SimTrialResult oom = RunSimulatedTrial(
      w, {{"remat", PV::Enum("minimal")}, {"perDeviceBatchSize", PV::Int(8)}}, NoFaults(), 0);
  EXPECT_EQ(oom.exit_code, 1);
  EXPECT_EQ(oom.true_failure_category, "TpuResourceExhausted");
  const std::regex xla(
      R"([\s\S]*jaxlib\.xla_extension\.XlaRuntimeError: RESOURCE_EXHAUSTED: XLA:TPU compile permanent error\. Ran out of memory in memory space hbm\. Used [\d.]+G of 15\.75G hbm\. Exceeded hbm capacity by [\d.]+G\.[\s\S]*)");
  EXPECT_TRUE(std::regex_match(oom.log, xla));
  SimTrialResult mesh =
      RunSimulatedTrial(w, {{"iciFsdp", PV::Int(8)}, {"iciTensor", PV::Int(4)}}, NoFaults(), 0);
  EXPECT_EQ(LastLine(mesh.log),
            "AssertionError: Number of ICI devices 16 does not match the product of the "
            "parallelism 32");
}

TEST(SimulatedClusterTest, InfrastructureFaultsAreRareRetryableAndLabelled) {
  const Workload w = Llama8bH100();
  SimOptions opt;
  opt.seed = 11;
  opt.infra_fault_rate = 0.02;
  int faults = 0, nccl = 0, ecc = 0;
  const int kRuns = 2000;
  for (int a = 0; a < kRuns; ++a) {
    SimTrialResult r = RunSimulatedTrial(w, Good(), opt, a);
    if (r.exit_code == 0) continue;
    ++faults;
    if (r.log.find("Watchdog caught collective operation timeout") != std::string::npos) ++nccl;
    if (r.log.find("uncorrectable ECC error encountered") != std::string::npos) ++ecc;
  }
  // 2% of 2000 = 40; a binomial's 4-sigma band is about [15, 65].
  EXPECT_GT(faults, 15);
  EXPECT_LT(faults, 65);
  EXPECT_EQ(nccl + ecc, faults);
  EXPECT_GT(nccl, 0);
  EXPECT_GT(ecc, 0);
  // A faulted attempt succeeds when retried (the fault is not caused by the config).
  for (int a = 0; a < kRuns; ++a) {
    if (RunSimulatedTrial(w, Good(), opt, a).exit_code != 0) {
      EXPECT_EQ(RunSimulatedTrial(w, Good(), NoFaults(11), a + 1).exit_code, 0);
      break;
    }
  }
}

}  // namespace
}  // namespace paratune
