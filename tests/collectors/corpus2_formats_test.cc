// Issue 35, collection 2 (tests/collectors/corpus, `collection: 2`): what the new dev excerpts
// showed the collectors missing. Lines are quoted from the dev excerpts or follow the framework
// source cited in agents/collectors/framework_parsers.cc.
#include <gtest/gtest.h>

#include <string>

#include "agents/collectors/metric_collector.h"

namespace paratune::collectors {
namespace {

// NeMo 2's StepTimingCallback with log_tokens_per_sec (nemo/utils/exp_manager.py) prints
// tokens_per_sec_per_gpu on the step line (dev excerpt
// nemo2-deeplink-qwen3-tokens-per-sec-per-gpu).
TEST(Corpus2FormatsTest, NeMo2TokensPerSecPerGpuOnTheStepLine) {
  const std::string log =
      "[2025-10-17T11:33:02+08:00] Training epoch 0, iteration 528/999 | lr: 0.0001754 | "
      "global_batch_size: 32 | global_step: 528 | reduced_train_loss: 3.06 | train_step_timing in "
      "s: 2.443 | tokens_per_sec_per_gpu: 6.706e+03 | consumed_samples: 16928 | val_loss: 3.624\n"
      "[2025-10-17T11:33:04+08:00] Training epoch 0, iteration 529/999 | lr: 0.0001749 | "
      "global_batch_size: 32 | global_step: 529 | reduced_train_loss: 3.221 | train_step_timing "
      "in s: 2.127 | tokens_per_sec_per_gpu: 7.702e+03 | consumed_samples: 16960 | val_loss: "
      "3.624\n";
  auto c = CollectLogWithStepTimes("megatron-bridge", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, (2.443 + 2.127) / 2, 1e-9);
  EXPECT_NEAR(c->metrics.tokens_per_second_per_device, (6706.0 + 7702.0) / 2, 1e-9);
  EXPECT_EQ(c->sources.at("tokensPerSecondPerDevice"), kSourceLog);
}

// The run.log of the dev excerpt torchtitan-run230-tp2-fsdp4-logfreq1 (tp=2, dp_shard=4): its
// Trainer init line and steps 1-4 (L40, L48-L50), without the mesh line (L20).
constexpr const char* kRun230Steps =
    "[rank0]:[titan] 2026-05-20 03:18:19,455 - root - INFO - Trainer is initialized with local "
    "batch size 160, global batch size 640, gradient accumulation steps 1, sequence length 128, "
    "total steps 10 (warmup 600)\n"
    "[rank0]:[titan] 2026-05-20 03:18:46,574 - root - INFO - step:  1  loss:  3.11665  "
    "grad_norm: 12.7500  memory: 93.46GiB(52.40%)  tps: 341  tflops: 28.72  mfu: 1.28%\n"
    "[rank0]:[titan] 2026-05-20 03:18:47,745 - root - INFO - step:  2  loss:  2.75107  "
    "grad_norm: 40.7500  memory: 100.35GiB(56.27%)  tps: 8,750  tflops: 737.21  mfu: 32.76%\n"
    "[rank0]:[titan] 2026-05-20 03:18:48,945 - root - INFO - step:  3  loss:  3.05244  "
    "grad_norm: 17.7500  memory: 100.35GiB(56.27%)  tps: 8,529  tflops: 718.59  mfu: 31.94%\n"
    "[rank0]:[titan] 2026-05-20 03:18:50,098 - root - INFO - step:  4  loss:  3.15759  "
    "grad_norm: 48.5000  memory: 100.35GiB(56.27%)  tps: 8,884  tflops: 748.55  mfu: 33.27%\n";

// The run230 steps read with `mesh_line` in front, and their step time when a step is
// 160 x 128 / 2 tokens per device (tp 2).
CollectedMetrics ReadRun230With(const std::string& mesh_line) {
  auto c = CollectLogWithStepTimes("torchtitan", mesh_line + kRun230Steps, {});
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : CollectedMetrics{};
}
double Run230StepTimeAtTp2() {
  const double tokens = 160.0 * 128 / 2;
  return (tokens / 8750 + tokens / 8529 + tokens / 8884) / 3;
}

// torchtitan divides a rank's tokens by the non-data-parallel size (cp x tp x pp) before printing
// tps (components/metrics.py; distributed/parallel_dims.py prints the mesh), so with tp=2 one
// step is local batch x seq / 2 tokens per device. Lines from the run.log of the dev excerpt
// torchtitan-run230-tp2-fsdp4-logfreq1 (its L20, L40, L48-L50).
TEST(Corpus2FormatsTest, TorchtitanTensorParallelDividesTheTokensOfAStep) {
  const CollectedMetrics c = ReadRun230With(
      "[rank0]:[titan] 2026-05-20 03:18:12,856 - root - INFO - Building device mesh with "
      "parallelism: pp=1, dp_replicate=1, dp_shard=4, cp=1, tp=2, ep=1\n");
  EXPECT_NEAR(c.metrics.step_time_seconds, Run230StepTimeAtTp2(), 1e-9);
  EXPECT_NEAR(c.metrics.tokens_per_second_per_device, (8750.0 + 8529 + 8884) / 3, 1e-9);
  // The timestamps agree: 03:18:47.745 -> 03:18:50.098 is 2.353 s for two steps.
  EXPECT_NEAR(c.metrics.step_time_seconds, 2.353 / 2, 0.02);
}

// The dev excerpt torchtitan-run230-tp2-fsdp4-logfreq1 itself: its mesh line (tp=2) is outside
// the quoted lines. Without the mesh (and without a campaign's batch shape) the tokens of a step
// on a device are a guess, so the step time is read from the logger's clock on consecutive step
// lines; with the campaign's shape the tokens are known and the timestamps are not used.
TEST(Corpus2FormatsTest, TorchtitanWithoutTheMeshReadsStepTimeFromTheLinesClock) {
  const std::string log = kRun230Steps;
  auto c = CollectLogWithStepTimes("torchtitan", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // 46.574 -> 47.745 -> 48.945 -> 50.098: steps 2-4 took 1.171, 1.200 and 1.153 s.
  EXPECT_NEAR(c->metrics.step_time_seconds, (50.098 - 46.574) / 3, 1e-6);
  ASSERT_EQ(c->steady_step_times.size(), 3u);
  EXPECT_NEAR(c->steady_step_times[0], 1.171, 1e-6);
  EXPECT_EQ(c->sources.at("stepTimeSeconds"), kSourceLog);
  // Not the tp=1 guess (160 x 128 tokens at ~8,700 tps: about 2.35 s).
  EXPECT_LT(c->metrics.step_time_seconds, 1.3);

  // The campaign's shape (global batch 640 over 8 devices, sequence 128) gives the tokens of a
  // step on a device: 640 x 128 / 8 = 10,240, whatever the clock says.
  CollectorContext ctx;
  ctx.global_batch_size = 640;
  ctx.seq_length = 128;
  ctx.devices = 8;
  auto w = CollectLogWithStepTimes("torchtitan", log, ctx);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_NEAR(w->metrics.step_time_seconds, (10240.0 / 8750 + 10240.0 / 8529 + 10240.0 / 8884) / 3,
              1e-9);
}

// From 2024-04 to 2025-12 torchtitan printed its mesh as `Building N-D device mesh with [names],
// [sizes]`, the dimensions above 1 only (parallel_dims.py build_mesh, pytorch/torchtitan@01f4e502);
// pp x cp x tp of it divides the tokens of a step as the newer line's does.
TEST(Corpus2FormatsTest, TorchtitanMeshLineOf2024And2025) {
  const CollectedMetrics c = ReadRun230With(
      "[rank0]:[titan] 2026-05-20 03:18:12,856 - root - INFO - Building 2-D device mesh with "
      "['dp_shard', 'tp'], [4, 2]\n");
  EXPECT_NEAR(c.metrics.step_time_seconds, Run230StepTimeAtTp2(), 1e-9);
  // cp and pp count too; dp_replicate and dp_shard do not; lists that do not pair are not a mesh.
  const std::string cp_pp =
      "[titan] 2025-03-01 10:00:00,000 - root - INFO - Building 4-D device mesh with ['pp', "
      "'dp_replicate', 'cp', 'tp'], [2, 2, 2, 2]\n"
      "[titan] 2025-03-01 10:00:01,000 - root - INFO - Trainer is initialized with local batch "
      "size 8, global batch size 16, gradient accumulation steps 1, sequence length 1024\n"
      "[titan] 2025-03-01 10:00:05,000 - root - INFO - step:  1  loss: 9.1  tps: 100\n"
      "[titan] 2025-03-01 10:00:06,000 - root - INFO - step:  2  loss: 8.1  tps: 512\n";
  auto m = CollectLogWithStepTimes("torchtitan", cp_pp, {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_NEAR(m->metrics.step_time_seconds, 8.0 * 1024 / 8 / 512, 1e-9);  // 2 s, not the clock's 1
  const std::string unpaired =
      "[titan] 2025-03-01 10:00:00,000 - root - INFO - Building 2-D device mesh with ['dp_shard', "
      "'tp'], [8]\n" +
      cp_pp.substr(cp_pp.find('\n') + 1);
  auto u = CollectLogWithStepTimes("torchtitan", unpaired, {});
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_NEAR(u->metrics.step_time_seconds, 1.0, 1e-9);  // no mesh read: the clock's
}

// torchtitan since 2026-08 (73aed7f6c) budgets tokens: its Trainer line gives a DP rank's tokens
// of one accumulation step (torchtitan/trainer.py), the mesh line divides them as before.
TEST(Corpus2FormatsTest, TorchtitanTokenBudgetTrainerLine) {
  const std::string log =
      "[titan] 2026-08-22 10:00:00,000 - root - INFO - Building device mesh with parallelism: "
      "pp=1, dp_replicate=1, dp_shard=4, cp=1, tp=2, ep=1\n"
      "[titan] 2026-08-22 10:00:01,000 - root - INFO - Trainer is initialized with 8192 tokens "
      "per DP rank, 65536 tokens per train step, gradient accumulation steps 2, maximum context "
      "length 8192, total steps 30 (warmup 2)\n"
      "[titan] 2026-08-22 10:00:05,000 - root - INFO - step:  1  loss: 9.1  tps: 100\n"
      "[titan] 2026-08-22 10:00:08,000 - root - INFO - step:  2  loss: 8.1  tps: 4,096\n";
  auto c = CollectLogWithStepTimes("torchtitan", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // 8192 x 2 tokens of a rank over tp 2: 8192 per device at 4096 tps (the clock says 3 s).
  EXPECT_NEAR(c->metrics.step_time_seconds, 2.0, 1e-9);
}

// A step time derived from tokens/s is the mean of the steps' times: one slow step (the
// profiler's warm-up in the dev excerpt torchtitan-run219-profiler-slow-step8-ansi) counts with
// its real duration, as the timestamps show, not as one tps among many.
TEST(Corpus2FormatsTest, TorchtitanStepTimeIsTheMeanOfTheStepsTimes) {
  std::string log =
      "[rank0]:[titan] 2026-05-20 02:29:17,059 - root - INFO - Trainer is initialized with local "
      "batch size 160, global batch size 1280, gradient accumulation steps 1, sequence length "
      "128, total steps 10 (warmup 600)\n";
  const char* tps[] = {"1,340", "9,548", "10,347", "5,616", "10,439"};
  const double values[] = {1340, 9548, 10347, 5616, 10439};
  for (int i = 0; i < 5; ++i) {
    log += "[rank0]:[titan] 2026-05-20 02:29:31,427 - root - INFO - \x1b[31mstep:  " +
           std::to_string(i + 1) + "  \x1b[32mloss: 12.44558  \x1b[34mtps: " + tps[i] +
           "  \x1b[36mtflops: 112.91  \x1b[35mmfu: 5.02%\x1b[39m\n";
  }
  auto c = CollectLogWithStepTimes("torchtitan", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  double sum = 0;
  for (int i = 1; i < 5; ++i) sum += 20480 / values[i];
  EXPECT_NEAR(c->metrics.step_time_seconds, sum / 4, 1e-9);
  EXPECT_GT(c->metrics.step_time_seconds, 20480 * 4 / (9548.0 + 10347 + 5616 + 10439));
}

// The Trainer's tqdm bar rate is a moving average already: the step time is the latest update's
// (dev excerpt hf-trainer-mshft7-bars-step-runtime-dicts, a fork that adds per-step dicts).
TEST(Corpus2FormatsTest, HuggingFaceBarStepTimeIsTheLatestRate) {
  const std::string log =
      "{'train_step_runtime': 0.6309, 'train_step_samples_per_second': 57.063, 'epoch': 0.98}\n"
      "\n"
      " 98%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u258a| 2086/2120 "
      "[26:01<00:22,  1.49it/s]\n"
      " 98%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u258a| 2087/2120 "
      "[26:02<00:22,  1.48it/s]\n"
      " 98%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u258a| 2088/2120 "
      "[26:03<00:21,  1.47it/s]\n"
      " 99%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u258a| 2089/2120 "
      "[26:03<00:21,  1.45it/s]\n"
      " 99%|\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u2588\u258a| 2090/2120 "
      "[26:04<00:20,  1.43it/s]\n"
      "{'train_step_runtime': 0.6717, 'train_step_samples_per_second': 53.592, 'epoch': 0.99}\n";
  auto c = CollectLogWithStepTimes("hf-trainer", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, 1 / 1.43, 1e-9);
  EXPECT_EQ(c->sources.at("stepTimeSeconds"), kSourceLog);
}

}  // namespace
}  // namespace paratune::collectors
