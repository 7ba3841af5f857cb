// What trial-sim prints beyond the plain progress lines (issue 35, framework_log.h AsPrinted):
// what the frameworks themselves print by default.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agents/sim/framework_log.h"
#include "tests/sim/workloads.h"

namespace paratune {
namespace {

using testing::Llama7bV5e;
using testing::Llama8bH100;

const std::string kMegatron =
    " [2026-11-21 05:40:01] iteration       50/      50 | consumed samples:        25600 | "
    "elapsed time per iteration (ms): 9100.2 | throughput per GPU (TFLOP/s/GPU): 412.3 | "
    "learning rate: 3.000000E-04 | global batch size:   512 | lm loss: 7.123456E+00 | loss "
    "scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 |";

TEST(FrameworkPrintsTest, MegatronPrintsThroughputOnlyWithLogThroughput) {
  const Workload w = Llama8bH100();
  std::vector<std::string> plain = sim::AsPrinted(w, {}, {}, kMegatron);
  ASSERT_GE(plain.size(), 1u);
  EXPECT_EQ(plain[0].find("TFLOP/s"), std::string::npos) << plain[0];
  EXPECT_NE(plain[0].find("elapsed time per iteration (ms): 9100.2 | learning rate"),
            std::string::npos)
      << plain[0];
  // The last iteration is followed by the validation block.
  ASSERT_EQ(plain.size(), 4u);
  EXPECT_NE(plain[2].find("validation loss at iteration 50"), std::string::npos);
  sim::PrintOptions o;
  o.log_throughput = true;
  EXPECT_EQ(sim::AsPrinted(w, {}, o, kMegatron)[0], kMegatron);
}

TEST(FrameworkPrintsTest, TorchtitanPrintsOnEveryLocalRank) {
  Workload w = Llama8bH100(2);
  w.training.framework = "torchtitan";
  const std::string line =
      "[titan] 2026-11-21 05:40:01 - root - INFO - step: 20  loss:  7.1234  memory: "
      "61.23GiB(77.51%)  tps: 3,255  tflops: 412.30  mfu: 41.69%";
  std::vector<std::string> out = sim::AsPrinted(w, {1, 2}, {}, line);
  ASSERT_EQ(out.size(), 16u);  // 8 ranks x (step line + validation line)
  EXPECT_EQ(out[0].rfind("[rank8]:", 0), 0u) << out[0];
  EXPECT_NE(out[8].find("validate step: 20"), std::string::npos) << out[8];
  EXPECT_NE(out[8].find("tps: 4068"), std::string::npos) << out[8];
  sim::PrintOptions one;
  one.every_rank = false;
  EXPECT_EQ(sim::AsPrinted(w, {1, 2}, one, line).size(), 2u);
}

TEST(FrameworkPrintsTest, MaxTextStepOneIsADispatchArtefact) {
  const Workload w = Llama7bV5e();
  const std::string step1 =
      "completed step: 1, seconds: 5.000, TFLOP/s/device: 100.000, Tokens/s/device: 2000.000, "
      "total_weights: 131072, loss: 10.400";
  std::vector<std::string> out = sim::AsPrinted(w, {}, {}, step1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].find("seconds: 0.300"), std::string::npos) << out[0];
  EXPECT_NE(out[0].find(", total_weights: 131072"), std::string::npos) << out[0];
}

TEST(FrameworkPrintsTest, TransformersPrintsTheTrainersOutput) {
  Workload w = Llama8bH100();
  w.training.framework = "transformers";
  std::vector<std::string> out = sim::AsPrinted(w, {}, {}, kMegatron);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].rfind("{'loss': 7.1235", 0), 0u) << out[0];
  EXPECT_NE(out[1].find("| 50/50 [07:35<00:00, 9.10s/it]"), std::string::npos) << out[1];
  EXPECT_NE(out[2].find("'train_steps_per_second': 0.110"), std::string::npos) << out[2];
}

}  // namespace
}  // namespace paratune
