// Issue 35, collection 7 (tests/collectors/corpus, `collection: 7`): what the new dev excerpts
// showed the collectors missing, read from the dev excerpts themselves
// (tests/collectors/corpus/dev; never the held-out half).
#include <gtest/gtest.h>

#include <string>

#include "agents/collectors/metric_collector.h"
#include "tests/collectors/corpus_dev.h"

namespace paratune::collectors {
namespace {

using testing::ReadDevExcerpt;

// tqdm redraws the Trainer's bar at the last step after the final dict (its closing redraw):
// `1689/1689 [05:06<00:00,  5.99it/s]` twice, then `5.50it/s` (dev excerpt
// hf-trainer-helsinki-mt-ckpt-saves-truncated-final-dict). The redraw replaces the earlier
// drawings of that step; it is not a second rank's figure to average with them.
TEST(Corpus7FormatsTest, BarRedrawnAtTheSameStepReplacesTheEarlierDrawing) {
  const std::string log = ReadDevExcerpt("hf-trainer-helsinki-mt-ckpt-saves-truncated-final-dict");
  ASSERT_NE(log.find("1689/1689 [05:06<00:00,  5.50it/s]"), std::string::npos);
  auto c = CollectLogWithStepTimes("hf-trainer", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, 1 / 5.50, 1e-9);
  EXPECT_EQ(c->steps.duplicate_rank_lines, 0);

  // Two ranks' bars at the same step are still two figures, averaged.
  const std::string two =
      "[rank0]: 10/100 [00:20<03:00,  2.00s/it]\n"
      "[rank1]: 10/100 [00:20<03:00,  2.20s/it]\n";
  auto t = CollectLogWithStepTimes("hf-trainer", two, {});
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_NEAR(t->metrics.step_time_seconds, 2.10, 1e-9);
  EXPECT_EQ(t->steps.duplicate_rank_lines, 1);
}

}  // namespace
}  // namespace paratune::collectors
