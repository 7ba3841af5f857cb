#include "agents/collectors/metric_collector.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace paratune::collectors {
namespace {

std::string MegatronLine(int it, double ms, double tflops) {
  char buf[2048];  // %.1f of a huge double takes over 300 characters
  std::snprintf(buf, sizeof(buf),
                " [2026-11-21 05:40:01] iteration %7d/     100 | consumed samples:         5120 | "
                "elapsed time per iteration (ms): %.1f | throughput per GPU (TFLOP/s/GPU): %.1f | "
                "learning rate: 3.000000E-04 | global batch size:   512 | lm loss: 7.123456E+00 | "
                "loss scale: 1.0 | grad norm: 1.234 | number of skipped iterations:   0 | "
                "number of nan iterations:   0 |\n",
                it, ms, tflops);
  return buf;
}

CollectorContext Llama8x() {
  CollectorContext ctx;
  ctx.seq_length = 8192;
  ctx.global_batch_size = 512;
  ctx.devices = 8;
  ctx.peak_tflops_per_device = 989;
  return ctx;
}

TEST(MetricCollectorTest, MegatronSkipsWarmupAndAverages) {
  std::string log = "building model...\n";
  log += MegatronLine(10, 30000.0, 100.0);  // warm-up: compile and allocator growth
  log +=
      "[Rank 0] (after 10 iterations) memory (MB) | allocated: 41234.56 | max allocated: "
      "61440.00 | reserved: 63000.00 | max reserved: 63000.00\n";
  for (int it = 20; it <= 50; it += 10) log += MegatronLine(it, 9000.0 + it, 400.0 + it / 10);
  auto m = CollectFromLog("megatron-lm", log, Llama8x());
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_NEAR(m->tflops_per_device, (402 + 403 + 404 + 405) / 4.0, 1e-9);
  EXPECT_NEAR(m->step_time_seconds, 9.035, 1e-9);
  EXPECT_NEAR(m->peak_memory_gib, 60.0, 1e-9);
  EXPECT_NEAR(m->avg_memory_gib, 41234.56 / 1024, 1e-9);
  EXPECT_NEAR(m->mfu, m->tflops_per_device / 989, 1e-9);
  EXPECT_NEAR(m->tokens_per_second_per_device, 512.0 * 8192 / 8 / 9.035, 1e-6);
}

// Megatron-DeepSpeed's training_log (bigscience-workshop/Megatron-DeepSpeed megatron/training.py):
// the same line in seconds, with "TFLOPs:" for the FLOP rate.
TEST(MetricCollectorTest, MegatronDeepSpeedLineInSeconds) {
  std::string log;
  for (int it = 1; it <= 5; ++it) {
    char buf[640];
    std::snprintf(buf, sizeof(buf),
                  " iteration %8d/   95000 | consumed samples:         %d | consumed tokens: "
                  "%d | elapsed time per iteration (s): %.2f | learning rate: 6.000E-05 | "
                  "global batch size:  2048 | lm loss: 1.234567E+01 | grad norm: 12.345 | number "
                  "of skipped iterations:   0 | number of nan iterations:   0 | samples per "
                  "second: 16.931 | TFLOPs: %.2f |\n",
                  it, it * 2048, it * 2048 * 2048, it == 1 ? 300.0 : 120.96, 136.20);
    log += buf;
  }
  CollectorContext ctx;
  ctx.seq_length = 2048;
  ctx.global_batch_size = 2048;
  ctx.devices = 384;
  ctx.peak_tflops_per_device = 312;
  auto m = CollectFromLog("megatron-lm", log, ctx);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_NEAR(m->step_time_seconds, 120.96, 1e-9);
  EXPECT_NEAR(m->tflops_per_device, 136.20, 1e-9);
  EXPECT_NEAR(m->tokens_per_second_per_device, 2048.0 * 2048 / 384 / 120.96, 1e-6);
}

TEST(MetricCollectorTest, MaxText) {
  std::string log;
  log +=
      "completed step: 0, seconds: 40.100, TFLOP/s/device: 5.0, Tokens/s/device: 100.0, "
      "total_weights: 262144, loss: 10.9\n";
  log +=
      "Total memory size: 15.8 GB, Output size: 0.5 GB, Temp size: 9.6 GB, Argument size: "
      "5.7 GB, Host temp size: 0.0 GB.\n";
  for (int s = 1; s <= 10; ++s) {
    log += "completed step: " + std::to_string(s) + ", seconds: " + (s == 1 ? "5.000" : "2.500") +
           ", TFLOP/s/device: " + (s == 1 ? "60.000" : "120.000") +
           ", Tokens/s/device: 3,255.461, total_weights: 262144, loss: 10.432\n";
  }
  auto m = CollectFromLog("maxtext", log, {});
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  // Step 0 and the first fifth of the rest (step 1 and 2) are warm-up.
  EXPECT_NEAR(m->step_time_seconds, 2.5, 1e-9);
  EXPECT_NEAR(m->tflops_per_device, 120.0, 1e-9);
  EXPECT_NEAR(m->tokens_per_second_per_device, 3255.461, 1e-9);
  // MaxText prints bytes / 1024**3 and calls it "GB" (max_utils.print_compiled_memory_stats).
  EXPECT_NEAR(m->peak_memory_gib, 15.8, 1e-9);
  EXPECT_EQ(m->mfu, 0.0);  // no peak given: not invented
}

TEST(MetricCollectorTest, Torchtitan) {
  std::string log;
  log += "step:  1  loss: 12.1  memory: 40.00GiB(50.00%)  tps: 900  tflops: 100.00  mfu: 10.00%\n";
  for (int s = 2; s <= 6; ++s) {
    log += "step: " + std::to_string(s) +
           "  loss:  7.1234  memory: 61.23GiB(77.51%)  tps: 3,255  tflops: 412.30  mfu: 41.69%\n";
  }
  auto m = CollectFromLog("torchtitan", log, Llama8x());
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(m->mfu, 0.4169, 1e-9);
  EXPECT_NEAR(m->tokens_per_second_per_device, 3255, 1e-9);
  EXPECT_NEAR(m->tflops_per_device, 412.3, 1e-9);
  EXPECT_NEAR(m->peak_memory_gib, 61.23, 1e-9);
  EXPECT_NEAR(m->step_time_seconds, 512.0 * 8192 / 8 / 3255, 1e-6);
}

TEST(MetricCollectorTest, JsonLines) {
  std::string log =
      "{\"step\": 1, \"mfu\": 0.1}\nnot json\n{\"step\": 2, \"mfu\": 0.4, \"peakMemoryGiB\": 70}\n"
      "{\"step\": 3, \"mfu\": 0.5, \"stepTimeSeconds\": 2.0}\n";
  auto m = CollectFromLog("json", log, {});
  ASSERT_TRUE(m.ok());
  EXPECT_NEAR(m->mfu, 0.45, 1e-9);
  EXPECT_NEAR(m->step_time_seconds, 2.0, 1e-9);
  EXPECT_NEAR(m->peak_memory_gib, 70, 1e-9);
}

TEST(MetricCollectorTest, TerminationMessageWinsOverLog) {
  std::string msg =
      R"({"metrics": {"mfu": 0.52, "tflopsPerDevice": 162.1, "tokensPerSecondPerDevice": 3100.0,)"
      R"( "stepTimeSeconds": 9.1, "peakMemoryGiB": 61.2, "avgMemoryGiB": 55.0}})";
  auto m = CollectTrialMetrics("megatron-lm", msg, MegatronLine(10, 1000, 1), Llama8x());
  ASSERT_TRUE(m.ok());
  EXPECT_DOUBLE_EQ(m->mfu, 0.52);
  EXPECT_DOUBLE_EQ(m->avg_memory_gib, 55.0);
  // A log tail in the termination message (FallbackToLogsOnError) is parsed as a log.
  auto tail = CollectTrialMetrics("megatron-lm", MegatronLine(10, 2000, 300), "", Llama8x());
  ASSERT_TRUE(tail.ok()) << tail.status().ToString();
  EXPECT_DOUBLE_EQ(tail->tflops_per_device, 300);
}

TEST(MetricCollectorTest, ErrorsSayWhatIsWrong) {
  EXPECT_EQ(CollectFromLog("megatron-lm", "Traceback: CUDA out of memory", {}).status().code(),
            StatusCode::kNotFound);
  auto unknown = CollectFromLog("nemo", "", {});
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("spec.metrics.collector"), std::string::npos);
  auto bad = ParseTerminationMessage(R"({"metrics": {"mfu": "high"}})");
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseTerminationMessage("").status().code(), StatusCode::kNotFound);
}

TEST(MetricCollectorTest, NumberAfter) {
  double v = 0;
  EXPECT_TRUE(NumberAfter("tps: 3,255  tflops", "tps:", &v));
  EXPECT_DOUBLE_EQ(v, 3255);
  EXPECT_TRUE(NumberAfter("lm loss: 7.123456E+00 |", "lm loss", &v));
  EXPECT_DOUBLE_EQ(v, 7.123456);
  EXPECT_FALSE(NumberAfter("loss: nan", "loss", &v));
  EXPECT_FALSE(NumberAfter("nothing here", "tps", &v));
}

TEST(MetricCollectorTest, MegatronStepTimesPerLoggedInterval) {
  std::string log = MegatronLine(10, 30000.0, 100.0);
  log += "[Rank 0] (after 10 iterations) memory (MB) | allocated: 1 | max allocated: 2\n";
  for (int it = 20; it <= 50; it += 10) log += MegatronLine(it, 9000.0 + it, 400.0);
  auto c = CollectLogWithStepTimes("megatron-lm", log, Llama8x());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->step_times, (std::vector<double>{30.0, 9.02, 9.03, 9.04, 9.05}));
  EXPECT_EQ(c->steady_step_times, (std::vector<double>{9.02, 9.03, 9.04, 9.05}));
  EXPECT_NEAR(c->metrics.step_time_seconds, 9.035, 1e-9);
}

TEST(MetricCollectorTest, MaxTextJsonAndTorchtitanStepTimes) {
  std::string maxtext;
  for (int s = 0; s <= 5; ++s) {
    maxtext += "completed step: " + std::to_string(s) + ", seconds: " + std::to_string(2 + s) +
               ".500, TFLOP/s/device: 120.0, Tokens/s/device: 3255.461, loss: 10.4\n";
  }
  auto mt = CollectLogWithStepTimes("maxtext", maxtext, {});
  ASSERT_TRUE(mt.ok());
  EXPECT_EQ(mt->step_times, (std::vector<double>{2.5, 3.5, 4.5, 5.5, 6.5, 7.5}));
  // Step 0 and one more (a fifth of five, at least one) are warm-up.
  EXPECT_EQ(mt->steady_step_times, (std::vector<double>{4.5, 5.5, 6.5, 7.5}));

  auto js =
      CollectLogWithStepTimes("json",
                              "{\"step\": 1, \"stepTimeSeconds\": 3}\n{\"step\": 2, \"mfu\": 0.4}\n"
                              "{\"step\": 3, \"stepTimeSeconds\": 2.5}\n",
                              {});
  ASSERT_TRUE(js.ok());
  EXPECT_EQ(js->step_times, (std::vector<double>{3.0, 2.5}));  // the line without time is skipped

  // torchtitan prints tokens/s only: time = gbs * seq / devices / tps, when the shape is known.
  std::string tt =
      "step: 1  loss: 7.1  memory: 61.23GiB(77.51%)  tps: 4,096  mfu: 41.69%\n"
      "step: 2  loss: 7.0  memory: 61.23GiB(77.51%)  tps: 2,048  mfu: 20.00%\n";
  auto titan = CollectLogWithStepTimes("torchtitan", tt, Llama8x());
  ASSERT_TRUE(titan.ok());
  EXPECT_EQ(titan->step_times, (std::vector<double>{128.0, 256.0}));
  auto unknown_shape = CollectLogWithStepTimes("torchtitan", tt, {});
  ASSERT_TRUE(unknown_shape.ok());
  EXPECT_TRUE(unknown_shape->step_times.empty());
}

TEST(MetricCollectorTest, StepTimesBesideATerminationMessage) {
  std::string msg = R"({"metrics": {"mfu": 0.52, "stepTimeSeconds": 9.1}})";
  std::string log = MegatronLine(10, 9000, 400) + MegatronLine(20, 9500, 400);
  // The message gives the metrics, the log the step times.
  auto c = CollectTrialMetricsWithStepTimes("megatron-lm", msg, log, Llama8x());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_DOUBLE_EQ(c->metrics.mfu, 0.52);
  EXPECT_EQ(c->step_times, (std::vector<double>{9.0, 9.5}));
  // Without a log the message's own array is used, warm-up (a fifth, at least one) dropped.
  auto listed = CollectTrialMetricsWithStepTimes(
      "megatron-lm", R"({"metrics": {"mfu": 0.5}, "stepTimesSeconds": [20, 9, 9.1, 9.2, 12]})", "",
      Llama8x());
  ASSERT_TRUE(listed.ok()) << listed.status().ToString();
  EXPECT_EQ(listed->step_times, (std::vector<double>{20, 9, 9.1, 9.2, 12}));
  EXPECT_EQ(listed->steady_step_times, (std::vector<double>{9, 9.1, 9.2, 12}));
  auto bad = CollectTrialMetricsWithStepTimes(
      "megatron-lm", R"({"metrics": {"mfu": 0.5}, "stepTimesSeconds": [1, "x"]})", "", {});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("stepTimesSeconds"), std::string::npos);
  // A log tail in the message (FallbackToLogsOnError) gives both.
  auto tail = CollectTrialMetricsWithStepTimes("megatron-lm", log, "", Llama8x());
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->step_times.size(), 2u);
  // Metrics but no time anywhere: metrics, and no step times.
  auto none = CollectTrialMetricsWithStepTimes("megatron-lm", msg, "", Llama8x());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->step_times.empty());
}

TEST(MetricCollectorTest, StepTimesAreBounded) {
  std::string log;
  for (size_t i = 1; i <= kMaxStepTimes + 5; ++i) {
    log += "completed step: " + std::to_string(i) + ", seconds: " + std::to_string(i) + "\n";
  }
  auto c = CollectLogWithStepTimes("maxtext", log, {});
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->step_times.size(), kMaxStepTimes);
  EXPECT_EQ(c->step_times.back(), static_cast<double>(kMaxStepTimes + 5));  // the tail is kept
}

// Found by collector_fuzzer: a step number beyond int64 was converted (undefined behaviour), and
// huge logged values summed to inf (status JSON would get null).
TEST(MetricCollectorTest, GarbledNumbersStayFinite) {
  std::string log =
      "completed step: 2.2e54, seconds: 1e308, TFLOP/s/device: 1e308, Tokens/s/device: 1e308\n"
      "completed step: 3, seconds: 1e308, TFLOP/s/device: 1e308, Tokens/s/device: 1e-300\n"
      "completed step: 4, seconds: 1e308, TFLOP/s/device: 1e308, Tokens/s/device: 1e308\n";
  for (const auto& collector : CollectorNames()) {
    auto c = CollectLogWithStepTimes(collector, log + MegatronLine(1, 1e300, 1e300), Llama8x());
    if (!c.ok()) continue;
    for (double v : {c->metrics.mfu, c->metrics.tflops_per_device, c->metrics.step_time_seconds,
                     c->metrics.tokens_per_second_per_device, c->metrics.avg_memory_gib}) {
      EXPECT_TRUE(std::isfinite(v)) << collector;
    }
    for (double t : c->step_times) EXPECT_LE(t, 1e7) << collector;
  }
  auto mt = CollectFromLog("maxtext", log, {});
  ASSERT_TRUE(mt.ok());
  EXPECT_NEAR(mt->tflops_per_device, 1e308, 1e293);  // the mean of huge values, not inf
  auto megatron = CollectFromLog("megatron-lm",
                                 " iteration 1e300/ 100 | elapsed time per "
                                 "iteration (ms): 5000 | global batch size: 9e40 |\n",
                                 Llama8x());
  ASSERT_TRUE(megatron.ok());
  EXPECT_DOUBLE_EQ(megatron->step_time_seconds, 5.0);
}

}  // namespace
}  // namespace paratune::collectors
