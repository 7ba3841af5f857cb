// paratune report --from SIMULATE.json [--out DIR] [-o json]
// A Markdown report and an SVG chart of the objective per iteration (failures marked, baseline
// dashed) from the JSON of `paratune simulate -o json`. Without --out the Markdown goes to
// stdout; with it, DIR/report.md and DIR/objective.svg are written. (`paratune report CAMPAIGN`
// against a cluster is served by the controllers' command over the same renderer.)
#include "agents/loop/report.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "cli/command.h"

namespace paratune::cli {

namespace {

Result<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("--from " + path + ": cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded()) return Status::Invalid("--from " + path + ": not valid JSON");
  return j;
}

Status WriteFile(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p);
  if (!out) return Status::Invalid("--out: cannot write " + p.string());
  out << text;
  return out ? Status::Ok() : Status::Internal("write failed: " + p.string());
}

int RunReport(const Args& args) {
  const std::string from = args.GetOr("--from", "");
  if (from.empty()) {
    return ReportError("report",
                       Status::Invalid("--from: required (a `paratune simulate -o json` output); "
                                       "reports of cluster campaigns come with the operator"));
  }
  auto run = ReadJsonFile(from);
  if (!run.ok()) return ReportError("report", run.status());
  auto report = RenderCampaignReport(*run);
  if (!report.ok()) return ReportError("report", report.status().WithPrefix("--from " + from));
  const std::string out = args.GetOr("--out", "");
  if (out.empty()) {
    if (args.JsonOutput()) {
      std::cout << nlohmann::json{{"markdown", report->markdown}, {"svg", report->svg}}.dump(2)
                << "\n";
    } else {
      std::cout << report->markdown;
    }
    return kExitOk;
  }
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec) return ReportError("report", Status::Invalid("--out " + out + ": " + ec.message()));
  Status s = WriteFile(std::filesystem::path(out) / "report.md", report->markdown);
  if (s.ok()) s = WriteFile(std::filesystem::path(out) / "objective.svg", report->svg);
  // What this campaign learned, as a record `paratune propose --knowledge-dir OUT` cites.
  auto past = PastOptimizationRecord(*run);
  if (s.ok() && past.ok()) {
    s = WriteFile(std::filesystem::path(out) / "past-optimization.json", past->dump(2) + "\n");
  }
  if (!s.ok()) return ReportError("report", s);
  if (args.JsonOutput()) {
    std::cout
        << nlohmann::json{{"markdown", out + "/report.md"}, {"svg", out + "/objective.svg"}}.dump(2)
        << "\n";
  } else {
    std::cout << "wrote " << out << "/report.md and " << out << "/objective.svg"
              << (past.ok() ? " and " + out + "/past-optimization.json" : std::string()) << "\n";
  }
  return kExitOk;
}

}  // namespace

PARATUNE_COMMAND("report",
                 "Markdown report + SVG chart of a campaign (--from SIMULATE.json --out DIR)", {},
                 RunReport, {"--from", "--out"});

}  // namespace paratune::cli
