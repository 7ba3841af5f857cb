// Issue 35, collection 11 (tests/collectors/corpus, `collection: 11`): what the new dev excerpts
// showed the collectors missing, read from the dev excerpts themselves
// (tests/collectors/corpus/dev; never the held-out half).
#include <gtest/gtest.h>

#include <string>

#include "agents/collectors/metric_collector.h"
#include "agents/health/anomaly.h"
#include "tests/collectors/corpus_dev.h"

namespace paratune::collectors {
namespace {

using testing::ReadDevExcerpt;

// NeMo's train_step_timing is a running mean (dev excerpt nemo2-nemo1-gpu-recipes-a4-llama3-70b-
// 64gpu-glued-bar-dll-warmup: 44.85 s, then 24.77, 18.06, 14.72, 12.71 while step 0 stays in the
// window, then 4.68-4.71 s): every leading value still over 10% above the later median is
// warm-up, and the healthy run raises no alarm.
TEST(Corpus11FormatsTest, NemoRunningMeanCarriesTheSlowFirstStep) {
  const std::string log =
      ReadDevExcerpt("nemo2-nemo1-gpu-recipes-a4-llama3-70b-64gpu-glued-bar-dll-warmup");
  auto c = CollectLogWithStepTimes("megatron-bridge", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // The bar's three-digit values (4.680 ... 4.710) are read; their mean is 4.70 s, against 6.70 s
  // with the running mean's tail averaged in.
  EXPECT_NEAR(c->metrics.step_time_seconds, 4.70, 0.005);
  EXPECT_EQ(c->steps.warmup_dropped, 5);
  EXPECT_FALSE(health::DetectStepTimeAnomaly(c->step_times, {}, c->warmup_intervals));
}

// torchtitan's interval means do not carry over: after the slow first steady step only that step
// is warm-up, and a ramp after it is real (dev excerpt torchtitan-issue1191-debugmodel-bf16-
// logfreq1: tps 2,344, 117,679, then 365,678 and 415,488-427,040, its reader keeping step 3).
TEST(Corpus11FormatsTest, TorchtitanDropsOnlyItsFirstSlowInterval) {
  const std::string log = ReadDevExcerpt("torchtitan-issue1191-debugmodel-bf16-logfreq1");
  auto c = CollectLogWithStepTimes("torchtitan", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->steps.warmup_dropped, 2);
  EXPECT_NEAR(c->metrics.tokens_per_second_per_device,
              (365678.0 + 425589 + 427040 + 415488 + 392553) / 5, 1e-6);
}

}  // namespace
}  // namespace paratune::collectors
