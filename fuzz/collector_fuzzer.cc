// libFuzzer target: a training log through every metric collector (megatron-lm, maxtext,
// torchtitan, json) and the termination-message fallback. Logs are written by arbitrary
// training code, so any text must give metrics or a Status: no crash, no undefined behaviour
// (numbers too large for an int), no unbounded growth.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "agents/collectors/metric_collector.h"

namespace pc = paratune::collectors;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view log(reinterpret_cast<const char*>(data), size);
  pc::CollectorContext shaped;
  shaped.seq_length = 8192;
  shaped.global_batch_size = 512;
  shaped.devices = 8;
  shaped.peak_tflops_per_device = 989;
  for (const std::string& collector : pc::CollectorNames()) {
    for (const pc::CollectorContext& ctx : {pc::CollectorContext{}, shaped}) {
      auto m = pc::CollectLogWithStepTimes(collector, log, ctx);
      if (!m.ok()) continue;
      // Bounded, and every metric a finite number (status JSON has no inf or NaN).
      if (m->step_times.size() > pc::kMaxStepTimes) __builtin_trap();
      for (double v : {m->metrics.mfu, m->metrics.tflops_per_device, m->metrics.step_time_seconds,
                       m->metrics.tokens_per_second_per_device, m->metrics.peak_memory_gib,
                       m->metrics.avg_memory_gib}) {
        if (!std::isfinite(v)) __builtin_trap();
      }
    }
  }
  // The log as a FallbackToLogsOnError termination message, with and without a full log.
  (void)pc::CollectTrialMetricsWithStepTimes("megatron-lm", log, "", shaped);
  (void)pc::CollectTrialMetrics("json", log, log, shaped);
  double v = 0;
  (void)pc::NumberAfter(log, "seconds", &v);
  return 0;
}
