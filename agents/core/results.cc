#include "agents/core/results.h"

#include <cmath>

#include "base/json_fields.h"

namespace paratune {

namespace {
// Rounds for output so JSON stays readable and stable: 4 significant decimals is plenty.
double R(double v) { return std::round(v * 1e4) / 1e4; }
}  // namespace

nlohmann::json Estimate::ToJson() const {
  nlohmann::json j = {{"fits", fits},
                      {"peakMemoryGiB", R(peak_memory_gib)},
                      {"capacityGiB", R(capacity_gib)},
                      {"memory",
                       {{"parametersGiB", R(memory.parameters_gib)},
                        {"gradientsGiB", R(memory.gradients_gib)},
                        {"optimizerGiB", R(memory.optimizer_gib)},
                        {"activationsGiB", R(memory.activations_gib)},
                        {"otherGiB", R(memory.other_gib)}}},
                      {"time",
                       {{"compute", R(time.compute)},
                        {"tensorParallel", R(time.tensor_parallel)},
                        {"contextParallel", R(time.context_parallel)},
                        {"pipelineBubble", R(time.pipeline_bubble)},
                        {"pipelineP2p", R(time.pipeline_p2p)},
                        {"dataParallel", R(time.data_parallel)},
                        {"expertParallel", R(time.expert_parallel)},
                        {"optimizer", R(time.optimizer)}}},
                      {"stepTimeSeconds", R(step_time_seconds)},
                      {"modelTflopsPerDevice", R(model_tflops_per_device)},
                      {"hardwareTflopsPerDevice", R(hardware_tflops_per_device)},
                      {"mfu", R(mfu)},
                      {"hfu", R(hfu)},
                      {"tokensPerSecondPerDevice", R(tokens_per_second_per_device)},
                      {"bottleneck", bottleneck},
                      {"violations", violations}};
  if (!verdict.empty()) {
    auto pair = [](const Range& r) { return nlohmann::json::array({R(r.low), R(r.high)}); };
    j["verdict"] = verdict;
    j["interval"] = {{"stepTimeSeconds", pair(step_time_range)},
                     {"peakMemoryGiB", pair(peak_memory_range)},
                     {"tokensPerSecondPerDevice", pair(tokens_range)}};
  }
  return j;
}

nlohmann::json TrialMetrics::ToJson() const {
  nlohmann::json j = {{"mfu", R(mfu)},
                      {"tflopsPerDevice", R(tflops_per_device)},
                      {"tokensPerSecondPerDevice", R(tokens_per_second_per_device)},
                      {"stepTimeSeconds", R(step_time_seconds)},
                      {"peakMemoryGiB", R(peak_memory_gib)},
                      {"avgMemoryGiB", R(avg_memory_gib)}};
  if (device_memory_used_gib > 0) j["deviceMemoryUsedGiB"] = R(device_memory_used_gib);
  return j;
}

Result<TrialMetrics> TrialMetrics::FromJson(const nlohmann::json& j) {
  TrialMetrics m;
  JsonFields f(j, "metrics");
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  constexpr double kMax = 1e12;
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("mfu", 0, 1.5, &m.mfu));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("tflopsPerDevice", 0, kMax, &m.tflops_per_device));
  PARATUNE_RETURN_IF_ERROR(
      f.ReadDouble("tokensPerSecondPerDevice", 0, kMax, &m.tokens_per_second_per_device));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("stepTimeSeconds", 0, kMax, &m.step_time_seconds));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("peakMemoryGiB", 0, kMax, &m.peak_memory_gib));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("avgMemoryGiB", 0, kMax, &m.avg_memory_gib));
  PARATUNE_RETURN_IF_ERROR(f.ReadDouble("deviceMemoryUsedGiB", 0, kMax, &m.device_memory_used_gib));
  return m;
}

double TrialMetrics::Objective(ObjectiveMetric metric) const {
  switch (metric) {
    case ObjectiveMetric::kMfu:
      return mfu;
    case ObjectiveMetric::kTflopsPerDevice:
      return tflops_per_device;
    case ObjectiveMetric::kTokensPerSecondPerDevice:
      return tokens_per_second_per_device;
    case ObjectiveMetric::kStepTimeSeconds:
      return step_time_seconds;
  }
  return 0;
}

nlohmann::json FailureDiagnosis::ToJson() const {
  nlohmann::json j = {{"category", category},   {"parameters", parameters},
                      {"summary", summary},     {"confidence", confidence},
                      {"retryable", retryable}, {"evidence", evidence}};
  if (!signature.empty()) j["signature"] = signature;
  return j;
}

Result<FailureDiagnosis> FailureDiagnosis::FromJson(const nlohmann::json& j) {
  FailureDiagnosis d;
  JsonFields f(j, "failure");
  PARATUNE_RETURN_IF_ERROR(f.CheckObject());
  PARATUNE_RETURN_IF_ERROR(f.ReadString("category", &d.category));
  PARATUNE_RETURN_IF_ERROR(f.ReadStringList("parameters", &d.parameters));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("summary", &d.summary));
  int64_t conf = 0;
  PARATUNE_RETURN_IF_ERROR(f.ReadInt("confidence", 0, 100, &conf));
  d.confidence = static_cast<int>(conf);
  PARATUNE_RETURN_IF_ERROR(f.ReadBool("retryable", &d.retryable));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("evidence", &d.evidence));
  PARATUNE_RETURN_IF_ERROR(f.ReadString("signature", &d.signature));
  return d;
}

const char* TrialPhaseName(TrialPhase p) {
  switch (p) {
    case TrialPhase::kPending:
      return "Pending";
    case TrialPhase::kRunning:
      return "Running";
    case TrialPhase::kSucceeded:
      return "Succeeded";
    case TrialPhase::kFailed:
      return "Failed";
    case TrialPhase::kRejected:
      return "Rejected";
  }
  return "Pending";
}

Result<TrialPhase> ParseTrialPhase(const std::string& s) {
  for (auto p : {TrialPhase::kPending, TrialPhase::kRunning, TrialPhase::kSucceeded,
                 TrialPhase::kFailed, TrialPhase::kRejected}) {
    if (s == TrialPhaseName(p)) return p;
  }
  return Status::Invalid("phase: unknown phase \"" + s + "\"");
}

}  // namespace paratune
