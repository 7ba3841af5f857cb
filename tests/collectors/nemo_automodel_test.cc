// Issue 35: NeMo Automodel, the NeMo framework's trainer for Hugging Face models, read by the
// `megatron-bridge` collector (the NeMo family's). Lines follow its format strings
// (nemo_automodel/recipes/llm/train_ft.py log_train_metrics, and its 2025-07 finetune.py; cited
// in agents/collectors/framework_parsers.cc).
#include <gtest/gtest.h>

#include <string>

#include "agents/collectors/metric_collector.h"
#include "agents/health/anomaly.h"

namespace paratune::collectors {
namespace {

// Today's line behind Automodel's ColorFormatter (`%(asctime)s | %(levelname)s | %(name)s |`).
std::string StepLine(int step, double tps, double per_gpu, double mem) {
  char buf[400];
  std::snprintf(buf, sizeof(buf),
                "2025-10-02 11:%02d:%02d | \x1b[32mINFO\x1b[0m | root | step %d | epoch 0 | loss "
                "2.3456 | grad_norm 1.2345 | lr 1.00e-05 | mem %.2f GiB | tps %.2f(%.2f/gpu) | "
                "num_label_tokens 40960\n",
                step / 60, step % 60, step, mem, tps, per_gpu);
  return buf;
}

CollectorContext EightDevices() {
  CollectorContext ctx;
  ctx.seq_length = 4096;
  ctx.global_batch_size = 32;
  ctx.devices = 8;
  ctx.peak_tflops_per_device = 989;
  ctx.model_flops_per_token = 6 * 8.0e9;
  return ctx;
}

TEST(NemoAutomodelTest, WholeJobTokensPerDeviceTheFirstStepWarmsUpValidationIsNotAStep) {
  // tp 2 on 8 GPUs: dp 4, so `/gpu` (tps / dp) is twice the per-device figure.
  std::string log = StepLine(0, 20000, 5000, 30.1);  // the loop's start-up
  for (int s = 1; s <= 11; ++s) {
    // Validation every 4 steps: the step after it holds it (the time since the previous step
    // ended), here at half the rate.
    const bool after_validation = s == 5 || s == 9;
    log += StepLine(s, after_validation ? 40000 : 80000, after_validation ? 10000 : 20000,
                    s == 5 ? 44.0 : 40.0 + s % 4);
    if (s % 4 == 0) {
      log += "2025-10-02 11:00:05 | INFO | root | [val] name \"default\" | step " +
             std::to_string(s) + " | epoch 0 | loss 2.1000 | lr 1.00e-05 | num_label_tokens 8192\n";
    }
  }

  auto c = CollectLogWithStepTimes("megatron-bridge", log, EightDevices());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->steps.read, 12);
  EXPECT_EQ(c->steps.warmup_dropped, 1);
  EXPECT_EQ(c->steps.other_lines, 2);  // the [val] lines
  // The whole job's tokens/s over the campaign's 8 devices, not the /gpu figure.
  EXPECT_NEAR(c->metrics.tokens_per_second_per_device, (9 * 80000.0 + 2 * 40000.0) / 11 / 8, 1e-6);
  EXPECT_NEAR(c->metrics.peak_memory_gib, 44.0, 1e-9);
  EXPECT_GT(c->metrics.step_time_seconds, 0);  // derived from tokens/s and the batch shape
  EXPECT_GT(c->metrics.mfu, 0);
  // The steps after validation are not spikes of a flaky node.
  EXPECT_FALSE(health::DetectStepTimeAnomaly(c->step_times, {}, c->warmup_intervals));

  // Without a campaign's device count, Automodel's own per-GPU figure stands in.
  auto bare = CollectLogWithStepTimes("megatron-bridge", log, {});
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_NEAR(bare->metrics.tokens_per_second_per_device, (9 * 20000.0 + 2 * 10000.0) / 11, 1e-6);
  // ... and says what it is.
  ASSERT_FALSE(bare->warnings.empty());
  EXPECT_NE(bare->warnings.back().find("per device only when tp and pp are 1"), std::string::npos);
  for (const auto& w : c->warnings) EXPECT_EQ(w.find("per-GPU figure"), std::string::npos) << w;
}

TEST(NemoAutomodelTest, TheJuly2025FormCountsMicroBatchesAndPrintsRankZerosTokens) {
  // finetune.py of 2025-07: `mem:`, no lr, step in micro-batches (4 accumulation steps), tps rank
  // 0's own tokens since the last line; the first line holds the loop's start.
  const std::string log =
      "INFO:root:Launching job locally on 2 devices\n"
      "INFO:root:step 4 | epoch 0 | loss 1.5514 | grad_norm 102.0000 | mem: 11.66 GiB | tps "
      "6924.50\n"
      "INFO:root:step 8 | epoch 0 | loss 0.7913 | grad_norm 46.2500 | mem: 14.58 GiB | tps "
      "9328.79\n"
      "Saving checkpoint to checkpoints/epoch_0_step_10\n"
      "INFO:root:step 12 | epoch 0 | loss 0.4358 | grad_norm 23.8750 | mem: 15.48 GiB | tps "
      "9068.99\n"
      "INFO:root:step 16 | epoch 0 | loss 0.2057 | grad_norm 12.9375 | mem: 16.47 GiB | tps "
      "9148.28\n";
  CollectorContext two = EightDevices();
  two.devices = 2;
  auto c = CollectLogWithStepTimes("megatron-bridge", log, two);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->steps.warmup_dropped, 1);  // step 4, the first optimizer step
  // Per device as printed (not divided by the devices: it is one rank's own).
  EXPECT_NEAR(c->metrics.tokens_per_second_per_device, (9328.79 + 9068.99 + 9148.28) / 3, 1e-6);
  EXPECT_NEAR(c->metrics.peak_memory_gib, 16.47, 1e-9);
}

TEST(NemoAutomodelTest, AResumedProcessWarmsUpAtItsFirstStepAMidRunQuoteDropsNothing) {
  std::string steps;
  steps += StepLine(100, 30000, 30000, 40.0);  // the resumed process's first step
  for (int s = 101; s <= 105; ++s) steps += StepLine(s, 80000, 80000, 40.0);
  auto resumed = CollectLogWithStepTimes(
      "megatron-bridge", "Loading checkpoint from checkpoints/epoch_0_step_100\n" + steps, {});
  ASSERT_TRUE(resumed.ok()) << resumed.status().ToString();
  EXPECT_EQ(resumed->steps.warmup_dropped, 1);
  EXPECT_NEAR(resumed->metrics.tokens_per_second_per_device, 80000, 1e-6);
  ASSERT_FALSE(resumed->warnings.empty());
  EXPECT_NE(resumed->warnings.back().find("resumes from a checkpoint at step 100"),
            std::string::npos);

  // The same steps quoted from mid-run, with no load line: none is the process's first.
  std::string mid;
  for (int s = 101; s <= 105; ++s) mid += StepLine(s, 80000, 80000, 40.0);
  auto quote = CollectLogWithStepTimes("megatron-bridge", mid, {});
  ASSERT_TRUE(quote.ok()) << quote.status().ToString();
  EXPECT_EQ(quote->steps.warmup_dropped, 0);
}

TEST(NemoAutomodelTest, WithoutAPerGpuFigureOrADeviceCountNoTokensPerDeviceAreGuessed) {
  // 2025-08-18 to 2025-08-28: `tps` of the whole job and no `/gpu`.
  std::string log;
  for (int s = 0; s <= 4; ++s) {
    log += "2025-08-20 10:00:0" + std::to_string(s) + " | INFO | root | step " + std::to_string(s) +
           " | epoch 0 | loss 2.1 | grad_norm 1.1 | lr 1.00e-05 | mem 21.50 GiB | tps 64000.00 | "
           "num_label_tokens 8192\n";
  }
  auto bare = CollectLogWithStepTimes("megatron-bridge", log, {});
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(bare->metrics.tokens_per_second_per_device, 0);
  EXPECT_NEAR(bare->metrics.peak_memory_gib, 21.5, 1e-9);
  auto with_campaign = CollectLogWithStepTimes("megatron-bridge", log, EightDevices());
  ASSERT_TRUE(with_campaign.ok());
  EXPECT_NEAR(with_campaign->metrics.tokens_per_second_per_device, 8000, 1e-9);
}

TEST(NemoAutomodelTest, NeMo2AutoModelBarTpsIsTheWholeJobs) {
  // NeMo 2's HFAutoModelForCausalLM adds `tps=` (summed over the data-parallel ranks) to the
  // Lightning bar beside train_step_timing.
  std::string log;
  for (int s = 0; s <= 5; ++s) {
    log += "Epoch 0: " + std::to_string(s * 10) + "%| | " + std::to_string(s + 1) + "/10 [00:0" +
           std::to_string(s) + "<00:09, 1.01it/s, global_step=" + std::to_string(s) +
           ".000, train_step_timing in s=0.980, reduced_train_loss=2.31, tps=" +
           (s == 0 ? "9000.0" : "16000.0") + ", lr=1e-5]\n";
  }
  auto c = CollectLogWithStepTimes("megatron-bridge", log, EightDevices());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.tokens_per_second_per_device, 2000, 1e-9);
  EXPECT_NEAR(c->metrics.step_time_seconds, 0.98, 1e-9);
}

}  // namespace
}  // namespace paratune::collectors
