// paratune diagnose --log FILE [-f CAMPAIGN.yaml] [--set key=value ...] [--pod-reason R]
//                   [--exit-code N] [--event TEXT ...] [--knowledge-dir DIR] [-o json]
// Failure analysis of one log (contract section 6): prints the status.failure object of
// contract section 5. With -f, the trial's config is the campaign baseline overridden by --set,
// and the model shape is quoted in the summary ("tp 4 and numAttentionHeads 14 ...").
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "agents/core/campaign.h"
#include "agents/knowledge/diagnostician.h"
#include "agents/knowledge/knowledge_base.h"
#include "agents/model/workload.h"
#include "cli/command.h"

namespace paratune::cli {

namespace {

constexpr size_t kMaxLogBytes = 64 << 20;

Result<std::string> ReadLog(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("--log: cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  // A diagnosis needs the tail: keep the last 64 MiB of a huge log.
  if (s.size() > kMaxLogBytes) s = s.substr(s.size() - kMaxLogBytes);
  return s;
}

void PrintHuman(const FailureDiagnosis& d) {
  std::cout << "Category:    " << d.category << "\n"
            << "Summary:     " << d.summary << "\n"
            << "Parameters:  ";
  for (size_t i = 0; i < d.parameters.size(); ++i) std::cout << (i ? ", " : "") << d.parameters[i];
  std::cout << (d.parameters.empty() ? "(none: not caused by the configuration)" : "") << "\n"
            << "Confidence:  " << d.confidence << "\n"
            << "Retryable:   " << (d.retryable ? "yes" : "no") << "\n"
            << "Signature:   " << (d.signature.empty() ? "(none)" : d.signature) << "\n"
            << "Evidence:\n";
  std::istringstream ev(d.evidence);
  std::string line;
  while (std::getline(ev, line)) std::cout << "  | " << line << "\n";
}

int RunDiagnose(const Args& args) {
  const std::string cmd = "diagnose";
  auto log_path = args.Get("--log");
  if (!log_path) return ReportError(cmd, Status::Invalid("--log: a log file is required"));
  auto log = ReadLog(*log_path);
  if (!log.ok()) return ReportError(cmd, log.status());
  DiagnosisInput in;
  in.log = *log;
  in.pod_reason = args.GetOr("--pod-reason", "");
  auto exit_code = args.GetInt("--exit-code", 0, -255, 255);
  if (!exit_code.ok()) return ReportError(cmd, exit_code.status());
  in.exit_code = static_cast<int>(*exit_code);
  in.events = args.GetAll("--event");
  Config config;
  std::optional<Workload> workload;
  if (auto file = args.Get("-f")) {
    auto spec = LoadCampaignFile(*file);
    if (!spec.ok()) return ReportError(cmd, spec.status());
    auto w = ResolveWorkload(*spec);
    if (!w.ok()) return ReportError(cmd, w.status());
    workload = *w;
    config = spec->baseline.value_or(Config{});
  }
  Status st = ApplyConfigSets(args.GetAll("--set"), &config);
  if (!st.ok()) return ReportError(cmd, st);
  if (!config.empty()) in.config = &config;
  if (workload) in.workload = &*workload;
  auto kb = KnowledgeBase::LoadDefault(
      args.GetOr("--knowledge-dir", EnvOr("PARATUNE_KNOWLEDGE_DIR", "")));
  if (!kb.ok()) return ReportError(cmd, kb.status().WithPrefix("--knowledge-dir"));
  auto diag = Diagnostician::Create(kb->get());
  if (!diag.ok()) return ReportError(cmd, diag.status());
  FailureDiagnosis d = (*diag)->Diagnose(in);
  if (args.JsonOutput()) {
    std::cout << d.ToJson().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    PrintHuman(d);
  }
  return kExitOk;
}

}  // namespace

PARATUNE_COMMAND("diagnose",
                 "explain why a trial failed from its log (--log FILE [-f CAMPAIGN --set k=v])", {},
                 RunDiagnose,
                 {"-f", "--log", "--set", "--event", "--exit-code", "--knowledge-dir",
                  "--pod-reason"});

}  // namespace paratune::cli
