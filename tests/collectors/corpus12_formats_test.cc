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

// A record continues on at most 24 lines (a Megatron record spans at most 17 when wrapped at 60
// columns): the step time on a 10th continuation line is read, on a 30th it is not, and a hostile
// log of equally wide lines is not joined into one record.
TEST(Corpus12FormatsTest, WrappedRecordContinuesOnBoundedLines) {
  // Every line 84 columns wide, cut mid-word; the step-time field cut between continuation lines
  // `cut` and `cut + 1`.
  auto log_with_cut_after = [](int cut) {
    const std::string head = " iteration N/ 100 | consumed samples: 512 |";
    const std::string before = "elapsed time per itera";
    const std::string after = "tion (ms): 4000.0 |";
    std::string log;
    for (int it = 1; it <= 3; ++it) {
      std::string first = head;
      first.replace(first.find('N'), 1, std::to_string(it));
      log += first + std::string(84 - first.size(), 'y') + "\n";
      for (int k = 1; k <= 30; ++k) {
        if (k == cut) {
          log += std::string(84 - before.size(), 'x') + before + "\n";
        } else if (k == cut + 1) {
          log += after + std::string(84 - after.size(), 'z') + "\n";
        } else {
          log += std::string(84, 'w') + "\n";
        }
      }
    }
    return log;
  };
  auto near = CollectLogWithStepTimes("megatron-lm", log_with_cut_after(9), {});
  ASSERT_TRUE(near.ok()) << near.status().ToString();
  EXPECT_EQ(near->steps.read, 3);
  EXPECT_NEAR(near->metrics.step_time_seconds, 4.0, 1e-9);
  auto far = CollectLogWithStepTimes("megatron-lm", log_with_cut_after(29), {});
  EXPECT_FALSE(far.ok() && far->steps.read > 0);
}

}  // namespace
}  // namespace paratune::collectors
