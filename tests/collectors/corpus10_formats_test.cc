// Issue 35, collection 10 (tests/collectors/corpus, `collection: 10`): what the new dev excerpts
// showed the collectors missing, read from the dev excerpts themselves
// (tests/collectors/corpus/dev; never the held-out half).
#include <gtest/gtest.h>

#include <string>

#include "agents/collectors/metric_collector.h"
#include "tests/collectors/corpus_dev.h"

namespace paratune::collectors {
namespace {

using testing::ReadDevExcerpt;

// A two-node Trainer run (dev excerpt hf-trainer-ezpz-aurora-24rank-two-printers-final-dicts):
// each node's local rank 0 prints the loss dicts and its own final dict (train_steps_per_second
// 0.803 and 0.367, train_tokens_per_second 822.661 and 376.234, the same train_loss), then rank 0
// alone the metrics block repeating the second. One sample, the mean of the two printers'.
TEST(Corpus10FormatsTest, HfFinalDictsOfTwoPrintersAreOneSample) {
  const std::string log = ReadDevExcerpt("hf-trainer-ezpz-aurora-24rank-two-printers-final-dicts");
  auto c = CollectLogWithStepTimes("hf-trainer", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, (1 / 0.803 + 1 / 0.367) / 2, 1e-9);
  EXPECT_NEAR(c->metrics.tokens_per_second_per_device, (822.661 + 376.234) / 2, 1e-9);
}

// Two runs in one log (different train_loss): the later run's dict is the summary, and a metrics
// block after it does not overwrite what the dict printed.
TEST(Corpus10FormatsTest, HfFinalDictOfAnotherRunReplacesTheSummary) {
  const std::string log =
      "{'train_runtime': 10.0, 'train_steps_per_second': 1.0, 'train_tokens_per_second': 500.0, "
      "'train_loss': 2.5, 'epoch': 1.0}\n"
      "{'train_runtime': 20.0, 'train_steps_per_second': 0.5, 'train_tokens_per_second': 250.0, "
      "'train_loss': 2.1, 'epoch': 1.0}\n"
      "***** train metrics *****\n"
      "  train_steps_per_second   =      0.4\n";
  auto c = CollectLogWithStepTimes("hf-trainer", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, 2.0, 1e-9);
  EXPECT_NEAR(c->metrics.tokens_per_second_per_device, 250.0, 1e-9);
}

// A resumed torchtitan run (dev excerpt torchtitan-rtx5090x8-vlm-sft-resume-inf-gradnorm-mfu-na:
// `Training starts at step 3201`, log_freq 10): the first interval, 3210 at 2,516 tps where the
// rest run 3,329-3,338, compiles and warms up as step 1 does, and is dropped, also without a
// campaign (step times then come from the timestamps, which the first logged step lacks).
TEST(Corpus10FormatsTest, TorchtitanResumedRunDropsItsFirstInterval) {
  const std::string log = ReadDevExcerpt("torchtitan-rtx5090x8-vlm-sft-resume-inf-gradnorm-mfu-na");
  ASSERT_NE(log.find("Training starts at step 3201"), std::string::npos);
  auto c = CollectLogWithStepTimes("torchtitan", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const double tps[] = {3338, 3337, 3338, 3329, 3329, 3335, 3333, 3335, 3330};
  double sum = 0;
  for (double t : tps) sum += t;
  EXPECT_NEAR(c->metrics.tokens_per_second_per_device, sum / 9, 1e-6);
  EXPECT_EQ(c->steps.warmup_dropped, 1);
}

}  // namespace
}  // namespace paratune::collectors
