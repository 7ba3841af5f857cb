// The published training measurements of tests/model/data/published/tables.yaml (a copy of
// ../shared/measurements/published/tables.yaml; its header says what each source measured) as
// workloads and configurations the model can evaluate, the way a user would write them in a
// campaign. What a source leaves unstated is filled with the framework's documented default and
// said so in docs/model.md ("Published tables"). Used by bench/model_published_bench.cc and
// tests/model. Pure functions; thread-safe.
#ifndef PARATUNE_TESTING_EVAL_PUBLISHED_TABLES_H_
#define PARATUNE_TESTING_EVAL_PUBLISHED_TABLES_H_

#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/core/results.h"
#include "agents/model/interval.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"
#include "base/status.h"

namespace paratune {

// What a row's throughput figure is (the step-time residual is log(predicted / measured) of it,
// or log(measured / predicted) for step seconds).
enum class FitMetric { kTokensPerSecond, kModelTflops, kHardwareTflops, kMfuPercent, kStepSeconds };

struct PublishedRow {
  // The table's top-level key, e.g. "torchtitan_llama3_h100", or "h100-hf", "sc21", "maxtext"
  // for the fit data of LoadFitData.
  std::string source;
  std::string label;  // "Llama 3.1 8B fsdp8 seq 32768 fp8 compile"
  Workload workload;
  Config config;
  // Recomputation the source did not state: the estimate takes the first of none, selective,
  // full whose verdict is not does-not-fit (what a user trying it would run).
  bool recompute_stated = true;
  double tokens_per_second_per_device = 0;         // 0: not published
  double model_tflops_per_device = 0;              // published model TFLOP/s per GPU (0: none)
  double step_seconds = 0;                         // published global step (0: none)
  FitMetric metric = FitMetric::kTokensPerSecond;  // which figure above is the measured one
  double measured = 0;                             // that figure
  bool ran = true;                                 // false: the measured run went out of memory
  double memory_gib = 0;                           // 0: not measured
  std::string memory_kind;                         // "reserved" (torchtitan) | "active" (torchtune)
  // Why the model cannot evaluate the row ("" when it can), e.g. torchtune's pure-bf16
  // optimizer states and activation offloading.
  std::string not_modeled;
};

// Parses the table file. Errors: the file cannot be read or parsed, or kInvalidArgument naming
// "SOURCE[i].FIELD" for a row whose field is missing or out of range.
Result<std::vector<PublishedRow>> LoadPublishedTables(const std::string& path);

// Every fit datum under `data_dir` (tests/model/data): the published tables, the h100-hf
// measured trials (step time, allocated peak, OOMs) and the SC'21 / MaxText campaign files of
// published.tsv. Errors name the file.
Result<std::vector<PublishedRow>> LoadFitData(const std::string& data_dir);

// The predicted figure of the row's metric, and its relative error (predicted / measured - 1;
// 0 when the row has no measured figure or did not run).
double PredictedFigure(const PublishedRow& row, const Estimate& e);
double ThroughputError(const PublishedRow& row, const Estimate& e);

// The row's estimate under `intervals` (see recompute_stated); `used` gets the configuration
// estimated.
Estimate EstimatePublishedRow(const PublishedRow& row, const IntervalTable& intervals, Config* used,
                              const ModelConstants& k = ModelConstants::Defaults());

// The torchtitan profile's kernel factor (ModelConstants::torchtitan_kernel_factor) that the
// rows of `rows` under that profile give, leaving out the rows of `without_source` ("" keeps
// every row): the factor at which the mean step-time residual of the rows that ran is 0 (the
// geometric mean of measured / predicted). 1.0 when no such row is left.
double FitTorchtitanKernelFactor(const std::vector<PublishedRow>& rows,
                                 const std::string& without_source = "");

// The residuals of the row's measured metrics against `e` (step time from throughput, and
// memory), under the row's interval profile.
std::vector<Residual> ResidualsOf(const PublishedRow& row, const Estimate& e);

}  // namespace paratune

#endif  // PARATUNE_TESTING_EVAL_PUBLISHED_TABLES_H_
