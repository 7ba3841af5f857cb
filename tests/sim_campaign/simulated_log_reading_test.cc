// The simulated cluster's torchtitan log read as `paratune collect` reads a log with a bare
// campaign (no batch shape): the start-up lines torchtitan v0.2.2 prints (the mesh, the Trainer's
// local batch and sequence length) give a step's tokens per device, so the step times the
// collector reads are the ones the simulator played, tensor parallelism included.
#include <gtest/gtest.h>

#include <string>

#include "agents/collectors/metric_collector.h"
#include "agents/sim/simulated_cluster.h"
#include "tests/sim/workloads.h"

namespace paratune {
namespace {

TEST(SimulatedLogReadingTest, TorchtitanStartupLinesGiveTheStepTimeWithoutACampaign) {
  Workload w = testing::Llama8bH100(2);
  w.training.framework = "torchtitan";
  w.training.global_batch_size = 64;
  Config c;
  c["tp"] = ParamValue::Int(2);
  c["mbs"] = ParamValue::Int(2);
  c["recompute"] = ParamValue::Enum("full");
  SimOptions opt;
  opt.infra_fault_rate = 0;
  const SimTrialResult r = RunSimulatedTrial(w, c, opt, 0);
  ASSERT_EQ(r.exit_code, 0) << r.log.substr(0, 2000);
  ASSERT_NE(r.log.find("Building device mesh with parallelism: pp=1, dp_replicate=1, dp_shard=8, "
                       "cp=1, tp=2"),
            std::string::npos)
      << r.log.substr(0, 1000);
  ASSERT_NE(r.log.find("Trainer is initialized with local batch size 2, global batch size 64, "
                       "gradient accumulation steps 4, sequence length 8192"),
            std::string::npos)
      << r.log.substr(0, 1000);
  auto got = collectors::CollectLogWithStepTimes("torchtitan", r.log, {});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  // The same as with the campaign's shape (global batch 64 x 8192 tokens over 16 devices) ...
  collectors::CollectorContext ctx;
  ctx.global_batch_size = 64;
  ctx.seq_length = 8192;
  ctx.devices = 16;
  auto with_campaign = collectors::CollectLogWithStepTimes("torchtitan", r.log, ctx);
  ASSERT_TRUE(with_campaign.ok()) << with_campaign.status().ToString();
  EXPECT_NEAR(got->metrics.step_time_seconds, with_campaign->metrics.step_time_seconds, 1e-9);
  // ... and what the simulator played (its logged intervals after the first; tps is printed in
  // whole tokens and the collector's warm-up rule is its own): within 2%.
  ASSERT_GT(r.step_times.size(), 2u);
  double played = 0;
  for (size_t i = 1; i < r.step_times.size(); ++i) played += r.step_times[i];
  played /= static_cast<double>(r.step_times.size() - 1);
  EXPECT_NEAR(got->metrics.step_time_seconds, played, 0.02 * played);
  // Not the tp = 1 reading (twice the time).
  EXPECT_LT(got->metrics.step_time_seconds, 1.5 * played);
}

}  // namespace
}  // namespace paratune
