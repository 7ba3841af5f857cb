#include "testing/eval/measured_check.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "agents/core/campaign.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"
#include "base/json_fields.h"

namespace paratune {

namespace {

// One JSON line into a comparison row; false (and no error) for lines to skip.
Result<bool> ParseLine(const std::string& line, const std::string& where, MeasuredComparison* row) {
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Invalid(where + ": not a JSON object");
  const std::string outcome = j.value("outcome", std::string());
  if (outcome != "succeeded" && outcome != "oom") return false;
  auto config = ConfigFromJson(j.value("config", nlohmann::json::object()), where + ".config");
  if (!config.ok()) return config.status();
  row->config = *config;
  row->measured_ok = outcome == "succeeded";
  const nlohmann::json metrics = j.value("metrics", nlohmann::json::object());
  row->measured_step_seconds = NumberField(metrics, "stepTimeSeconds");
  row->measured_peak_gib = NumberField(metrics, "peakMemoryGiB");
  row->allocated_at_failure_gib =
      NumberField(j.value("failure", nlohmann::json::object()), "allocatedAtFailureGiB");
  if (row->measured_ok && row->measured_step_seconds <= 0) {
    return Status::Invalid(where + ".metrics.stepTimeSeconds: required for a succeeded trial");
  }
  return true;
}

}  // namespace

double MeasuredComparison::StepTimeErrorPct() const {
  if (!measured_ok || measured_step_seconds <= 0) return 0;
  return (predicted.step_time_seconds / measured_step_seconds - 1.0) * 100.0;
}

double MeasuredComparison::PeakMemoryErrorPct() const {
  if (!measured_ok || measured_peak_gib <= 0) return 0;
  return (predicted.peak_memory_gib / measured_peak_gib - 1.0) * 100.0;
}

Result<MeasuredCheck> CheckAgainstMeasurements(const std::string& campaign_path,
                                               const std::string& trials_path) {
  auto spec = LoadCampaignFile(campaign_path);
  if (!spec.ok()) return spec.status();
  auto workload = ResolveWorkload(*spec);
  if (!workload.ok()) return workload.status().WithPrefix(campaign_path);
  std::ifstream in(trials_path);
  if (!in) return Status::NotFound(trials_path + ": cannot open");
  MeasuredCheck check;
  check.campaign = spec->name;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    MeasuredComparison row;
    auto keep = ParseLine(line, trials_path + ":" + std::to_string(n), &row);
    if (!keep.ok()) return keep.status();
    if (!*keep) continue;
    Config config = spec->baseline.value_or(Config{});
    for (const auto& [k, v] : row.config) config[k] = v;
    row.predicted = EstimateConfig(*workload, config);
    check.rows.push_back(std::move(row));
  }
  return check;
}

}  // namespace paratune
