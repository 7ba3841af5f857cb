// The whitelisted diagnostic checks of contract section 10: what each check runs on a suspect
// node, and how its output (the real tools' text formats) is parsed and judged. Output is only
// ever parsed, never executed; nothing outside DiagnosticWhitelist() runs, and no text from a
// campaign spec, a user or an LLM reaches a check's command.
//
// Checks:
//   gpu-clocks      nvidia-smi: SM clock vs its max, throttle reasons (HW Slowdown, thermal)
//   ecc-xid         nvidia-smi: uncorrected ECC, remapped-row failures, pending retired pages;
//                   plus NVRM Xid lines from the kernel log when the pod may read it
//   gemm            a fixed PyTorch script: bf16 matmul TFLOPS per GPU vs the catalog peak
//   hbm-bandwidth   a fixed PyTorch script: device-to-device copy GB/s per GPU vs the catalog
//   nccl-allreduce  nccl-tests-format all-reduce between the suspect node and a healthy peer:
//                   bus bandwidth vs the expected inter-node figure
// Pure functions over immutable tables: thread-safe.
#ifndef PARATUNE_AGENTS_HEALTH_DIAGNOSTIC_CHECKS_H_
#define PARATUNE_AGENTS_HEALTH_DIAGNOSTIC_CHECKS_H_

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace paratune::health {

struct CheckSpec {
  std::string name;         // gpu-clocks | ecc-xid | gemm | hbm-bandwidth | nccl-allreduce
  std::string description;  // one line: what a pass proves
  std::string image;        // default image of the real check
  // Fixed argv of the real check. Kubernetes `$(VAR)` references name only variables the Job
  // renderer itself sets (nccl-allreduce: JOB_COMPLETION_INDEX, PARATUNE_DIAG_MASTER); no
  // user- or LLM-written text is ever interpolated.
  std::vector<std::string> command;
  int pods = 1;            // nccl-allreduce: 2 (the suspect node and a healthy peer)
  std::string evidence;    // which suspicion it tests: "compute" | "memory" | "fabric" | "hardware"
  bool needs_gpus = true;  // requests the node's GPUs (all of them: the check covers each)
};

// The whitelist, in a stable order (gpu-clocks, ecc-xid, gemm, hbm-bandwidth, nccl-allreduce).
const std::vector<CheckSpec>& DiagnosticWhitelist();

// The whitelist entry named exactly `name` (case-sensitive, no trimming). Anything else, e.g.
// "gpu-clocks; rm -rf /", gives kNotFound naming the whitelist.
Result<const CheckSpec*> FindCheck(const std::string& name);

// "gpu-clocks, ecc-xid, gemm, hbm-bandwidth, nccl-allreduce".
std::string WhitelistNames();

struct CheckResult {
  std::string check, node;
  bool passed = false;
  // One line for status.nodeHealth.diagnostics[].summary, e.g.
  // "GPU 3 SM clock 990 MHz of 1980 MHz; throttle reasons HW Slowdown".
  std::string summary;
  // What was measured, per GPU where it applies, e.g. {"gpus": [{"index": 3, "smClockMHz": 990,
  // ...}]} or {"busBandwidthGBps": 61.2, "expectedGBps": 360}.
  nlohmann::json measurements;
  // True when the check could not judge the node (its Job failed without output that parses,
  // ran past its deadline, or printed something not in the tool's format): passed is false, but
  // the node is neither cleared nor convicted by it.
  bool inconclusive = false;
};

// Judges a check's output (the real tool's text format). `expected` gives hardware expectations
// (ExpectationsFor(): {"peakTflops", "hbmGBps", "busBandwidthGBps", ...}); a missing expectation
// falls back to judging only what the output itself shows (clock vs max clock, counters).
// Errors: kNotFound for a check outside the whitelist; kInvalidArgument naming the check and the
// line for output that is not in the tool's format (or holds no measurement at all).
Result<CheckResult> InterpretCheckOutput(const std::string& check, const std::string& node,
                                         const std::string& output, const nlohmann::json& expected);

// The checks worth running for a suspicion, from the evidence kinds of health::NodeEvidence
// ("NodeFault", "CollectiveTimeout", "SlowerThanPredicted", "StepTimeDrift", "StepTimeSpikes"),
// deduplicated, in whitelist order. Unknown kinds add nothing; no kinds at all give the cheap
// hardware checks (gpu-clocks, ecc-xid).
std::vector<std::string> ChecksFor(const std::vector<std::string>& evidence_kinds);

// Expectations for `expected` from the accelerator catalog by accelerator name or GKE label
// (e.g. "nvidia-h100-80gb"): {"accelerator", "peakTflops", "hbmGBps", "busBandwidthGBps",
// "gpusPerNode", "minGemmFraction", "minHbmFraction", "minBusFraction", "minClockFraction"}.
// An unknown name gives only the fraction thresholds.
nlohmann::json ExpectationsFor(const std::string& accelerator);

}  // namespace paratune::health

#endif  // PARATUNE_AGENTS_HEALTH_DIAGNOSTIC_CHECKS_H_
