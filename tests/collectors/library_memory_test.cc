// Issue 35, "memory read wherever the line prints it": the memory lines of the libraries beneath
// a framework. The Hugging Face Trainer prints memory only through its memory tracker
// (skip_memory_metrics=False; TrainerMemoryTracker in src/transformers/trainer_utils.py,
// metrics_format in trainer_pt_utils.py); DeepSpeed, beneath Megatron-DeepSpeed and the Trainer,
// through its throughput timer (ThroughputTimer.stop in deepspeed/utils/timer.py). Lines follow
// those format strings (cited in agents/collectors/framework_parsers.cc).
#include <gtest/gtest.h>

#include <string>

#include "agents/collectors/metric_collector.h"

namespace paratune::collectors {
namespace {

// A Trainer run of 20 optimizer steps: the tqdm bar (0.5 s/it) and the logging dicts.
std::string TrainerBar() {
  std::string log = "  0%|          | 0/20 [00:00<?, ?it/s]";
  for (int s = 1; s <= 20; ++s) {
    log += "\r " + std::to_string(s * 5) + "%|#    | " + std::to_string(s) + "/20 [00:0" +
           std::to_string(s % 10) + "<00:05,  2.00it/s]";
    if (s % 10 == 0) log += "\n{'loss': 2.1, 'learning_rate': 4e-05, 'epoch': 0.5}\n";
  }
  return log + "\n";
}

TEST(LibraryMemoryTest, TheTrainersMemoryTrackerGivesThePeakOfTraining) {
  // before_init 0 (the model still on the CPU), building the Trainer moved 1.0 GiB of weights to
  // the device, train() ended 2.5 GiB above its start (optimizer states, gradients) and peaked
  // 6.0 GiB above its end: the peak allocated while training is 9.5 GiB.
  const std::string dict =
      "{'train_runtime': 12.1, 'train_samples_per_second': 13.2, 'train_steps_per_second': 1.65, "
      "'total_flos': 1.2e+15, 'train_loss': 2.05, 'init_mem_cpu_alloc_delta': 52428800, "
      "'init_mem_gpu_alloc_delta': 1073741824, 'init_mem_cpu_peaked_delta': 0, "
      "'init_mem_gpu_peaked_delta': 0, 'train_mem_cpu_alloc_delta': 1048576, "
      "'train_mem_gpu_alloc_delta': 2684354560, 'train_mem_cpu_peaked_delta': 0, "
      "'train_mem_gpu_peaked_delta': 6442450944, 'before_init_mem_cpu': 2147483648, "
      "'before_init_mem_gpu': 0, 'epoch': 1.0}\n";
  auto c = CollectLogWithStepTimes("hf-trainer", TrainerBar() + dict, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.peak_memory_gib, 9.5, 1e-9);
  EXPECT_NEAR(c->metrics.step_time_seconds, 0.5, 1e-9);  // the bar, as before
  EXPECT_NEAR(MemoryFromLog("hf-trainer", dict).peak_gib, 9.5, 1e-9);

  // Trainer.log_metrics's block after it: every `_mem_` metric as `v >> 20` MB, keys sorted, one
  // per line (the run also allocated 512 MiB before the Trainer was built).
  const std::string block =
      "***** train metrics *****\n"
      "  before_init_mem_cpu        =     2048MB\n"
      "  before_init_mem_gpu        =      512MB\n"
      "  epoch                      =        1.0\n"
      "  init_mem_cpu_alloc_delta   =       50MB\n"
      "  init_mem_gpu_alloc_delta   =     1024MB\n"
      "  init_mem_cpu_peaked_delta  =        0MB\n"
      "  init_mem_gpu_peaked_delta  =        0MB\n"
      "  train_loss                 =       2.05\n"
      "  train_mem_cpu_alloc_delta  =        1MB\n"
      "  train_mem_cpu_peaked_delta =        0MB\n"
      "  train_mem_gpu_alloc_delta  =     2560MB\n"
      "  train_mem_gpu_peaked_delta =     6144MB\n"
      "  train_runtime              = 0:00:12.10\n"
      "  train_samples_per_second   =       13.2\n"
      "  train_steps_per_second     =       1.65\n";
  EXPECT_NEAR(MemoryFromLog("hf-trainer", block).peak_gib, 10.0, 1e-9);

  // A second train() in the same process reports no before_init / init metrics (the tracker
  // reports them once): without the memory held before train() started there is no peak.
  EXPECT_EQ(MemoryFromLog("hf-trainer",
                          "{'train_runtime': 12.1, 'train_steps_per_second': 1.65, "
                          "'train_loss': 2.0, 'train_mem_gpu_alloc_delta': 0, "
                          "'train_mem_gpu_peaked_delta': 6442450944, 'epoch': 2.0}\n")
                .peak_gib,
            0);
  // Evaluation's memory metrics are not training's.
  EXPECT_EQ(MemoryFromLog("hf-trainer",
                          "{'eval_loss': 2.3, 'eval_mem_gpu_alloc_delta': 0, "
                          "'eval_mem_gpu_peaked_delta': 1073741824, 'epoch': 1.0}\n")
                .peak_gib,
            0);
}

TEST(LibraryMemoryTest, DeepSpeedsThroughputTimerGivesRankZerosPeak) {
  // The Trainer with DeepSpeed (steps_per_print 10): DeepSpeed's line every 10 steps, GB being
  // bytes / 1024**3. The largest is the peak.
  std::string log = TrainerBar();
  log +=
      "[2024-03-07 15:27:02,646] [INFO] [timer.py:260:stop] epoch=0/micro_step=10/global_step=10, "
      "RunningAvgSamplesPerSec=58.73, CurrSamplesPerSec=61.35, MemAllocated=6.01GB, "
      "MaxMemAllocated=19.52GB\n"
      "[2024-03-07 15:27:17,188] [INFO] [timer.py:260:stop] epoch=0/micro_step=20/global_step=20, "
      "RunningAvgSamplesPerSec=58.73, CurrSamplesPerSec=58.75, MemAllocated=6.01GB, "
      "MaxMemAllocated=19.61GB\n";
  auto c = CollectLogWithStepTimes("hf-trainer", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.peak_memory_gib, 19.61, 1e-9);
  // Before 2022-11 the line began with `epoch/micro_step`.
  EXPECT_NEAR(MemoryFromLog("megatron-lm",
                            "[2022-10-28 23:49:36,926] [INFO] [timer.py:198:stop] 0/80, "
                            "RunningAvgSamplesPerSec=407.05, CurrSamplesPerSec=328.27, "
                            "MemAllocated=1.64GB, MaxMemAllocated=5.66GB\n")
                  .peak_gib,
              5.66, 1e-9);
}

TEST(LibraryMemoryTest, TheFrameworksOwnMemoryLineComesFirst) {
  // Megatron-DeepSpeed prints Megatron's report_memory after its first logged interval, on each
  // rank of the first pipeline stage; DeepSpeed's timer line is rank 0's and comes later. The
  // framework's own line is the reading; the library's only stands in for a missing one.
  const std::string log =
      " iteration       10/     100 | consumed samples:          640 | elapsed time per iteration "
      "(ms): 1500.0 | learning rate: 1.000E-04 | global batch size:    64 | lm loss: 7.1E+00 | "
      "loss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n"
      "[Rank 0] (after 10 iterations) memory (MB) | allocated: 4864.0 | max allocated: "
      "14024.7 | reserved: 15000.0 | max reserved: 15000.0\n"
      "[2024-04-21 02:46:10,722] [INFO] [timer.py:260:stop] epoch=0/micro_step=20/global_step=20,"
      " RunningAvgSamplesPerSec=74.68, CurrSamplesPerSec=74.68, MemAllocated=4.75GB, "
      "MaxMemAllocated=15.59GB\n"
      " iteration       20/     100 | consumed samples:         1280 | elapsed time per iteration "
      "(ms): 1500.0 | learning rate: 1.000E-04 | global batch size:    64 | lm loss: 6.9E+00 | "
      "loss scale: 1.0 | number of skipped iterations:   0 | number of nan iterations:   0 |\n";
  auto c = CollectLogWithStepTimes("megatron-lm", log, {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_NEAR(c->metrics.peak_memory_gib, 14024.7 / 1024, 1e-9);
  EXPECT_NEAR(MemoryFromLog("megatron-lm", log).peak_gib, 14024.7 / 1024, 1e-9);
}

}  // namespace
}  // namespace paratune::collectors
