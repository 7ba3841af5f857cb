// Issue 35, collection 9 (tests/collectors/corpus, `collection: 9`): what the new dev excerpts
// showed the collectors missing, read from the dev excerpts themselves
// (tests/collectors/corpus/dev; never the held-out half).
#include <gtest/gtest.h>

#include <string>

#include "agents/collectors/metric_collector.h"
#include "tests/collectors/corpus_dev.h"

namespace paratune::collectors {
namespace {

using testing::ReadDevExcerpt;

std::string MegatronLine(int iteration, double ms, double tflops) {
  return " [2024-11-26 13:00:21] iteration " + std::to_string(iteration) +
         "/   12207 | elapsed time per iteration (ms): " + std::to_string(ms) +
         " | throughput per GPU (TFLOP/s/GPU): " + std::to_string(tflops) + " |\n";
}

// A pull request quotes a Pai-Megatron-Patch run from iteration 2 (log interval 1; dev excerpt
// megatron-lm-pai-patch-2024-11-qwen2-moe-pr388-iters-2-4): 1348.7 ms, then 547.9 and 559.8 ms.
// Iteration 2 is the first logged interval after iteration 1: still the start of training, and
// its slow interval is warm-up.
TEST(Corpus9FormatsTest, QuoteFromMegatronIterationTwoDropsItsSlowFirstInterval) {
  const std::string log = ReadDevExcerpt("megatron-lm-pai-patch-2024-11-qwen2-moe-pr388-iters-2-4");
  ASSERT_EQ(log.find("iteration        1/"), std::string::npos);
  auto c = CollectLogWithStepTimes("megatron-lm", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, (0.5479 + 0.5598) / 2, 1e-9);
  EXPECT_NEAR(c->metrics.tflops_per_device, (26.7 + 26.2) / 2, 1e-9);

  // A quote that begins later is mid-run: a slow first interval there is a real one, averaged.
  std::string mid;
  for (int it = 40; it <= 43; ++it) mid += MegatronLine(it, it == 40 ? 1348.7 : 550.0, 26.0);
  auto m = CollectLogWithStepTimes("megatron-lm", mid, {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_NEAR(m->metrics.step_time_seconds, (1.3487 + 3 * 0.55) / 4, 1e-9);

  // With log interval 10, iteration 20 is the first interval after iteration 10's warm-up.
  std::string tens;
  for (int it = 20; it <= 50; it += 10) tens += MegatronLine(it, it == 20 ? 900.0 : 550.0, 26.0);
  auto t = CollectLogWithStepTimes("megatron-lm", tens, {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_NEAR(t->metrics.step_time_seconds, 0.55, 1e-9);
}

// NeMo's train_step_timing is one step's own time, not an interval's mean: a bar quoted every five
// steps from global_step 4 (dev excerpt nemo2-nemo1-skypilot-gcsfuse-val-ckpt-every-5) is mid-run,
// and its first value, 10.40 s, is averaged in.
TEST(Corpus9FormatsTest, NemoStepTimingQuotedFromStepFourKeepsItsFirstStep) {
  const std::string log = ReadDevExcerpt("nemo2-nemo1-skypilot-gcsfuse-val-ckpt-every-5");
  auto c = CollectLogWithStepTimes("megatron-bridge", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, (10.40 + 10.90 + 8.440 + 8.710 + 8.610) / 5, 1e-9);
}

}  // namespace
}  // namespace paratune::collectors
