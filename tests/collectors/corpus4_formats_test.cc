// Issue 35, collection 4 (tests/collectors/corpus, `collection: 4`): what the new dev excerpts
// showed the collectors missing, read from the dev excerpts themselves
// (tests/collectors/corpus/dev; never the held-out half) or from lines that follow the framework
// source cited in agents/collectors/framework_parsers.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "agents/collectors/metric_collector.h"
#include "tests/collectors/corpus_dev.h"

namespace paratune::collectors {
namespace {

using testing::ReadDevExcerpt;

// Pai-Megatron-Patch adds ` tokens/sec/gpu: N |` to Megatron-LM's iteration line (dev excerpt
// megatron-lm-pai-patch-2025-10-qwen25vl-tokens-sec-gpu, iterations 480-482).
TEST(Corpus4FormatsTest, PaiMegatronPatchTokensPerSecPerGpu) {
  const std::string log = ReadDevExcerpt("megatron-lm-pai-patch-2025-10-qwen25vl-tokens-sec-gpu");
  ASSERT_NE(log.find("tokens/sec/gpu: 11844.5"), std::string::npos);
  auto c = CollectLogWithStepTimes("megatron-lm", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.tokens_per_second_per_device, (11844.5 + 11185.0 + 11816.9) / 3, 1e-6);
  EXPECT_EQ(c->sources.at("tokensPerSecondPerDevice"), kSourceLog);
}

// NeMo's asynchronous checkpoint save runs its writers beside the training steps from
// `Scheduled async checkpoint save` until `Successfully saved checkpoint` (dist_ckpt_io.py): in
// the dev excerpt nemo2-evo2-finetune-ckpt-val-between-steps the save scheduled after step 49 is
// still running at step 55, and steps 50-55 take 0.62-0.69 s against 0.23-0.25 s before. Those
// steps are not judged by the anomaly checks; they still count in the mean.
TEST(Corpus4FormatsTest, StepsBesideANeMoAsyncCheckpointSaveAreNotJudged) {
  const std::string log = ReadDevExcerpt("nemo2-evo2-finetune-ckpt-val-between-steps");
  ASSERT_NE(log.find("Scheduled async checkpoint save"), std::string::npos);
  ASSERT_EQ(log.find("Successfully saved checkpoint"), std::string::npos);
  auto c = CollectLogWithStepTimes("megatron-bridge", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->step_times.size(), 5u);  // steps 45-49
  for (double t : c->step_times) EXPECT_LT(t, 0.3);
  EXPECT_GT(c->metrics.step_time_seconds, 0.4);  // steps 45-55 (mean 0.469 s)

  // Once the save is reported done, the steps after it are judged again. Step 7 is past the five
  // steps a pause line exempts, but the save was still running.
  std::string done =
      "Training epoch 0, iteration 1/99 | global_step: 1 | train_step_timing in s: 0.25\n"
      "[NeMo I 2025-06-18 16:52:54 nemo_logging:393] Scheduled async checkpoint save for /c\n";
  for (int step = 2; step <= 7; ++step) {
    done += "Training epoch 0, iteration " + std::to_string(step) +
            "/99 | global_step: " + std::to_string(step) + " | train_step_timing in s: 0.66\n";
  }
  done +=
      "[NeMo I 2025-06-18 16:53:20 nemo_logging:393] Successfully saved checkpoint from "
      "iteration       1 to /c\n"
      "Training epoch 0, iteration 8/99 | global_step: 8 | train_step_timing in s: 0.26\n";
  auto d = CollectLogWithStepTimes("megatron-bridge", done, {});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  ASSERT_EQ(d->step_times.size(), 2u);  // step 1 (warm-up) and step 8
  EXPECT_NEAR(d->step_times[1], 0.26, 1e-9);
}

// A Trainer run with include_tokens_per_second prints tokens/s per device only in its final
// dict; newer Trainers also put a running `train_tokens_per_second` of all ranks into every
// logging dict, which is not per device (dev excerpt hf-trainer-ezpz-aurora-fsdp-tokens-metrics:
// 78,016.894 in the last logging dict, 2,737.984 per device in the final one, 24 ranks).
TEST(Corpus4FormatsTest, HuggingFaceTokensPerSecondComeFromTheFinalDictOnly) {
  const std::string log = ReadDevExcerpt("hf-trainer-ezpz-aurora-fsdp-tokens-metrics");
  auto c = CollectLogWithStepTimes("hf-trainer", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.tokens_per_second_per_device, 2737.984, 1e-6);
  EXPECT_TRUE(std::any_of(c->warnings.begin(), c->warnings.end(), [](const std::string& w) {
    return w.find("whole run") != std::string::npos;
  }));
  // The bar's latest rate stays the step time (2.27 s/it; the final dict's whole-run average
  // is 1 / 0.334 = 2.99 s, start-up and checkpoint saves included).
  EXPECT_NEAR(c->metrics.step_time_seconds, 2.27, 1e-9);

  // Without the final dict, the logging dicts' running figure is not read as per device.
  const std::string running_only = log.substr(0, log.find("{'train_runtime'"));
  auto r = CollectLogWithStepTimes("hf-trainer", running_only, {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->metrics.tokens_per_second_per_device, 0);
}

}  // namespace
}  // namespace paratune::collectors
