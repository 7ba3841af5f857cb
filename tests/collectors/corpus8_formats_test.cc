// Issue 35, collection 8 (tests/collectors/corpus, `collection: 8`): what the new dev excerpts
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

// An xprof window in a 2026 Gemma 4 MaxText run (dev excerpt maxtext-gemma4-e2b-tpu7x-xprof-
// window-artefacts): steps 5, 6, 8 and 9 print 1.296, 0.032, 14.265 and 0.030 s where the others
// run 0.575-0.591 s; MaxText's own rule hides such boundary steps. They are left out, and the
// healthy run raises no alarm.
TEST(Corpus8FormatsTest, MaxTextProfilerBoundaryStepsAreLeftOut) {
  const std::string log = ReadDevExcerpt("maxtext-gemma4-e2b-tpu7x-xprof-window-artefacts");
  ASSERT_NE(log.find("Profiler session started"), std::string::npos);
  auto c = CollectLogWithStepTimes("maxtext", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, (0.590 + 0.576 + 0.575 + 0.588 + 0.591) / 5, 1e-9);
  EXPECT_FALSE(health::DetectStepTimeAnomaly(c->step_times, {}, c->warmup_intervals));
  ASSERT_FALSE(c->warnings.empty());

  // Without a profiler session a stall is a real step: averaged in (and judged).
  std::string stall;
  const double times[] = {1.1, 1.1, 1.1, 108.6, 1.1, 1.1};
  for (int step = 10; step < 16; ++step) {
    stall += "completed step: " + std::to_string(step) +
             ", seconds: " + std::to_string(times[step - 10]) + ", TFLOP/s/device: 100.0\n";
  }
  auto s = CollectLogWithStepTimes("maxtext", stall, {});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_NEAR(s->metrics.step_time_seconds, (1.1 * 5 + 108.6) / 6, 1e-9);
}

// A rank that prints Megatron-LM's iteration lines but not rank 0's `saving checkpoint` shows a
// save only by the timers block after it (`save-checkpoint ...: (17925.43, 17925.59)`; dev excerpt
// megatron-lm-core016-gh200-40rank-torchrun-rank3-stdout-ckpt-save): the steps right after it are
// not judged by the anomaly checks.
TEST(Corpus8FormatsTest, MegatronSaveCheckpointTimerIsAPause) {
  const std::string log =
      ReadDevExcerpt("megatron-lm-core016-gh200-40rank-torchrun-rank3-stdout-ckpt-save");
  ASSERT_NE(log.find("save-checkpoint"), std::string::npos);
  ASSERT_EQ(log.find("saving checkpoint"), std::string::npos);
  auto c = CollectLogWithStepTimes("megatron-lm", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->step_times.size(), 5u);  // iterations 46-50; 51-55 follow the save
  EXPECT_FALSE(health::DetectStepTimeAnomaly(c->step_times, {}, c->warmup_intervals));
  EXPECT_NEAR(c->metrics.step_time_seconds, 2.09848, 1e-5);  // all ten still averaged
}

}  // namespace
}  // namespace paratune::collectors
