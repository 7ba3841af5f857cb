// Issue 35, collection 12 (tests/collectors/corpus, `collection: 12`) and the dev misses of earlier
// collections: what the dev excerpts showed the collectors missing, read from the dev excerpts
// themselves (tests/collectors/corpus/dev; never the held-out half).
#include <gtest/gtest.h>

#include <string>

#include "agents/collectors/metric_collector.h"
#include "agents/health/anomaly.h"
#include "tests/collectors/corpus_dev.h"

namespace paratune::collectors {
namespace {

using testing::ReadDevExcerpt;

// A Megatron record pasted into a pull request hard-wrapped at 86 columns, mid-word (dev excerpt
// megatron-bridge-pr841-nsys-wrapped-lines, collection 6: `number of s` / `kipped iterations`,
// `max alloca` / `ted: 12712.43...`): the record and the memory line are read whole.
TEST(Corpus12FormatsTest, HardWrappedMegatronRecordsAreJoined) {
  const std::string log = ReadDevExcerpt("megatron-bridge-pr841-nsys-wrapped-lines");
  LogReading r = ReadLog("megatron-bridge", log, {});
  ASSERT_TRUE(r.collected.ok()) << r.collected.status().ToString();
  // Iteration 10 (the first interval) is warm-up; iteration 20 is 14260.3 ms.
  EXPECT_NEAR(r.collected->metrics.step_time_seconds, 14.2603, 1e-6);
  EXPECT_NEAR(r.collected->metrics.tflops_per_device, 58.2, 1e-9);
  EXPECT_NEAR(r.memory.peak_gib, 12712.43603515625 / 1024, 1e-9);
}

// Whole records are never joined, however wide: each ends with `|` and holds its step time, and a
// line that follows one (a checkpoint save, a validation line) stays its own line.
TEST(Corpus12FormatsTest, WholeRecordsOfEqualWidthStayApart) {
  const std::string log =
      " iteration       10/     100 | elapsed time per iteration (ms): 1000.0 | lm loss: 2.0 |\n"
      " iteration       20/     100 | elapsed time per iteration (ms): 1200.0 | lm loss: 1.9 |\n"
      "saving checkpoint at iteration      20 to /ckpt in torch_dist format\n"
      " iteration       30/     100 | elapsed time per iteration (ms): 1210.0 | lm loss: 1.8 |\n"
      " validation loss at iteration 30 | lm loss value: 1.7 | lm loss PPL: 5.4 |\n"
      " iteration       40/     100 | elapsed time per iteration (ms): 1190.0 | lm loss: 1.7 |\n";
  auto c = CollectLogWithStepTimes("megatron-lm", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->steps.read, 4);
  EXPECT_EQ(c->steps.warmup_dropped, 1);
  EXPECT_NEAR(c->metrics.step_time_seconds, 1.2, 1e-9);
}

// A record cut where a space was (the line one column narrower than the widest, its trailing
// space trimmed) is joined with that space; one cut mid-word at the full width, without.
TEST(Corpus12FormatsTest, WrappedRecordKeepsTheSpaceItsCutTrimmed) {
  const std::string log =
      " iteration        1/     100 | consumed samples:          512 | elapsed time per\n"
      "iteration (ms): 9000.5 | learning rate: 1.0E-04 | global batch size:   512 | lm l\n"
      "oss: 2.5 |\n"
      " iteration        2/     100 | consumed samples:         1024 | elapsed time per\n"
      "iteration (ms): 4000.5 | learning rate: 1.0E-04 | global batch size:   512 | lm l\n"
      "oss: 2.4 |\n"
      " iteration        3/     100 | consumed samples:         1536 | elapsed time per\n"
      "iteration (ms): 4001.5 | learning rate: 1.0E-04 | global batch size:   512 | lm l\n"
      "oss: 2.3 |\n";
  auto c = CollectLogWithStepTimes("megatron-lm", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->steps.read, 3);
  EXPECT_EQ(c->steps.warmup_dropped, 1);
  EXPECT_NEAR(c->metrics.step_time_seconds, 4.001, 1e-9);
}

}  // namespace
}  // namespace paratune::collectors
