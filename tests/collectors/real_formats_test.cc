// Issue 35: what real frameworks print. Lines follow the frameworks' sources (cited in
// agents/collectors/framework_parsers.cc): multi-rank torchrun output, colour codes, validation
// lines, warm-up by step number, every current and recent format, derived objectives.
#include <gtest/gtest.h>

#include <string>

#include "agents/collectors/metric_collector.h"
#include "agents/health/anomaly.h"

namespace paratune::collectors {
namespace {

CollectorContext Llama8x() {
  CollectorContext ctx;
  ctx.seq_length = 8192;
  ctx.global_batch_size = 64;
  ctx.devices = 8;
  ctx.peak_tflops_per_device = 989;
  ctx.model_flops_per_token = 6 * 8.0e9;
  return ctx;
}

std::string TitanLine(int rank, int step, const char* tps, const char* colour_reset) {
  return "[rank" + std::to_string(rank) + "]:\x1b[31mstep: " + std::to_string(step) +
         "  \x1b[32mloss:  7.1234  \x1b[38;2;54;234;195mmemory: 61.23GiB(77.51%)  \x1b[34mtps: " +
         tps + "  \x1b[36mtflops: 412.30  \x1b[35mmfu: 41.69%" + colour_reset + "\n";
}

TEST(RealFormatsTest, TorchtitanEveryRankColouredWithValidation) {
  std::string log = "[rank0]:[titan] Compiling each TransformerBlock with torch.compile\n";
  for (int step = 1; step <= 10; ++step) {
    for (int rank = 0; rank < 8; ++rank) {
      log += TitanLine(rank, step, step == 1 ? "900" : (rank == 0 ? "4,096" : "4,100"), "\x1b[39m");
    }
    if (step == 5) {
      for (int rank = 0; rank < 8; ++rank) {
        log += "[rank" + std::to_string(rank) +
               "]:\x1b[33mvalidate step:  5  \x1b[32mloss:  7.2  \x1b[34mtps: 5,120\x1b[39m\n";
      }
    }
  }
  auto c = CollectLogWithStepTimes("torchtitan", log, Llama8x());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->steps.read, 10);
  EXPECT_EQ(c->steps.duplicate_rank_lines, 70);
  EXPECT_EQ(c->steps.other_lines, 8);
  EXPECT_EQ(c->steps.warmup_dropped, 1);  // step 1 (it compiles)
  // The mean of the ranks' figures for each step, validation lines left out.
  EXPECT_DOUBLE_EQ(c->metrics.tokens_per_second_per_device, (4096 + 7 * 4100) / 8.0);
  EXPECT_NEAR(c->metrics.mfu, 0.4169, 1e-9);
  EXPECT_EQ(c->sources.at("mfu"), kSourceLog);
  EXPECT_EQ(c->sources.at("stepTimeSeconds"), kSourceDerived);
  // Steps 6-10 follow the validation pass: not judged by the anomaly checks.
  EXPECT_EQ(c->step_times.size(), 5u);
  EXPECT_EQ(c->warmup_intervals, 1u);
  EXPECT_FALSE(health::DetectStepTimeAnomaly(c->step_times, {}, c->warmup_intervals));
}

TEST(RealFormatsTest, TorchtitanBeforeNovember2024PrintsWps) {
  std::string log;
  for (int step = 1; step <= 6; ++step) {
    log += "[titan] 2024-10-01 10:00:00,000 - root - INFO - step: " + std::to_string(step) +
           "  loss:  8.1  memory: 30.50GiB(38.60%)  wps: 3,200  mfu: 30.12%\n";
  }
  auto c = CollectLogWithStepTimes("torchtitan", log, Llama8x());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->metrics.tokens_per_second_per_device, 3200);
  EXPECT_DOUBLE_EQ(c->metrics.peak_memory_gib, 30.5);
  // TFLOP/s: the model's FLOPs per token x tokens/s (the one definition), not MFU x peak.
  EXPECT_NEAR(c->metrics.tflops_per_device, 6 * 8.0e9 * 3200 / 1e12, 1e-9);
  EXPECT_EQ(c->sources.at("tflopsPerDevice"), kSourceDerived);
  EXPECT_EQ(c->sources.at("mfu"), kSourceLog);
}

TEST(RealFormatsTest, MaxTextDispatchArtefactIsWarmupNotDrift) {
  std::string log =
      "completed step: 0, seconds: 40.100, TFLOP/s/device: 5.0, Tokens/s/device: 100.0, "
      "total_weights: 262144, loss: 10.9\n"
      "completed step: 1, seconds: 0.320, TFLOP/s/device: 1900.0, Tokens/s/device: 51200.0, "
      "total_weights: 262144, loss: 10.8\n";
  for (int s = 2; s <= 9; ++s) {
    log += "completed step: " + std::to_string(s) +
           ", seconds: 5.700, TFLOP/s/device: 107.0, Tokens/s/device: 2,874.386, total_weights: "
           "262144, loss: 10.4\n";
  }
  log += "eval metrics after step: 5, loss=10.3, total_weights=262144\n";
  log += "Total estimated memory size: 14.2 GB, estimated output size: 0.5 GB\n";
  auto c = CollectLogWithStepTimes("maxtext", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->metrics.step_time_seconds, 5.7);
  EXPECT_DOUBLE_EQ(c->metrics.tflops_per_device, 107.0);
  EXPECT_DOUBLE_EQ(c->metrics.peak_memory_gib, 14.2);
  EXPECT_EQ(c->warmup_intervals, 2u);
  EXPECT_EQ(c->steps.other_lines, 1);
  EXPECT_FALSE(health::DetectStepTimeAnomaly(c->step_times, {}, c->warmup_intervals));
  // Dropping one interval only (the old rule) sees 0.32 s -> 5.7 s.
  EXPECT_TRUE(health::DetectStepTimeAnomaly(c->step_times, {}, 1));
}

TEST(RealFormatsTest, MaxText2023PrintsTflopsWithoutPerDevice) {
  std::string log;
  for (int s = 0; s <= 6; ++s) {
    log +=
        "completed step: " + std::to_string(s) + ", seconds: 2.517, TFLOP/s: 120.634, loss: 9.2\n";
  }
  log += "Total memory size: 15.8 GB, Output size: 0.5 GB, Temp size: 9.6 GB\n";
  CollectorContext ctx = Llama8x();
  ctx.peak_tflops_per_device = 197;
  auto c = CollectLogWithStepTimes("maxtext", log, ctx);
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->metrics.tflops_per_device, 120.634);
  EXPECT_NEAR(c->metrics.mfu, 120.634 / 197, 1e-12);
  EXPECT_EQ(c->sources.at("mfu"), kSourceDerived);
  EXPECT_DOUBLE_EQ(c->metrics.peak_memory_gib, 15.8);
}

std::string MegatronLine(int it, double ms, bool throughput) {
  char buf[1024];
  std::snprintf(buf, sizeof(buf),
                " [2026-08-01 10:00:00.123456] iteration %8d/     100 | consumed samples: %12d | "
                "elapsed time per iteration (ms): %.1f |%s learning rate: 3.000000E-04 | global "
                "batch size:    64 | lm loss: 7.1E+00 | loss scale: 1.0 | grad norm: 1.2 |\n",
                it, it * 64, ms, throughput ? " throughput per GPU (TFLOP/s/GPU): 412.3 |" : "");
  return buf;
}

TEST(RealFormatsTest, MegatronWithoutLogThroughputDerivesTheObjective) {
  std::string log;
  for (int it = 10; it <= 50; it += 10) log += MegatronLine(it, it == 10 ? 20000 : 5000, false);
  log +=
      "----------------------------------------------------------------------------------------\n"
      " validation loss at iteration 50 on validation set | lm loss value: 6.8E+00 | lm loss "
      "PPL: 9.5E+02 |\n";
  const CollectorContext ctx = Llama8x();
  auto c = CollectLogWithStepTimes("megatron-lm", log, ctx);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->metrics.step_time_seconds, 5.0);
  const double tps = 64.0 * 8192 / 8 / 5.0;
  EXPECT_NEAR(c->metrics.tokens_per_second_per_device, tps, 1e-9);
  EXPECT_NEAR(c->metrics.tflops_per_device, ctx.model_flops_per_token * tps / 1e12, 1e-9);
  EXPECT_NEAR(c->metrics.mfu, c->metrics.tflops_per_device / 989, 1e-12);
  EXPECT_EQ(c->sources.at("stepTimeSeconds"), kSourceLog);
  EXPECT_EQ(c->sources.at("mfu"), kSourceDerived);
  EXPECT_EQ(c->steps.other_lines, 1);
  EXPECT_EQ(MissingObjectiveReason("megatron-lm", *c, ObjectiveMetric::kMfu, ctx), "");
  // Without the model's FLOPs the objective is missing, and the reason says why.
  CollectorContext no_model = ctx;
  no_model.model_flops_per_token = 0;
  auto bare = CollectLogWithStepTimes("megatron-lm", log, no_model);
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->metrics.mfu, 0);
  const std::string why =
      MissingObjectiveReason("megatron-lm", *bare, ObjectiveMetric::kMfu, no_model);
  EXPECT_NE(why.find("--log-throughput"), std::string::npos) << why;
  EXPECT_NE(why.find("FLOPs per token"), std::string::npos) << why;
}

// TFLOP/s the log printed above the campaign's accelerator's peak (a campaign that names an
// H100 for a run on a faster part, here 1,200 TFLOP/s/GPU against 989): the TFLOP/s stay, the
// MFU they would give (1.21) is left out with the reason, and an MFU objective is missing.
TEST(RealFormatsTest, AnMfuOverOneFromPrintedTflopsIsLeftOutWithTheReason) {
  std::string log;
  for (int it = 10; it <= 50; it += 10) {
    log += MegatronLine(it, 5000, false);
    log.insert(log.rfind(" | learning rate"), " | throughput per GPU (TFLOP/s/GPU): 1200.0");
  }
  const CollectorContext ctx = Llama8x();
  auto c = CollectLogWithStepTimes("megatron-lm", log, ctx);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->metrics.tflops_per_device, 1200);
  EXPECT_EQ(c->sources.at("tflopsPerDevice"), "log");
  EXPECT_EQ(c->metrics.mfu, 0);
  EXPECT_EQ(c->sources.count("mfu"), 0u);
  const std::string why = MissingObjectiveReason("megatron-lm", *c, ObjectiveMetric::kMfu, ctx);
  EXPECT_NE(why.find("has no MFU"), std::string::npos) << why;
  EXPECT_NE(why.find("spec.hardware.accelerator"), std::string::npos) << why;
  EXPECT_EQ(MissingObjectiveReason("megatron-lm", *c, ObjectiveMetric::kTflopsPerDevice, ctx), "");
  ASSERT_FALSE(c->warnings.empty());
  EXPECT_NE(c->warnings.back().find("MFU is left out"), std::string::npos);
}

// A campaign whose batch shape is not the run's (its sequence length twice the 8,192 the
// template hard-codes; the log prints the global batch) makes the derived TFLOP/s exceed the
// accelerator's peak: an impossible MFU is never the objective; it is missing, with the reason.
TEST(RealFormatsTest, ADerivedMfuOverOneIsLeftOutWithTheReason) {
  std::string log;
  for (int it = 10; it <= 50; it += 10) log += MegatronLine(it, 5000, false);
  CollectorContext ctx = Llama8x();
  ctx.seq_length = 2 * 8192;
  auto c = CollectLogWithStepTimes("megatron-lm", log, ctx);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->metrics.step_time_seconds, 5.0);
  EXPECT_EQ(c->metrics.tflops_per_device, 0);
  EXPECT_EQ(c->metrics.mfu, 0);
  EXPECT_EQ(c->sources.count("mfu"), 0u);
  EXPECT_EQ(c->sources.count("tflopsPerDevice"), 0u);
  EXPECT_GT(c->metrics.tokens_per_second_per_device, 0);  // the rate the shape gives stays
  const std::string why = MissingObjectiveReason("megatron-lm", *c, ObjectiveMetric::kMfu, ctx);
  EXPECT_NE(why.find("exceed the accelerator's peak (989)"), std::string::npos) << why;
  EXPECT_NE(why.find("spec.training.seqLength"), std::string::npos) << why;
  ASSERT_FALSE(c->warnings.empty());
  EXPECT_NE(c->warnings.back().find("TFLOP/s and MFU are left out"), std::string::npos);
  // The campaign's own shape gives an MFU under 1, kept.
  auto fits = CollectLogWithStepTimes("megatron-lm", log, Llama8x());
  ASSERT_TRUE(fits.ok());
  EXPECT_GT(fits->metrics.mfu, 0);
  EXPECT_LT(fits->metrics.mfu, 1);
  EXPECT_TRUE(fits->implausible_derivation.empty());
}

TEST(RealFormatsTest, MegatronDeepSpeedTflopsCountRecomputation) {
  std::string log;
  for (int it = 1; it <= 5; ++it) {
    log += " iteration " + std::to_string(it) +
           "/ 100 | elapsed time per iteration (ms): 4000.0 | global batch size:    64 | "
           "tokens per gpu per second (tgs): 16384.000 | TFLOPs: 400.00 |\n";
  }
  CollectorContext ctx = Llama8x();
  ctx.model_flops_per_token = 0;
  ctx.recompute = "full";
  auto full = CollectLogWithStepTimes("megatron-lm", log, ctx);
  ASSERT_TRUE(full.ok());
  EXPECT_DOUBLE_EQ(full->metrics.tflops_per_device, 300.0);  // x3/4
  EXPECT_DOUBLE_EQ(full->metrics.tokens_per_second_per_device, 16384);
  EXPECT_FALSE(full->warnings.empty());
  ctx.model_flops_per_token = 6 * 8.0e9;
  auto model = CollectLogWithStepTimes("megatron-lm", log, ctx);
  ASSERT_TRUE(model.ok());
  EXPECT_NEAR(model->metrics.tflops_per_device, 6 * 8.0e9 * 16384 / 1e12, 1e-9);
  EXPECT_EQ(model->sources.at("tflopsPerDevice"), kSourceDerived);
}

// Megatron-LM forks that add a tokens/s field to the iteration line: OpenEuroLLM's per GPU,
// epfLLM's Megatron-LLM for the whole job (its tokens all-reduced over the data-parallel ranks).
TEST(RealFormatsTest, MegatronForksPrintTokensPerSecond) {
  std::string open_euro, epfl;
  for (int it = 10; it <= 40; it += 10) {
    open_euro += " [2026-03-10 10:00:" + std::to_string(it) + "] iteration       " +
                 std::to_string(it) +
                 "/    1000 | consumed samples:         5120 | elapsed time per iteration (ms): "
                 "8000.0 | mem usages: 0.8123 | throughput per GPU (TFLOP/s/GPU): 400.1 | Tokens "
                 "per second per GPU (Tok/s/GPU): 4096.0 | learning rate: 3.000000E-04 | global "
                 "batch size:    32 | lm loss: 2.100000E+00 | loss scale: 1.0 |\n";
    epfl += " iteration       " + std::to_string(it) +
            "/  250000 | consumed samples:        10240 | elapsed time per iteration (ms): 4000.0 "
            "| rate (tokens/sec): 65536.00 | learning rate: 1.500E-07 | global batch size:    32 | "
            "lm loss: 3.198731E+00 | loss scale: 1.0 | grad norm: 10.550 | number of skipped "
            "iterations:   0 | number of nan iterations:   0 |\n";
  }
  // Read without a campaign: nothing to derive tokens/s from, so they are the log's.
  auto per_gpu = CollectLogWithStepTimes("megatron-lm", open_euro, {});
  ASSERT_TRUE(per_gpu.ok()) << per_gpu.status().ToString();
  EXPECT_DOUBLE_EQ(per_gpu->metrics.tokens_per_second_per_device, 4096);
  // The whole job's rate over the campaign's 8 devices; unknown without a device count.
  CollectorContext devices_only;
  devices_only.devices = 8;
  auto whole = CollectLogWithStepTimes("megatron-lm", epfl, devices_only);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  EXPECT_DOUBLE_EQ(whole->metrics.tokens_per_second_per_device, 65536.0 / 8);
  auto bare = CollectLogWithStepTimes("megatron-lm", epfl, {});
  ASSERT_TRUE(bare.ok()) << bare.status().ToString();
  EXPECT_EQ(bare->metrics.tokens_per_second_per_device, 0);
  EXPECT_DOUBLE_EQ(bare->metrics.step_time_seconds, 4.0);
  // Megatron-LM's RL training line (log_rl_throughput_metrics, with sequence packing): the
  // per-GPU tokens/s of batch x seq length, not the compute_ or actual_ twins after it.
  std::string rl;
  for (int it = 10; it <= 40; it += 10) {
    rl += " [2026-05-02 08:00:" + std::to_string(it) + "] iteration       " + std::to_string(it) +
          "/     100 | consumed samples:          640 | elapsed time per iteration (ms): "
          "16000.0 | throughput per GPU (TFLOP/s/GPU): 120.5 | learning rate: 1.000000E-06 | "
          "global batch size:    64 | lm loss: 1.200000E-01 | loss scale: 1.0 | number of "
          "skipped iterations:   0 | number of nan iterations:   0 | toks/s: 32768 | toks/s/gpu: "
          "2048 | compute_toks/s: 30000 | compute_toks/s/gpu: 1875 | actual_toks/s: 21000 | "
          "actual_toks/s/gpu: 1313 | packing_eff: 70.0% | avg_seq_len: 1412.3 |\n";
  }
  auto rl_read = CollectLogWithStepTimes("megatron-lm", rl, {});
  ASSERT_TRUE(rl_read.ok()) << rl_read.status().ToString();
  EXPECT_DOUBLE_EQ(rl_read->metrics.tokens_per_second_per_device, 2048);
}

TEST(RealFormatsTest, MegatronBridgeStepTimeLineAndMemoryInGigabytes) {
  std::string log;
  for (int it = 1; it <= 6; ++it) {
    log += "Step Time : " + std::string(it == 1 ? "9.10" : "5.41") +
           "s GPU utilization: 412.3MODEL_TFLOP/s/GPU\n";
    log += MegatronLine(it, it == 1 ? 9100 : 5410, false);
    if (it == 1) {
      log +=
          "[Rank 0] (after 1 iterations) memory (GB) | mem-allocated-gigabytes: 20.5 | "
          "mem-max-allocated-gigabytes: 60.129 | mem-max-reserved-gigabytes: 62.0\n";
    }
  }
  auto c = CollectLogWithStepTimes("megatron-bridge", log, Llama8x());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->steps.read, 6);
  EXPECT_DOUBLE_EQ(c->metrics.step_time_seconds, 5.41);
  EXPECT_DOUBLE_EQ(c->metrics.tflops_per_device, 412.3);
  EXPECT_EQ(c->sources.at("tflopsPerDevice"), kSourceLog);
  EXPECT_NEAR(c->metrics.peak_memory_gib, 60.129e9 / (1024.0 * 1024 * 1024), 1e-9);
  // Rank 0's pod of a multi-node run: only the Step Time lines.
  std::string rank0;
  for (int i = 0; i < 5; ++i)
    rank0 += "Step Time : 5.41s GPU utilization: 412.3MODEL_TFLOP/s/GPU\n";
  auto r0 = CollectLogWithStepTimes("megatron-bridge", rank0, Llama8x());
  ASSERT_TRUE(r0.ok());
  EXPECT_EQ(r0->steps.read, 5);
  EXPECT_DOUBLE_EQ(r0->metrics.tflops_per_device, 412.3);
}

TEST(RealFormatsTest, NeMoTrainStepTiming) {
  std::string log;
  for (int s = 0; s <= 9; ++s) {
    log += "Training epoch 0, iteration " + std::to_string(s) +
           "/99 | lr: 1.5e-06 | global_batch_size: 64 | global_step: " + std::to_string(s) +
           " | reduced_train_loss: 11.03 | train_step_timing in s: " + (s == 0 ? "30.2" : "3.13") +
           " | consumed_samples: 640\n";
  }
  // NeMo 1's tqdm postfix, redrawn with '\r'.
  log +=
      "Epoch 0: : 100%|##########| 100/100 [10:48<00:00, reduced_train_loss=0.0172, "
      "global_step=9.000, consumed_samples=25600.0, train_step_timing in s=3.130]\r\n";
  auto c = CollectLogWithStepTimes("megatron-bridge", log, Llama8x());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, 3.13, 1e-12);
  EXPECT_NEAR(c->metrics.tokens_per_second_per_device, 64.0 * 8192 / 8 / 3.13, 1e-6);
}

TEST(RealFormatsTest, HuggingFaceTrainerProgressBarAndSummary) {
  std::string log = "  0%|          | 0/100 [00:00<?, ?it/s]";
  for (int s = 1; s <= 100; ++s) {
    log += "\r " + std::to_string(s) + "%|#         | " + std::to_string(s) +
           "/100 [00:" + std::to_string(s) + "<01:00, " + (s < 5 ? "3.10s/it" : "1.25it/s") + "]";
    if (s % 10 == 0) {
      log += "\n{'loss': 2.1, 'grad_norm': 1.3, 'learning_rate': 4e-05, 'epoch': 0.1}\n";
    }
    if (s == 50) {
      log += "{'eval_loss': 2.3, 'eval_runtime': 3.1, 'eval_samples_per_second': 40.1}\n";
      for (int e = 1; e <= 20; ++e) {
        log += "\r " + std::to_string(e * 5) + "%|#   | " + std::to_string(e) +
               "/20 [00:01<00:00, 9.8it/s]";
      }
      log += "\n";
    }
  }
  log +=
      "\n{'train_runtime': 85.2, 'train_samples_per_second': 75.1, "
      "'train_steps_per_second': 1.174, 'train_loss': 2.05, 'epoch': 1.0}\n";
  CollectorContext ctx = Llama8x();
  ctx.seq_length = 2048;
  auto c = CollectLogWithStepTimes("hf-trainer", log, ctx);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.step_time_seconds, 0.8, 1e-9);
  EXPECT_EQ(c->steps.read, 100);
  EXPECT_GE(c->steps.other_lines, 20);  // the evaluation bar and dict
  EXPECT_EQ(c->sources.at("stepTimeSeconds"), kSourceLog);
  // Without a progress bar (disable_tqdm) the summary gives the rates of the whole run.
  auto summary = CollectLogWithStepTimes(
      "hf-trainer",
      "{'train_runtime': 85.2, 'train_samples_per_second': 75.1, 'train_steps_per_second': 1.174,"
      " 'train_loss': 2.05, 'epoch': 1.0}\n",
      ctx);
  ASSERT_TRUE(summary.ok()) << summary.status().ToString();
  EXPECT_NEAR(summary->metrics.step_time_seconds, 1 / 1.174, 1e-9);
  EXPECT_NEAR(summary->metrics.tokens_per_second_per_device, 75.1 * 2048 / 8, 1e-9);
  // JSON lines (a script that prints the contract's lines) still work.
  auto json = CollectLogWithStepTimes(
      "hf-trainer", "{\"step\": 1, \"mfu\": 0.3}\n{\"step\": 2, \"mfu\": 0.4}\n", ctx);
  ASSERT_TRUE(json.ok());
  EXPECT_DOUBLE_EQ(json->metrics.mfu, 0.4);
}

TEST(RealFormatsTest, LauncherPrefixes) {
  std::string log;
  for (int s = 0; s <= 5; ++s) {
    for (int r : {1, 0}) {
      log += std::to_string(r) + ": completed step: " + std::to_string(s) +
             ", seconds: 2.000, TFLOP/s/device: " + (r == 0 ? "100.0" : "101.0") + "\n";
    }
  }
  auto c = CollectLogWithStepTimes("maxtext", log, {});
  ASSERT_TRUE(c.ok());
  EXPECT_DOUBLE_EQ(c->metrics.tflops_per_device, 100.5);  // the mean of the ranks' lines
  EXPECT_EQ(c->steps.duplicate_rank_lines, 6);
}

TEST(RealFormatsTest, NoObjectiveNamesWhatIsMissing) {
  auto c = CollectLogWithStepTimes("maxtext", "completed step: 3, seconds: 2.0\n", {});
  ASSERT_TRUE(c.ok());
  const std::string why = MissingObjectiveReason("maxtext", *c, ObjectiveMetric::kMfu, {});
  EXPECT_NE(why.find("no TFLOP/s or MFU"), std::string::npos) << why;
  EXPECT_NE(why.find("peak TFLOP/s"), std::string::npos) << why;
}

}  // namespace
}  // namespace paratune::collectors
