// paratune calibrate -f CAMPAIGN.yaml --measurements FILE.jsonl [-o json]
// What the model learns from measured trials (contract section 11): the fitted memory terms
// (fixed overhead, per-parameter-state scale, activation scale, logits bytes, margin) and time
// terms (compute and communication efficiency, per-micro-batch floor) before and after, and per
// configuration the cold and calibrated predictions next to the measurement.
#include <cstdio>
#include <iostream>
#include <string>

#include "agents/core/campaign.h"
#include "agents/sim_campaign/calibration_report.h"
#include "agents/sim_campaign/replay.h"
#include "base/strings.h"
#include "cli/command.h"

namespace paratune::cli {

namespace {

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s += std::string(width - s.size(), ' ');
  return s;
}

void PrintTerms(const nlohmann::json& j) {
  static const char* kKeys[] = {
      "memoryFixedGiB",  "memoryStaticScale", "memoryActivationScale",   "memoryLogitsBytes",
      "memoryMarginGiB", "computeEfficiency", "communicationEfficiency", "microbatchFloorSeconds"};
  std::cout << Pad("term", 26) << Pad("before", 12) << "after\n";
  for (const char* k : kKeys) {
    std::cout << Pad(k, 26) << Pad(Significant(j["before"].value(k, 0.0), 4), 12)
              << Significant(j["after"].value(k, 0.0), 4) << "\n";
  }
}

std::string VerdictText(const nlohmann::json& v) {
  return std::string(v.value("fits", false) ? "fits " : "OOM  ") +
         Significant(v.value("peakMemoryGiB", 0.0), 4) + " GiB " +
         Significant(v.value("stepTimeSeconds", 0.0), 4) + " s";
}

void PrintConfigurations(const nlohmann::json& j) {
  std::cout << "\n"
            << Pad("configuration", 34) << Pad("measured", 26) << Pad("before (cold)", 28)
            << "after (calibrated)\n";
  for (const auto& c : j["configurations"]) {
    const auto& m = c["measured"];
    std::string meas = m.value("outcome", "");
    if (meas == "succeeded") {
      meas = "ran " + Significant(m.value("peakMemoryGiB", 0.0), 4) + " GiB " +
             Significant(m.value("stepTimeSeconds", 0.0), 4) + " s";
    }
    std::cout << Pad(c["config"].dump(), 34) << Pad(meas, 26) << Pad(VerdictText(c["before"]), 28)
              << VerdictText(c["after"]) << "\n";
  }
  for (const char* when : {"before", "after"}) {
    const auto& f = j["fitCalls"][when];
    std::cout << "fit/OOM called right " << when << ": " << f.value("right", 0) << "/"
              << f.value("total", 0) << " (OOM predicted to fit: " << f.value("oomsCalledFit", 0)
              << "; mean |error| step " << Significant(100 * f.value("stepErrorMean", 0.0), 4)
              << "%, peak " << Significant(100 * f.value("peakErrorMean", 0.0), 4) << "%)\n";
  }
}

int RunCalibrate(const Args& args) {
  const std::string file = args.GetOr("-f", "");
  if (file.empty()) return ReportError("calibrate", Status::Invalid("-f: campaign file required"));
  const std::string measurements = args.GetOr("--measurements", "");
  if (measurements.empty()) {
    return ReportError("calibrate", Status::Invalid("--measurements: FILE.jsonl required"));
  }
  auto spec = LoadCampaignFile(file);
  if (!spec.ok()) return ReportError("calibrate", spec.status());
  auto trials = LoadMeasurementsFile(measurements, *spec);
  if (!trials.ok()) return ReportError("calibrate", trials.status());
  auto report = CalibrationReport(*spec, *trials);
  if (!report.ok()) return ReportError("calibrate", report.status());
  if (args.JsonOutput()) {
    std::cout << report->dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "Campaign " << report->value("campaign", "") << ": " << report->value("trials", 0)
            << " measured trials\n\n";
  PrintTerms(*report);
  PrintConfigurations(*report);
  return kExitOk;
}

}  // namespace

PARATUNE_COMMAND("calibrate",
                 "what the model learns from measured trials (-f CAMPAIGN --measurements "
                 "FILE.jsonl)",
                 {}, RunCalibrate, {"-f", "--measurements"});

}  // namespace paratune::cli
