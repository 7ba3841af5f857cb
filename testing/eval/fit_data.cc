// LoadFitData: every measurement the model's intervals are learned from, as PublishedRows.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "agents/core/campaign.h"
#include "testing/eval/measured_check.h"
#include "testing/eval/published_tables.h"

namespace paratune {

namespace {

// The h100-hf measured trials: one row per configuration, OOMs included (ran = false).
Status AddMeasuredTrials(const std::string& dir, std::vector<PublishedRow>* out) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& f : std::filesystem::directory_iterator(dir, ec)) {
    if (f.path().extension() == ".yaml") names.push_back(f.path().stem().string());
  }
  if (ec) return Status::NotFound(dir + ": " + ec.message());
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    const std::string campaign = dir + "/" + name + ".yaml";
    auto check = CheckAgainstMeasurements(campaign, dir + "/" + name + ".jsonl");
    if (!check.ok()) return check.status();
    auto spec = LoadCampaignFile(campaign);
    if (!spec.ok()) return spec.status().WithPrefix(campaign);
    auto w = ResolveWorkload(*spec);
    if (!w.ok()) return w.status().WithPrefix(campaign);
    for (const auto& m : check->rows) {
      PublishedRow r;
      r.source = "h100-hf";
      r.workload = *w;
      r.config = spec->baseline.value_or(Config{});
      for (const auto& [k, v] : m.config) r.config[k] = v;
      r.label = name + " " + ConfigKey(m.config);
      r.metric = FitMetric::kStepSeconds;
      r.ran = m.measured_ok;
      r.measured = m.measured_ok ? m.measured_step_seconds : 0;
      r.step_seconds = r.measured;
      r.memory_gib = m.measured_ok ? m.measured_peak_gib : 0;
      if (r.memory_gib > 0) r.memory_kind = "allocated";
      out->push_back(std::move(r));
    }
  }
  return Status::Ok();
}

// The SC'21 and MaxText campaign files listed in published.tsv (file, metric, value).
Status AddCampaignTable(const std::string& data_dir, std::vector<PublishedRow>* out) {
  const std::string path = data_dir + "/published.tsv";
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot read");
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string file, metric;
    double value = 0;
    if (!(ss >> file >> metric >> value) || value <= 0) {
      return Status::Invalid(path + ":" + std::to_string(n) + ": expected FILE METRIC VALUE");
    }
    auto spec = LoadCampaignFile(data_dir + "/" + file);
    if (!spec.ok()) return spec.status().WithPrefix(file);
    auto w = ResolveWorkload(*spec);
    if (!w.ok()) return w.status().WithPrefix(file);
    PublishedRow r;
    r.source = file.substr(0, file.find('/'));
    r.label = file;
    r.workload = *w;
    r.config = spec->baseline.value_or(Config{});
    r.metric = metric == "mfuPercent" ? FitMetric::kMfuPercent : FitMetric::kHardwareTflops;
    r.measured = value;
    out->push_back(std::move(r));
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<PublishedRow>> LoadFitData(const std::string& data_dir) {
  auto rows = LoadPublishedTables(data_dir + "/published/tables.yaml");
  if (!rows.ok()) return rows.status();
  std::vector<PublishedRow> out = std::move(rows).value();
  PARATUNE_RETURN_IF_ERROR(AddMeasuredTrials(data_dir + "/h100-hf", &out));
  PARATUNE_RETURN_IF_ERROR(AddCampaignTable(data_dir, &out));
  return out;
}

}  // namespace paratune
