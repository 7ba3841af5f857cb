// What each pod of a multi-pod simulated trial prints (issue 13): the framework's own rank
// conventions (framework_log.h LineForRank).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "agents/model/parallel_plan.h"
#include "agents/sim/framework_log.h"
#include "agents/sim/simulated_cluster.h"
#include "tests/sim/workloads.h"

namespace paratune {
namespace {

using testing::Llama8bH100;

using PV = ParamValue;

int Count(const std::string& log, const std::string& what) {
  int n = 0;
  for (size_t pos = log.find(what); pos != std::string::npos; pos = log.find(what, pos + 1)) ++n;
  return n;
}

TEST(RankLogTest, MegatronPrintsIterationsOnTheLastRankAndMemoryOnDataParallelRankZero) {
  const Workload w = Llama8bH100(2);
  Config c = {{"tp", PV::Int(8)},
              {"pp", PV::Int(2)},
              {"mbs", PV::Int(1)},
              {"recompute", PV::Enum("selective")},
              {"distributedOptimizer", PV::Bool(true)}};
  SimOptions opt;
  opt.infra_fault_rate = 0;
  const SimTrialResult r = RunSimulatedTrial(w, c, opt, 0);
  ASSERT_EQ(r.exit_code, 0) << r.log;
  const ParallelPlan p = PlanFromConfig(w, c);
  const std::string rank0 = sim::LogForRank(w, p, {0, 2}, r.log);
  const std::string last = sim::LogForRank(w, p, {1, 2}, r.log);
  EXPECT_EQ(Count(rank0, "elapsed time per iteration"), 0);
  EXPECT_EQ(Count(last, "elapsed time per iteration"), Count(r.log, "elapsed time per iteration"));
  EXPECT_GT(Count(last, "elapsed time per iteration"), 0);
  // dp = 1: every rank has data-parallel rank 0; each pod names its own first rank.
  EXPECT_EQ(Count(rank0, "[Rank 0] (after"), 1);
  EXPECT_EQ(Count(last, "[Rank 8] (after"), 1);
  // Everything else (the startup banner) is on every pod.
  EXPECT_EQ(Count(rank0, "using world size"), 1);
  EXPECT_EQ(Count(last, "using world size"), 1);
  // With dp = 8 (tp 2), ranks 8..15 hold data-parallel ranks 4..7: no memory line there.
  Config dp8 = {{"tp", PV::Int(2)},
                {"pp", PV::Int(1)},
                {"mbs", PV::Int(1)},
                {"recompute", PV::Enum("selective")},
                {"distributedOptimizer", PV::Bool(true)}};
  const SimTrialResult r8 = RunSimulatedTrial(w, dp8, opt, 0);
  ASSERT_EQ(r8.exit_code, 0) << r8.log;
  const ParallelPlan p8 = PlanFromConfig(w, dp8);
  EXPECT_EQ(Count(sim::LogForRank(w, p8, {1, 2}, r8.log), "memory (MB)"), 0);
  EXPECT_EQ(Count(sim::LogForRank(w, p8, {0, 2}, r8.log), "[Rank 0] (after"), 1);
  // One pod prints everything.
  EXPECT_EQ(sim::LogForRank(w, p, {0, 1}, r.log), r.log);
}

TEST(RankLogTest, MaxTextPrintsStepsOnProcessZeroOnly) {
  Workload w;
  w.model = *FindModelPreset("llama2-7b");
  w.training.framework = "maxtext";
  w.training.seq_length = 2048;
  w.training.global_batch_size = 64;
  w.hardware.accelerator = "tpu-v5e";
  w.hardware.devices_per_node = 4;
  w.hardware.tpu_topology = "4x4";
  w.accel = FindAccelerator("tpu-v5e");
  w.devices = 16;
  Config c = {{"iciFsdp", PV::Int(16)}, {"perDeviceBatchSize", PV::Int(4)}};
  SimOptions opt;
  opt.infra_fault_rate = 0;
  const SimTrialResult r = RunSimulatedTrial(w, c, opt, 0);
  ASSERT_EQ(r.exit_code, 0) << r.log;
  const ParallelPlan p = PlanFromConfig(w, c);
  for (int host = 0; host < 4; ++host) {
    const std::string log = sim::LogForRank(w, p, {host, 4}, r.log);
    EXPECT_EQ(Count(log, "completed step:") > 0, host == 0) << host;
    EXPECT_EQ(Count(log, "Total memory size"), Count(r.log, "Total memory size")) << host;
  }
}

}  // namespace
}  // namespace paratune
