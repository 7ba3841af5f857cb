// Framework-style log text for simulated trials: Megatron-LM, torchtitan and MaxText progress
// lines in the exact formats the metric collectors parse (docs: brief formats.md), and the real
// error texts (Python tracebacks ending in the error) that failed pods print. Pure text builders.
#ifndef PARATUNE_AGENTS_SIM_FRAMEWORK_LOG_H_
#define PARATUNE_AGENTS_SIM_FRAMEWORK_LOG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/model/parallel_plan.h"
#include "agents/model/workload.h"

namespace paratune::sim {

// "2026-11-21 05:40:01" (UTC) for unix seconds.
std::string FormatUtc(double unix_seconds);
// Python logging's asctime, as torchtitan's logger prints it: "2026-11-21 05:40:01,250".
std::string FormatAsctime(double unix_seconds);

// Startup banner before training (arguments, model size, mesh; torchtitan's Trainer line names
// the run's `total_steps`).
std::string StartupLog(const Workload& w, const ParallelPlan& p, double unix_seconds,
                       int64_t total_steps);

struct IterationStats {
  int64_t iteration = 0, total = 0;
  double unix_seconds = 0;
  double step_seconds = 0;
  double model_tflops = 0;
  double tokens_per_second = 0;
  double loss = 0;
  double grad_norm = 0;
  double memory_gib = 0, capacity_gib = 0;
  double mfu = 0;
};
// One progress line in the workload's framework format (megatron-lm, torchtitan, maxtext).
std::string IterationLine(const Workload& w, const ParallelPlan& p, const IterationStats& s);

// Megatron's "[Rank 0] (after N iterations) memory (MB)" line, or MaxText's compiled memory
// stats line; "" for torchtitan (memory is on every step line).
std::string MemoryLine(const Workload& w, int64_t after_iterations, double allocated_gib,
                       double peak_gib, double reserved_gib, double argument_gib);

// Where one pod sits in a multi-pod trial: its node rank (the Indexed Job's completion index,
// JOB_COMPLETION_INDEX; torchrun's NODE_RANK, JAX's process id) of `nodes` pods.
struct RankView {
  int64_t node_rank = 0;
  int64_t nodes = 1;
};

// Whether the pod at `v` prints `line` of the whole trial's log, as the framework does (issue
// 13): Megatron-LM prints the iteration line on the last rank only (print_rank_last) and the
// `[Rank N] ... memory (MB)` line on every rank whose data-parallel rank is 0 (report_memory;
// the line is rewritten to name this pod's first such rank; default rank order tp-cp-ep-dp-pp);
// MaxText's `completed step:` and torchtitan's step lines come from process / rank 0. Every pod
// prints every other line (startup, errors). Returns the line as this pod prints it, or
// nullopt. One pod (nodes <= 1) prints everything unchanged.
std::optional<std::string> LineForRank(const Workload& w, const ParallelPlan& p, const RankView& v,
                                       const std::string& line);
// LineForRank over a whole log (lines end in '\n').
std::string LogForRank(const Workload& w, const ParallelPlan& p, const RankView& v,
                       const std::string& log);

// How the framework's launch prints (trial-sim, issue 35): the flags a real template passes
// change what the log holds.
struct PrintOptions {
  // Megatron-LM prints `throughput per GPU (TFLOP/s/GPU)` only with --log-throughput (off by
  // default: megatron/training/arguments.py, training.py training_log).
  bool log_throughput = false;
  // torchtitan under plain torchrun: every local rank prints its step line with torchrun's
  // `[rankN]:` prefix (run_train.sh's `--local-ranks-filter` limits it to one rank).
  bool every_rank = true;
};

// A line of LineForRank's output as the framework prints it on that pod: Megatron-LM's iteration
// line without the throughput field unless log_throughput; MaxText's step 1 with its
// dispatch artefact (timed before step 0's asynchronous dispatch finished: a fraction of a step,
// TFLOP/s and Tokens/s inflated alike); torchtitan's step lines once per local rank of the pod
// with `[rankN]:`; validation lines after some steps (Megatron-LM's `validation loss at
// iteration`, torchtitan's `validate step:`, MaxText's `eval metrics after step:`); for
// `framework: transformers` the Hugging Face Trainer's log dict, progress bar and end-of-run
// summary instead of the iteration line. Returns the
// lines to print, in order (none when `line` is empty of them).
std::vector<std::string> AsPrinted(const Workload& w, const RankView& v, const PrintOptions& o,
                                   const std::string& line);

// Failures. Each returns the tail a failed pod's log ends with (traceback + error).
std::string ConfigErrorLog(const Workload& w, const std::string& framework_error);
std::string CudaOomLog(const Workload& w, bool at_setup, double tried_gib, double capacity_gib,
                       double free_gib, double reserved_unallocated_gib);
std::string XlaOomLog(double used_gib, double capacity_gib, double arguments_gib);
std::string NcclTimeoutLog(const Workload& w, double unix_seconds, int64_t seq, int rank);
std::string EccErrorLog(const Workload& w, double unix_seconds, int rank);
// A chip of a TPU slice failed in its driver (NodeFault): the session master names the worker
// host and the chip, tpunetd reports SLICE_FAILURE_CHIP_DRIVER_ERROR. `rank` is the chip's global
// index; its worker is rank / chips per host.
std::string TpuSliceFailureLog(const Workload& w, double unix_seconds, int rank);
// Node-level failures of a flaky node (issue 9). `rank` is the global rank of the failing device,
// `local_rank` its index on the node (picks the PCI bus id), `seq` the collective's sequence
// number. Each ends the log the way the failed pod's log does.
// The driver's "NVRM: Xid (PCI:0000:..:00): 79 ... GPU has fallen off the bus." then the
// rank's CUDA error traceback (classified NodeFault).
std::string XidFallenOffBusLog(const Workload& w, int rank, int local_rank);
// The NCCL watchdog timing out a gradient ALLREDUCE after 600000 ms (CollectiveTimeout).
std::string NcclAllreduceTimeoutLog(double unix_seconds, int64_t seq, int rank);

}  // namespace paratune::sim

#endif  // PARATUNE_AGENTS_SIM_FRAMEWORK_LOG_H_
