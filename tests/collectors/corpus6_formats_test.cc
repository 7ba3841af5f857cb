// Issue 35, collection 6 (tests/collectors/corpus, `collection: 6`): what the new dev excerpts
// showed the collectors missing, read from the dev excerpts themselves
// (tests/collectors/corpus/dev; never the held-out half) or from lines that follow the framework
// source cited in agents/collectors.
#include <gtest/gtest.h>

#include <string>

#include "agents/collectors/framework_parsers.h"
#include "agents/collectors/metric_collector.h"
#include "agents/health/anomaly.h"
#include "tests/collectors/corpus_dev.h"

namespace paratune::collectors {
namespace {

using testing::ReadDevExcerpt;

// DeepSpeedExamples' Megatron-LM v1.1.5 forks print `Effective Tera Flops per GPU: X and total
// parameters N B` on a line of its own after the iteration and timers lines (BigScience's 52B
// ZeRO run of 2021-05, dev excerpt megatron-deepspeed-bigscience-2021-05-zero-v115-effective-
// tflops-line: iterations 1-3, 41.94, 40.6, 41.26).
TEST(Corpus6FormatsTest, EffectiveTeraFlopsLineIsThatIterationsTflops) {
  const std::string log =
      ReadDevExcerpt("megatron-deepspeed-bigscience-2021-05-zero-v115-effective-tflops-line");
  ASSERT_NE(log.find("Effective Tera Flops per GPU: 40.6"), std::string::npos);
  auto c = CollectLogWithStepTimes("megatron-lm", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.tflops_per_device, (40.6 + 41.26) / 2, 1e-9);  // iteration 1: warm-up
  EXPECT_NEAR(c->metrics.step_time_seconds, (125.9124 + 123.9078) / 2, 1e-6);
  // Its FLOPs count the recomputed forward (x 4 per parameter and token), as Megatron-DeepSpeed's
  // `TFLOPs:` do: the MFU derived from it is not taken as model FLOPs.
  const std::string plain =
      " iteration        2/    1000 | elapsed time per iteration (ms): 1000.0 |\n"
      "Effective Tera Flops per GPU: 40.6 and total parameters 52.005 B\n";
  auto p = internal::ParseLog("megatron-lm", plain);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->samples.size(), 1u);
  EXPECT_TRUE(p->samples[0].tflops_counts_recompute);
  EXPECT_DOUBLE_EQ(p->samples[0].tflops_per_device, 40.6);
}

// tpu-recipes' GPT3-175B fp8 README quotes MaxText's step line without its first word:
// `step: 100, seconds: 14.245, TFLOP/s/device: 464.261, Tokens/s/device: 431.318, ...`.
TEST(Corpus6FormatsTest, MaxTextStepLineQuotedWithoutCompleted) {
  const std::string log = ReadDevExcerpt("maxtext-tpu-recipes-gpt3-175b-fp8-v6e-step100");
  ASSERT_EQ(log.find("completed step"), std::string::npos);
  auto c = CollectLogWithStepTimes("maxtext", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->metrics.step_time_seconds, 14.245);
  EXPECT_DOUBLE_EQ(c->metrics.tflops_per_device, 464.261);
  EXPECT_DOUBLE_EQ(c->metrics.tokens_per_second_per_device, 431.318);
  // Other lines that start with `step:` are not MaxText's.
  auto other = CollectLogWithStepTimes("maxtext", "step: 5, loss: 2.1\n", {});
  EXPECT_FALSE(other.ok());
}

// MaxText's dispatch artefact (a step far shorter than the rest) can come after step 1: in its
// docs' 10-step run steps 1 and 3 are short (0.323 s, 0.699 s) and steps 4-9 steady at 1.011-1.012
// s (dev excerpt maxtext-getting-started-ulm-v5p-ds2-bs1-steps0-9).
TEST(Corpus6FormatsTest, MaxTextShortStepAfterStepOneIsWarmUp) {
  const std::string log = ReadDevExcerpt("maxtext-getting-started-ulm-v5p-ds2-bs1-steps0-9");
  auto c = CollectLogWithStepTimes("maxtext", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->steps.warmup_dropped, 4);
  EXPECT_NEAR(c->metrics.step_time_seconds, (1.012 * 4 + 1.011 * 2) / 6, 1e-9);
  EXPECT_FALSE(health::DetectStepTimeAnomaly(c->step_times, {}, c->warmup_intervals));
  // A slow step among them is a real step: kept.
  std::string slow;
  const double times[] = {19.0, 0.32, 1.0, 1.3, 1.0, 1.0, 1.0, 1.0};
  for (int step = 0; step < 8; ++step) {
    slow += "completed step: " + std::to_string(step) +
            ", seconds: " + std::to_string(times[step]) + ", TFLOP/s/device: 30.0\n";
  }
  auto s = CollectLogWithStepTimes("maxtext", slow, {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->steps.warmup_dropped, 2);
  EXPECT_NEAR(s->metrics.step_time_seconds, (1.3 + 5.0) / 6, 1e-9);
}

// NeMo's train_step_timing printed 13.75 s for iteration 8 and -12.71 s for iteration 9 where
// the steps around ran 0.45-0.54 s (dev excerpt nemo2-playground-toy-llama3-negative-step-timing):
// the two steps took their sum, 0.52 s each.
TEST(Corpus6FormatsTest, NegativeStepTimeIsMergedWithTheStepBefore) {
  const std::string log = ReadDevExcerpt("nemo2-playground-toy-llama3-negative-step-timing");
  ASSERT_NE(log.find("train_step_timing in s: -12.71"), std::string::npos);
  auto c = CollectLogWithStepTimes("megatron-bridge", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // Iterations 2-11 (NeMo's global steps 0 and 1 are warm-up): 0.49237 s; 1.96 s before.
  EXPECT_NEAR(c->metrics.step_time_seconds, 0.49237, 0.0005);
  for (double t : c->steady_step_times) EXPECT_LT(t, 0.6);
  // A negative time with nothing positive enough before it is dropped, never averaged in.
  const std::string alone =
      "Training epoch 0, iteration 1/9 | global_step: 1 | train_step_timing in s: 0.5\n"
      "Training epoch 0, iteration 2/9 | global_step: 2 | train_step_timing in s: 0.5\n"
      "Training epoch 0, iteration 3/9 | global_step: 3 | train_step_timing in s: -0.7\n"
      "Training epoch 0, iteration 4/9 | global_step: 4 | train_step_timing in s: 0.5\n";
  auto a = CollectLogWithStepTimes("megatron-bridge", alone, {});
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_NEAR(a->metrics.step_time_seconds, 0.5, 1e-9);
}

}  // namespace
}  // namespace paratune::collectors
