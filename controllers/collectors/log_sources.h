// Which pods of a trial to read, and how much of a log to keep (issue 13, item 1).
//
// A multi-pod trial (an Indexed Job or a JobSet: one pod per node or TPU host, completion index
// = node rank) logs its throughput on one rank only, and which one depends on the framework:
//   - Megatron-LM prints the iteration line (elapsed time per iteration, TFLOP/s/GPU) with
//     `print_rank_last`, i.e. on global rank world_size-1, which lives on the pod with the last
//     completion index (megatron/training/training.py training_log; megatron/training/utils.py
//     is_last_rank / print_rank_last, github.com/NVIDIA/Megatron-LM). Its
//     `[Rank N] ... memory (MB)` lines come from `report_memory` on every rank whose
//     data-parallel rank is 0, so rank 0's pod always has one.
//   - MaxText writes its metrics (tensorboard, GCS) on `jax.process_index() == 0`, and older
//     releases print `completed step:` there only (MaxText/max_utils.py write_metrics; newer
//     metric_logger.py prints on every host): process 0 is the pod of completion index 0.
//   - torchtitan runs torchrun with `--local-ranks-filter ${LOG_RANK:-0}` (run_train.sh), and
//     Hugging Face transformers' Trainer logs on the world/local process zero: global rank 0 is
//     on completion index 0.
//   - `json` (a custom trainer) may log anywhere.
// The collector reads the framework's pod first, then every other pod (a custom launcher may
// route rank logs differently), and takes a termination message from any pod.
// Pure functions; thread-safe.
#ifndef PARATUNE_CONTROLLERS_COLLECTORS_LOG_SOURCES_H_
#define PARATUNE_CONTROLLERS_COLLECTORS_LOG_SOURCES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace paratune::controllers {

// Where a framework prints its throughput lines.
enum class MetricsRank {
  kFirst,  // rank / process 0: completion index 0
  kLast,   // the last rank: the highest completion index
  kAny,    // no convention
};

// The convention of a collector name (or a training.framework name): megatron-lm -> kLast;
// maxtext, torchtitan, transformers -> kFirst; json and anything else -> kAny.
MetricsRank MetricsRankFor(const std::string& collector);
// "last", "first", "any".
const char* MetricsRankName(MetricsRank r);

// Indices of a trial's pods, given their node ranks (completion indices, -1 none), in the order
// their logs should be read for metrics: the pod the collector's framework prints throughput on
// first (for kLast the highest rank, for kFirst rank 0 or the only pod), then the others by
// ascending rank. Every index appears once.
std::vector<size_t> PodReadOrder(const std::vector<int64_t>& ranks, MetricsRank convention);

// A log as the pod log API returned it under `limit_bytes` (limitBytes keeps the head of the
// tailed text): when the text reached the limit, the last, possibly cut, line is dropped so a
// half-printed number ("...(ms): 91") is never parsed; then made valid UTF-8 (invalid bytes become
// U+FFFD).
std::string BoundedLog(std::string raw, size_t limit_bytes);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_COLLECTORS_LOG_SOURCES_H_
