// paratune propose -f CAMPAIGN.yaml [--profile FILE] [--profile-format F] [-k 3]
//                  [--knowledge-dir DIR] [--past FILE ...] [-o json]
// Profile-driven proposals (contract sections 6 and 7): what limits the job and k ranked
// configurations for the same devices. Profile formats: summary (contract section 7 JSON,
// default), pytorch-table, pytorch-trace, nsys-csv, xla-op-profile (agents/knowledge/profile.h).
// The current configuration is the campaign baseline overridden by the profile's "config".
// A campaign without a model description (no preset, no shape) is analyzed from the profile,
// mesh and hardware alone. --past FILE (repeatable) adds past-optimization records (a report's
// past-optimization.json) to retrieval, as a file of them in --knowledge-dir does.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "agents/core/campaign.h"
#include "agents/knowledge/knowledge_base.h"
#include "agents/knowledge/profile.h"
#include "agents/knowledge/proposer.h"
#include "agents/model/workload.h"
#include "cli/command.h"

namespace paratune::cli {

namespace {

Result<ProfileSummary> LoadProfile(const std::string& path, const std::string& format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("--profile: cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto p = ParseProfile(ss.str(), format);
  if (!p.ok()) return p.status().WithPrefix(path);
  return p;
}

// Loads the campaign. propose works from hardware, mesh and profile alone, so the model section
// may be absent; `has_model` says whether it describes the model.
Result<CampaignSpec> LoadCampaign(const std::string& path, bool* has_model) {
  CampaignParseOptions options;
  options.require_model = false;
  auto spec = LoadCampaignFile(path, options);
  if (!spec.ok()) {
    if (spec.status().code() == StatusCode::kNotFound) {
      return Status::NotFound("-f: cannot read campaign file " + path);
    }
    return spec.status();
  }
  *has_model = spec->model.Described();
  return spec;
}

void PrintHuman(const ProposalSet& set) {
  std::cout << "Bottleneck: " << set.analysis.bottleneck << "\n";
  for (const auto& e : set.analysis.evidence) std::cout << "  - " << e << "\n";
  if (set.proposals.empty()) {
    std::cout << "\nNo alternative configuration fits these devices and is predicted to be "
                 "faster.\n";
  }
  for (const auto& u : set.analysis.unknowns) std::cout << "  (" << u << ")\n";
  for (size_t i = 0; i < set.proposals.size(); ++i) {
    const ConfigProposal& p = set.proposals[i];
    std::cout << "\n"
              << i + 1 << ". " << ConfigKey(p.config) << "\n   " << p.rationale
              << "\n   Trade-offs: " << p.tradeoffs << "\n   Confidence: " << p.confidence;
    if (!p.verdict.empty()) {
      // Contract section 14: the model's verdict and interval for this configuration.
      char buf[160];
      std::snprintf(buf, sizeof(buf),
                    "\n   Verdict: %s (step %.3f .. %.3f s, peak %.1f .. %.1f GiB)",
                    p.verdict.c_str(), p.step_time_interval.first, p.step_time_interval.second,
                    p.memory_interval.first, p.memory_interval.second);
      std::cout << buf;
    }
    std::cout << "\n   Cites: ";
    for (size_t j = 0; j < p.citations.size(); ++j) std::cout << (j ? ", " : "") << p.citations[j];
    std::cout << "\n";
  }
}

int RunPropose(const Args& args) {
  const std::string cmd = "propose";
  auto file = args.Get("-f");
  if (!file) return ReportError(cmd, Status::Invalid("-f: a campaign file is required"));
  bool has_model = false;
  auto spec = LoadCampaign(*file, &has_model);
  if (!spec.ok()) return ReportError(cmd, spec.status());
  auto k = args.GetInt("-k", 3, 1, 20);
  if (!k.ok()) return ReportError(cmd, k.status());
  std::optional<Workload> workload;
  if (has_model) {
    auto w = ResolveWorkload(*spec);
    if (!w.ok()) return ReportError(cmd, w.status());
    workload = *w;
  }
  std::optional<ProfileSummary> profile;
  if (auto path = args.Get("--profile")) {
    auto p = LoadProfile(*path, args.GetOr("--profile-format", "summary"));
    if (!p.ok()) return ReportError(cmd, p.status());
    profile = *p;
  }
  ProposeInput in;
  in.spec = &*spec;
  in.workload = workload ? &*workload : nullptr;
  in.profile = profile ? &*profile : nullptr;
  in.current = spec->baseline.value_or(Config{});
  if (profile) {
    for (const auto& [key, value] : profile->config) in.current[key] = value;
  }
  in.k = static_cast<size_t>(*k);
  auto kb = KnowledgeBase::LoadDefault(
      args.GetOr("--knowledge-dir", EnvOr("PARATUNE_KNOWLEDGE_DIR", "")));
  if (!kb.ok()) return ReportError(cmd, kb.status().WithPrefix("--knowledge-dir"));
  for (const auto& path : args.GetAll("--past")) {
    std::ifstream past(path, std::ios::binary);
    if (!past) return ReportError(cmd, Status::NotFound("--past: cannot read " + path));
    std::stringstream text;
    text << past.rdbuf();
    Status st = (*kb)->AddPastOptimizations(path, text.str());
    if (!st.ok()) return ReportError(cmd, st.WithPrefix("--past"));
  }
  auto set = Propose(in, **kb);
  if (!set.ok()) return ReportError(cmd, set.status());
  if (args.JsonOutput()) {
    std::cout << set->ToJson().dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    PrintHuman(*set);
  }
  return kExitOk;
}

}  // namespace

PARATUNE_COMMAND("propose",
                 "what limits a job and three better configurations (-f CAMPAIGN --profile P)", {},
                 RunPropose,
                 {"-f", "-k", "--knowledge-dir", "--past", "--profile", "--profile-format"});

}  // namespace paratune::cli
