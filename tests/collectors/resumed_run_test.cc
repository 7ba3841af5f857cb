// A process resumed from a checkpoint warms up at its first step as a fresh one does at step 1: a
// trial retried after a preemption (Kueue, a JobSet restart) that keeps its checkpoint directory
// resumes, and its first steps must neither be averaged in nor judged by the anomaly checks. The
// lines below follow the frameworks' own format strings (cited at each test); the numbers are
// made up to show the rule.
#include <gtest/gtest.h>

#include <string>

#include "agents/collectors/metric_collector.h"
#include "agents/health/anomaly.h"

namespace paratune::collectors {
namespace {

// Megatron-LM's training_log record (megatron/training/training.py, NVIDIA/Megatron-LM@d98e8a6).
std::string MegatronRecord(int iteration, double ms) {
  return " [2026-11-20 10:00:00.000000] iteration " + std::to_string(iteration) +
         "/   10000 | consumed samples: " + std::to_string(iteration * 512) +
         " | elapsed time per iteration (ms): " + std::to_string(ms) +
         " | learning rate: 3.000000E-04 | global batch size:   512 | lm loss: 2.345678E+00 |"
         " loss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n";
}

// load_checkpoint's line (megatron/training/checkpointing.py, NVIDIA/Megatron-LM@d98e8a6).
constexpr const char* kMegatronLoad =
    "  successfully loaded checkpoint from /ckpt [ t 1/2, gtp_remat 1/1, p 1/1 ] at iteration "
    "5000\n";

// Since 2026-01 (c40b6ea, `is_first_iteration`) Megatron-LM logs the first iteration of the
// process on its own (initialisation overhead), and the next record, not reset, averages it in
// with the nine after it.
TEST(ResumedRunTest, MegatronDropsTheResumedProcessFirstIterations) {
  std::string log = kMegatronLoad;
  log += MegatronRecord(5001, 2400.0);
  log += MegatronRecord(5010, (2400.0 + 9 * 800.0) / 10);
  for (int it = 5020; it <= 5060; it += 10) log += MegatronRecord(it, it % 20 == 0 ? 801.0 : 799.0);
  auto c = CollectLogWithStepTimes("megatron-lm", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, (801.0 + 799.0 + 801.0 + 799.0 + 801.0) / 5 / 1000,
              1e-9);
  EXPECT_EQ(c->steps.warmup_dropped, 2);
  EXPECT_FALSE(health::DetectStepTimeAnomaly(c->step_times, {}, c->warmup_intervals));
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_EQ(c->warnings[0],
            "the log resumes from a checkpoint at step 5001: the steps up to 5010 are that "
            "process's warm-up and were dropped");
}

// Before 2026-01 the first record after a load is the first log interval's, which holds the
// first iteration after initialisation (the interval timer starts just before the loop).
TEST(ResumedRunTest, MegatronOlderFormatDropsTheFirstIntervalAfterTheLoad) {
  std::string log = kMegatronLoad;
  log += MegatronRecord(5010, 1200.0);
  for (int it = 5020; it <= 5050; it += 10) log += MegatronRecord(it, 800.0);
  auto c = CollectLogWithStepTimes("megatron-lm", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, 0.8, 1e-9);
  EXPECT_EQ(c->steps.warmup_dropped, 1);
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_NE(c->warnings[0].find("at step 5001: the steps up to 5010"), std::string::npos);
}

// Without a load line a log that begins at iteration 5010 is a quote from mid-run: nothing is
// dropped (the rule keys on the framework's line, not on a slow first record).
TEST(ResumedRunTest, MegatronWithoutTheLoadLineDropsNothing) {
  std::string log = MegatronRecord(5010, 1200.0);
  for (int it = 5020; it <= 5050; it += 10) log += MegatronRecord(it, 800.0);
  auto c = CollectLogWithStepTimes("megatron-lm", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, (1200.0 + 4 * 800.0) / 5 / 1000, 1e-9);
  EXPECT_EQ(c->steps.warmup_dropped, 0);
}

// `--finetune` loads at iteration 0 (load_checkpoint sets it): the run starts at 1 as a fresh one.
TEST(ResumedRunTest, MegatronFinetuneLoadIsAFreshStart) {
  std::string log = "  successfully loaded checkpoint from /base [ t 1/1, p 1/1 ] at iteration 0\n";
  log += MegatronRecord(10, 1500.0);
  for (int it = 20; it <= 50; it += 10) log += MegatronRecord(it, 800.0);
  auto c = CollectLogWithStepTimes("megatron-lm", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, 0.8, 1e-9);
  EXPECT_EQ(c->steps.warmup_dropped, 1);
  EXPECT_TRUE(c->warnings.empty());
}

// MaxText's step line (src/maxtext/common/metric_logger.py) and restore line
// (src/maxtext/common/checkpointing.py load_state_if_possible, AI-Hypercomputer/maxtext@e591f30):
// the checkpoint of step 99 resumes training at step 100, which compiles; step 101 is timed
// before step 100's asynchronous dispatch finished.
std::string MaxTextStep(int step, double seconds) {
  return "completed step: " + std::to_string(step) + ", seconds: " + std::to_string(seconds) +
         ", TFLOP/s/device: " + std::to_string(400.0 / seconds) +
         ", Tokens/s/device: " + std::to_string(8192.0 / seconds) +
         ", total_weights: 65536, loss: 2.345\n";
}

TEST(ResumedRunTest, MaxTextDropsTheResumedProcessCompileAndDispatchSteps) {
  std::string log =
      "checkpoint manager exists so trying to load this run's existing checkpoint\n"
      "restoring from this run's directory step 99\n";
  log += MaxTextStep(100, 41.5);
  log += MaxTextStep(101, 0.21);
  for (int step = 102; step <= 110; ++step) log += MaxTextStep(step, step % 2 ? 1.01 : 0.99);
  auto c = CollectLogWithStepTimes("maxtext", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, (5 * 0.99 + 4 * 1.01) / 9, 1e-9);
  EXPECT_EQ(c->steps.warmup_dropped, 2);
  EXPECT_FALSE(health::DetectStepTimeAnomaly(c->step_times, {}, c->warmup_intervals));
}

// Before 2024 the line read `restoring from this run's directory latest step 99`.
TEST(ResumedRunTest, MaxTextOlderRestoreLine) {
  std::string log = "restoring from this run's directory latest step 99\n";
  log += MaxTextStep(100, 41.5);
  log += MaxTextStep(101, 0.21);
  for (int step = 102; step <= 107; ++step) log += MaxTextStep(step, 1.0);
  auto c = CollectLogWithStepTimes("maxtext", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, 1.0, 1e-9);
  EXPECT_EQ(c->steps.warmup_dropped, 2);
}

}  // namespace
}  // namespace paratune::collectors
