// libFuzzer target: the termination message a trial container writes
// (`{"metrics": {...}, "stepTimesSeconds": [...]}`), parsed by ParseTerminationMessage and
// TrialMetrics::FromJson. Any bytes give metrics or a Status naming the field.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "agents/collectors/metric_collector.h"

namespace pc = paratune::collectors;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view message(reinterpret_cast<const char*>(data), size);
  auto m = pc::ParseTerminationMessage(message);
  if (m.ok()) {
    (void)m->ToJson().dump();
    (void)m->Objective(paratune::ObjectiveMetric::kStepTimeSeconds);
  }
  auto c = pc::CollectTrialMetricsWithStepTimes("json", message, "", {});
  if (c.ok() && c->step_times.size() > pc::kMaxStepTimes) __builtin_trap();
  return 0;
}
