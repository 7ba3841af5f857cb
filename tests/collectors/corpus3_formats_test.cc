// Issue 35, collection 3 (tests/collectors/corpus, `collection: 3`): forms that only the new dev
// excerpts show. The collectors already read all of them as a person does (no collector changed
// for collection 3, corpus/README.md); these tests pin that behaviour on the dev excerpts
// themselves, read from tests/collectors/corpus/dev (never from the held-out half).
#include <gtest/gtest.h>

#include <string>

#include "agents/collectors/metric_collector.h"
#include "tests/collectors/corpus_dev.h"

namespace paratune::collectors {
namespace {

using testing::ReadDevExcerpt;

// What trainer.train() returns, as a notebook cell prints it (transformers trainer_utils.py
// TrainOutput, a NamedTuple): its metrics dict is the final train dict, so the step time is
// 1 / train_steps_per_second (dev excerpt hf-trainer-peft-qdora-trainoutput).
TEST(Corpus3FormatsTest, HuggingFaceTrainOutputReprCarriesTheFinalTrainDict) {
  const std::string log = ReadDevExcerpt("hf-trainer-peft-qdora-trainoutput");
  ASSERT_NE(log.find("TrainOutput(global_step=10"), std::string::npos);
  auto c = CollectLogWithStepTimes("hf-trainer", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, 1 / 0.037, 1e-6);
}

// A NeMo 2 step line cut to its last fields has no iteration number; train_step_timing in s is
// still the step time (dev excerpt nemo2-dgxc-25.02-llama3-8b-finetune-peak-memory-line).
TEST(Corpus3FormatsTest, NeMo2StepLineWithoutAnIterationNumber) {
  const std::string log =
      "peak_memory_usage: 35475423232 | memory_allocated: 16209118208 | reduced_train_loss: 0.208 "
      "| train_step_timing in s: 0.9181 | consumed_samples: 3168\n";
  auto c = CollectLogWithStepTimes("megatron-bridge", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, 0.9181, 1e-9);
}

// With a cudagraph pass, torchtitan's step 2 captures the graphs (tps 55,850 against ~125,000
// after): it is warm-up as well as step 1 (dev excerpt
// torchtitan-cuda-graphable-moe-exp0-save-only-steps1-10).
TEST(Corpus3FormatsTest, TorchtitanCudagraphCaptureStepIsWarmUp) {
  const std::string log = ReadDevExcerpt("torchtitan-cuda-graphable-moe-exp0-save-only-steps1-10");
  auto c = CollectLogWithStepTimes("torchtitan", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const double steps3to10 =
      (126876.0 + 127997 + 121253 + 118256 + 126996 + 128149 + 129482 + 119540) / 8;
  EXPECT_NEAR(c->metrics.tokens_per_second_per_device, steps3to10, 1e-6);
  EXPECT_NEAR(c->metrics.peak_memory_gib, 2.34, 1e-9);
}

// Megatron-DeepSpeed as forked in 2021-06 prints "lm-loss:", "loss scale: -1.0" and an empty
// "time (ms)" line after each step, with iteration 1 printed among 64 ranks' memory lines (dev
// excerpt megatron-deepspeed-bigscience-2021-06-meg-ds-3d-64rank-mem-empty-timers).
TEST(Corpus3FormatsTest, MegatronDeepSpeed2021EmptyTimersLinesAndRankMemoryLines) {
  const std::string log =
      ReadDevExcerpt("megatron-deepspeed-bigscience-2021-06-meg-ds-3d-64rank-mem-empty-timers");
  auto c = CollectLogWithStepTimes("megatron-lm", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const double ms2to12 = (141096.8 + 137138.4 + 138928.9 + 137805.9 + 139183.6 + 138604.6 +
                          137448.5 + 134118.7 + 136533.1 + 139544.9 + 138324.6) /
                         11;
  EXPECT_NEAR(c->metrics.step_time_seconds, ms2to12 / 1000, 1e-6);
  EXPECT_NEAR(c->metrics.peak_memory_gib, 19961.072265625 / 1024, 1e-6);
}

// Megatron-LM 2021: while fp16's loss scale is searched down every iteration is reported as
// skipped (no lm loss), yet each runs a full forward and backward; with log interval 1 the first
// is warm-up and the others are steps (dev excerpt
// megatron-lm-bigscience-2021-05-gpt2-perf-n16-skipped-iters-time-limit, which ends with SLURM's
// time-limit cancellation).
TEST(Corpus3FormatsTest, MegatronLm2021SkippedIterationsAfterTheFirstAreSteps) {
  const std::string log =
      ReadDevExcerpt("megatron-lm-bigscience-2021-05-gpt2-perf-n16-skipped-iters-time-limit");
  auto c = CollectLogWithStepTimes("megatron-lm", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, (123896.3 + 124362.2 + 122224.0) / 3 / 1000, 1e-6);
}

}  // namespace
}  // namespace paratune::collectors
