// paratune collect --log FILE -f CAMPAIGN.yaml [--collector NAME] [--set key=value ...] [-o json]
// What the operator would read from a training log for a trial of that campaign (contract
// section 13): the metrics with their sources, the steps read, the anomalies it would raise and
// the warnings, so a user checks that their framework's log is understood before spending
// accelerator hours. Exit 1 with {"error": "NoMetrics"} when no step line is recognised; exit 2
// for bad input (an unknown collector, an unreadable file, a bad --set), naming the flag.
#include <algorithm>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "agents/collectors/metric_collector.h"
#include "agents/core/campaign.h"
#include "agents/health/anomaly.h"
#include "agents/session/tuning_session.h"
#include "base/strings.h"
#include "cli/command.h"

namespace paratune::cli {

namespace {

using nlohmann::json;

json MetricsJson(const TrialMetrics& m) {
  json out = json::object();
  const std::pair<const char*, double> fields[] = {
      {"stepTimeSeconds", m.step_time_seconds},
      {"tokensPerSecondPerDevice", m.tokens_per_second_per_device},
      {"tflopsPerDevice", m.tflops_per_device},
      {"mfu", m.mfu},
      {"peakMemoryGiB", m.peak_memory_gib},
      {"avgMemoryGiB", m.avg_memory_gib}};
  for (const auto& [key, v] : fields) {
    if (v > 0) out[key] = v;
  }
  return out;
}

json ReadingJson(const std::string& collector, const collectors::CollectedMetrics& c,
                 const std::vector<std::string>& warnings) {
  json anomalies = json::array();
  if (auto a = health::DetectStepTimeAnomaly(c.step_times, {}, c.warmup_intervals)) {
    anomalies.push_back(a->ToJson());
  }
  return {{"collector", collector},
          {"metrics", MetricsJson(c.metrics)},
          {"sources", c.sources},
          {"steps",
           {{"read", c.steps.read},
            {"warmupDropped", c.steps.warmup_dropped},
            {"duplicateRankLines", c.steps.duplicate_rank_lines},
            {"otherLines", c.steps.other_lines}}},
          {"anomalies", anomalies},
          {"warnings", warnings}};
}

void PrintHuman(const json& r) {
  std::ostringstream o;
  o << "collector " << r["collector"].get<std::string>() << ": " << r["steps"]["read"]
    << " steps read (" << r["steps"]["warmupDropped"] << " warm-up dropped, "
    << r["steps"]["duplicateRankLines"] << " duplicate rank lines, " << r["steps"]["otherLines"]
    << " validation/other lines ignored)\n";
  for (const auto& [key, v] : r["metrics"].items()) {
    o << "  " << key << " = " << Significant(v.get<double>(), 6) << "  ("
      << r["sources"].value(key, "?") << ")\n";
  }
  for (const auto& a : r["anomalies"]) {
    o << "anomaly " << a["kind"].get<std::string>() << ": " << a["summary"].get<std::string>()
      << "\n";
  }
  for (const auto& w : r["warnings"]) o << "warning: " << w.get<std::string>() << "\n";
  std::cout << o.str();
}

Result<std::string> ReadLog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Invalid("--log " + path + ": cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int RunCollect(const Args& args) {
  const std::string cmd = "collect";
  auto log_path = args.Get("--log");
  if (!log_path) return ReportError(cmd, Status::Invalid("--log: a training log file is required"));
  auto file = args.Get("-f");
  if (!file) return ReportError(cmd, Status::Invalid("-f: a campaign file is required"));
  auto spec = LoadCampaignFile(*file);
  if (!spec.ok()) return ReportError(cmd, spec.status());
  const std::string collector = args.GetOr("--collector", spec->metrics_collector);
  const auto& names = collectors::CollectorNames();
  if (std::find(names.begin(), names.end(), collector) == names.end()) {
    return ReportError(cmd, Status::Invalid("--collector: unknown collector \"" + collector +
                                            "\" (known: " + Join(names, ", ") + ")"));
  }
  Config config = spec->baseline.value_or(Config{});
  Status st = ApplyConfigSets(args.GetAll("--set"), &config);
  if (!st.ok()) return ReportError(cmd, st);
  auto log = ReadLog(*log_path);
  if (!log.ok()) return ReportError(cmd, log.status());
  const collectors::CollectorContext ctx = CollectorContextFor(*spec, config);
  auto c = collectors::CollectLogWithStepTimes(collector, *log, ctx);
  if (!c.ok()) {
    const std::string message = c.status().message() + " in " + *log_path;
    if (args.JsonOutput()) {
      std::cout << json{{"error", "NoMetrics"}, {"message", message}}.dump(2) << "\n";
    } else {
      std::cerr << "paratune collect: NoMetrics: " << message << "\n";
    }
    return kExitFailure;
  }
  std::vector<std::string> warnings = c->warnings;
  const std::string missing =
      collectors::MissingObjectiveReason(collector, *c, spec->objective.metric, ctx);
  if (!missing.empty()) warnings.push_back("ObjectiveMissing: " + missing);
  const json reading = ReadingJson(collector, *c, warnings);
  if (args.JsonOutput()) {
    std::cout << reading.dump(2) << "\n";
  } else {
    PrintHuman(reading);
  }
  return kExitOk;
}

}  // namespace

PARATUNE_COMMAND("collect",
                 "read a training log as the operator would (--log FILE -f CAMPAIGN "
                 "[--collector NAME] [--set k=v])",
                 {}, RunCollect, {"--log", "-f", "--collector", "--set"});

}  // namespace paratune::cli
