// What a profiler saw during training (contract section 7), and parsers for what real profilers
// export so users need not write the JSON by hand:
//   summary        contract section 7 JSON (default)
//   pytorch-table  torch.profiler `prof.key_averages().table(...)` text
//   pytorch-trace  torch.profiler `export_chrome_trace` JSON (kernel events, ProfilerStep#)
//   nsys-csv       `nsys stats --report cuda_gpu_kern_sum --format csv` (Nsight Systems)
//   xla-op-profile TensorBoard profile plugin op_profile JSON (TPU/XLA), optionally wrapped as
//                  {"opProfile": {...}, "overview": {...}} with the overview page's numbers
// All parsers are pure functions: thread-safe, errors are kInvalidArgument naming the field or
// line.
#ifndef PARATUNE_AGENTS_KNOWLEDGE_PROFILE_H_
#define PARATUNE_AGENTS_KNOWLEDGE_PROFILE_H_

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "base/status.h"

namespace paratune {

struct ProfileOp {
  std::string name;
  // all-reduce | all-gather | reduce-scatter | all-to-all | collective-permute | matmul |
  // attention | fusion | copy | custom
  std::string category = "custom";
  double time_fraction = 0;  // of the profiled device time
  // compute | hbm | vmem | ici | dcn | unknown
  std::string bottleneck = "unknown";
  double flops_utilization = 0;          // 0..1 of peak, 0 when unknown
  double hbm_bandwidth_utilization = 0;  // 0..1 of peak, 0 when unknown

  bool IsCollective() const;
};

struct ProfileSummary {
  double step_time_seconds = 0;       // 0: unknown
  double device_duty_cycle = 0;       // 0..1; 0: unknown
  double communication_fraction = 0;  // of step time
  double hbm_peak_fraction = 0;       // peak HBM / capacity; 0: unknown
  std::vector<ProfileOp> top_ops;     // most time first
  Config config;                      // the configuration profiled (may be empty)

  nlohmann::json ToJson() const;
};

// Category of a kernel/op name ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL" -> all-reduce,
// "sm90_xmma_gemm_bf16..." -> matmul, "flash_fwd_kernel" -> attention).
std::string CategorizeOpName(const std::string& name);

Result<ProfileSummary> ProfileFromJson(const nlohmann::json& j);
const std::vector<std::string>& ProfileFormats();
// Parses `text` in `format` (one of ProfileFormats()).
Result<ProfileSummary> ParseProfile(const std::string& text, const std::string& format);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_PROFILE_H_
