// paratune report --from SIMULATE.json [--out DIR] [-o json]
// paratune report CAMPAIGN [-n NAMESPACE] [--kubeconfig FILE] [--context NAME] [--out DIR]
// A Markdown report and an SVG chart of the objective per iteration (failures marked, baseline
// dashed) from the JSON of `paratune simulate -o json`, or of a campaign on a live cluster: its
// TuningCampaign and TrialRuns read with the kubeconfig's credentials (--kubeconfig, else
// $KUBECONFIG, else ~/.kube/config, else in-cluster), from namespace -n (default "default").
// Without --out the Markdown goes to stdout; with it, DIR/report.md and DIR/objective.svg are
// written (and DIR/campaign-result.json, the cluster campaign in the simulate shape).
#include "agents/report/report.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "base/time_source.h"
#include "cli/campaign_result.h"
#include "cli/command.h"
#include "operator/rest_client.h"

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

// The campaign named on the command line, read from the cluster, in the simulate shape.
Result<nlohmann::json> ReadClusterCampaign(const Args& args, const std::string& name) {
  const std::string ns = args.GetOr("-n", args.GetOr("--namespace", "default"));
  const std::string kubeconfig = args.GetOr("--kubeconfig", "");
  auto config =
      kubeconfig.empty()
          ? kube::DefaultConfig(kube::ConfigEnvironment{EnvOr("KUBECONFIG", ""), EnvOr("HOME", ""),
                                                        EnvOr("KUBERNETES_SERVICE_HOST", ""),
                                                        EnvOr("KUBERNETES_SERVICE_PORT", "")})
          : kube::LoadKubeconfig(kubeconfig, args.GetOr("--context", ""));
  if (!config.ok()) return config.status().WithPrefix("--kubeconfig");
  auto client = kube::RestKubeClient::Create(*config, RealTimeSource::Get(), nullptr);
  if (!client.ok()) return client.status().WithPrefix("--kubeconfig");
  auto campaign = (*client)->Get(kube::resources::kTuningCampaigns, ns, name);
  if (!campaign.ok()) {
    return campaign.status().WithPrefix("TuningCampaign " + ns + "/" + name);
  }
  kube::ListOptions opts;
  opts.label_selector = "tuning.paratune.dev/campaign=" + name;
  auto trials = (*client)->List(kube::resources::kTrialRuns, ns, opts);
  if (!trials.ok()) return trials.status().WithPrefix("TrialRuns of " + ns + "/" + name);
  return CampaignResultOf(*campaign, trials->items);
}

int RunReport(const Args& args) {
  const std::string from = args.GetOr("--from", "");
  const auto& names = args.positional();
  if (from.empty() == names.empty() || names.size() > 1) {
    return ReportError("report",
                       Status::Invalid("give one of CAMPAIGN (a TuningCampaign on the cluster) "
                                       "or --from SIMULATE.json (a `paratune simulate -o json` "
                                       "output)"));
  }
  auto run = from.empty() ? ReadClusterCampaign(args, names.front()) : ReadJsonFile(from);
  if (!run.ok()) return ReportError("report", run.status());
  auto report = RenderCampaignReport(*run);
  if (!report.ok()) {
    return ReportError(
        "report",
        report.status().WithPrefix(from.empty() ? "campaign " + names.front() : "--from " + from));
  }
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
  if (s.ok() && from.empty()) {
    s = WriteFile(std::filesystem::path(out) / "campaign-result.json", run->dump(1) + "\n");
  }
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
                 "Markdown report + SVG chart of a campaign: CAMPAIGN [-n NS] on the cluster of "
                 "--kubeconfig/$KUBECONFIG, or --from SIMULATE.json; --out DIR",
                 {}, RunReport,
                 {"--from", "--out", "-n", "--namespace", "--kubeconfig", "--context"});

}  // namespace paratune::cli
