// Published training measurements the model is calibrated and tested against (reference.md),
// as workloads and configurations the model can evaluate. Used by tests/model and
// bench/model_estimate_bench.cc so both report the same errors.
#ifndef PARATUNE_TESTING_EVAL_PUBLISHED_H_
#define PARATUNE_TESTING_EVAL_PUBLISHED_H_

#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"

namespace paratune {

enum class PublishedMetric {
  kHardwareTflopsPerDevice,  // SC'21: TFLOP/s per GPU counting recomputation (their Eq. 3)
  kMfuPercent,               // MaxText README: model FLOPs utilization, %
};

struct PublishedCase {
  std::string label;  // "145.6B tp8 pp8 1536 GPUs"
  Workload workload;
  Config config;
  double published = 0;
  PublishedMetric metric = PublishedMetric::kMfuPercent;
};

struct PublishedTable {
  std::string name;
  std::string source;
  std::vector<PublishedCase> cases;
};

// Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM", SC'21, Table 1: GPT models on A100s, fp16 mixed precision, s = 2048, V = 51,200,
// full activation recomputation, micro-batch 1, unfused attention.
PublishedTable Sc21Table1();
// MaxText README MFU table: v5e-256 16B/32B/64B/128B and v5p 32B/64B/128B/256B, with the
// settings of MaxText/configs/v5e/*.sh and v5p/*.sh (global_parameter_scale models, seq 2048).
PublishedTable MaxTextMfuTable();

struct TableError {
  double mean_abs_pct = 0, max_abs_pct = 0;
  std::vector<double> predicted;  // per case, in the table's metric
};
TableError EvaluateTable(const PublishedTable& t, const ModelConstants& k);

}  // namespace paratune

#endif  // PARATUNE_TESTING_EVAL_PUBLISHED_H_
