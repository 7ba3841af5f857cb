// paratune tune -f CAMPAIGN.yaml --local [--out DIR] [--max-trials K] [--devices N|LIST|none]
//   [--seed N] [--strategy S] [-o json]
// The operator's agent loop on this machine (contract section 14): every trial runs as local
// processes from spec.trialTemplate (cli/local_trials.h), driven as the campaign reconciler
// drives the loop (cli/local_campaign.h). DIR (default ./paratune-<campaign>) keeps pool.json and
// trials/<trial>.log; running the command again resumes from it. People see one row per
// finished trial and a summary; `-o json` prints the simulate JSON (contract section 6) plus
// "local". GPUs: --devices N (ids 0..N-1), a list ("0,2"), or none; by default the ids of
// CUDA_VISIBLE_DEVICES when it is set, else the GPUs `nvidia-smi -L` lists (none without it).
// SIGINT/SIGTERM: running trials are ended with their process groups, the pool is saved, the
// JSON says "interrupted": true, and the exit status is 130.
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <string>

#include "agents/core/campaign.h"
#include "agents/engines/engine_factory.h"
#include "agents/engines/llm_engine.h"
#include "base/strings.h"
#include "cli/command.h"
#include "cli/local_campaign.h"

namespace paratune::cli {

namespace {

constexpr int kExitInterrupted = 130;  // 128 + SIGINT, as shells report an interrupted command

volatile std::sig_atomic_t g_interrupted = 0;  // set by the signal handler only

void OnSignal(int) { g_interrupted = 1; }

void InstallHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// The GPUs `nvidia-smi -L` lists ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: ...)"), as ids.
std::vector<std::string> ListedGpus() {
  std::vector<std::string> ids;
  FILE* p = popen("nvidia-smi -L 2>/dev/null", "r");
  if (p == nullptr) return ids;
  char line[512];
  while (std::fgets(line, sizeof(line), p) != nullptr) {
    if (std::string(line).rfind("GPU ", 0) == 0) ids.push_back(std::to_string(ids.size()));
  }
  pclose(p);
  return ids;
}

Result<std::vector<std::string>> Devices(const Args& args) {
  std::string text;
  if (auto d = args.Get("--devices")) {
    text = *d;
    if (text == "none") return std::vector<std::string>{};
    if (!text.empty() && text.find(',') == std::string::npos &&
        text.find_first_not_of("0123456789") == std::string::npos) {
      auto n = args.GetInt("--devices", 0, 0, 1024);
      if (!n.ok()) return n.status();
      std::vector<std::string> ids;
      for (int64_t i = 0; i < *n; ++i) ids.push_back(std::to_string(i));
      return ids;
    }
  } else {
    text = EnvOr("CUDA_VISIBLE_DEVICES", "");
    if (text.empty()) return ListedGpus();
  }
  std::vector<std::string> ids;
  std::istringstream in(text);
  for (std::string id; std::getline(in, id, ',');) {
    if (id.empty()) return Status::Invalid("--devices: empty id in \"" + text + "\"");
    ids.push_back(id);
  }
  return ids;
}

std::string SelfDir() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

void PrintRow(const TrialRecord& t, const TuningSession& s) {
  const double obj = s.ObjectiveOf(t);
  std::string result = TrialPhaseName(t.phase);
  if (t.failure) result = "Failed " + t.failure->category;
  if (t.anomaly) result = std::string("Anomaly ") + health::AnomalyKindName(t.anomaly->kind);
  std::cout << t.name << "  " << ConfigToJson(t.config).dump() << "  " << result << "  "
            << ObjectiveMetricName(s.spec().objective.metric) << " "
            << (obj > 0 ? Significant(obj, 4) : "-") << "\n"
            << std::flush;
}

void PrintSummary(const nlohmann::json& j, const std::string& out_dir) {
  const auto& c = j["trialCounts"];
  if (j["local"].value("interrupted", false)) {
    std::cout << "\nInterrupted: running trials ended; the pool is saved in " << out_dir
              << " (run the same command again to resume).\n";
  } else {
    std::cout << "\nStopped: " << j.value("stopReason", "") << ". " << j.value("stopMessage", "")
              << "\n";
  }
  std::cout << "Trials: " << c.value("total", 0) << " (" << c.value("succeeded", 0)
            << " succeeded, " << c.value("failed", 0) << " failed, " << c.value("rejected", 0)
            << " candidates rejected before running)\n";
  if (j["best"].is_object()) {
    std::cout << "Best:   " << j["best"].value("trialName", "") << " "
              << Significant(j["best"].value("objective", 0.0), 4) << " "
              << j["best"]["config"].dump() << "\n";
  }
  std::cout << "Logs:   " << out_dir << "/trials/\n";
}

int RunTune(const Args& args) {
  const std::string cmd = "tune";
  if (!args.Has("--local")) {
    return ReportError(cmd, Status::Invalid("--local: required (in a cluster, kubectl apply the "
                                            "campaign and the operator runs it)"));
  }
  const std::string file = args.GetOr("-f", "");
  if (file.empty()) return ReportError(cmd, Status::Invalid("-f: campaign file required"));
  auto spec = LoadCampaignFile(file);
  if (!spec.ok()) return ReportError(cmd, spec.status());
  auto max_trials = args.GetInt("--max-trials", 0, 0, 100000);
  if (!max_trials.ok()) return ReportError(cmd, max_trials.status());
  if (*max_trials > 0) spec->budget.max_trials = *max_trials;
  auto seed = args.GetInt("--seed", 1, 0, INT64_MAX);
  if (!seed.ok()) return ReportError(cmd, seed.status());
  auto devices = Devices(args);
  if (!devices.ok()) return ReportError(cmd, devices.status());
  LocalTrialOptions lo;
  lo.out_dir = args.GetOr("--out", "paratune-" + spec->name);
  lo.devices = *devices;
  std::error_code ec;
  lo.work_dir = std::filesystem::current_path(ec).string();
  if (ec) return ReportError(cmd, Status::Internal("working directory: " + ec.message()));
  lo.extra_path = SelfDir();  // `command: [paratune, trial-sim]` runs this very binary
  auto executor = LocalTrialExecutor::Create(*spec, lo);
  if (!executor.ok()) return ReportError(cmd, executor.status());
  LocalCampaignOptions co;
  co.out_dir = lo.out_dir;
  co.seed = static_cast<uint64_t>(*seed);
  co.strategy =
      args.GetOr("--strategy", spec->agents.engine.empty() ? "builtin" : spec->agents.engine);
  co.interrupted = &g_interrupted;
  // LLM engines (spec.agents.engine llm|hybrid): the endpoint and model of spec.agents.llm, the
  // key from $OPENAI_API_KEY, as `paratune simulate` builds them.
  EngineFactoryOptions engines;
  engines.seed = co.seed;
  engines.overrides.api_key = EnvOr("OPENAI_API_KEY", "");
  engines.overrides.knowledge_dir = EnvOr("PARATUNE_KNOWLEDGE_DIR", "");
  co.engine_factory = MakeEngineFactory(std::move(engines));
  const bool json = args.JsonOutput();
  TrialObserver observer;
  if (!json) observer = PrintRow;
  InstallHandlers();
  auto result = RunLocalCampaign(*spec, co, executor->get(), observer);
  if (!result.ok()) return ReportError(cmd, result.status());
  if (json) {
    std::cout << result->json.dump(2) << "\n";
  } else {
    PrintSummary(result->json, lo.out_dir);
  }
  return result->interrupted ? kExitInterrupted : kExitOk;
}

}  // namespace

PARATUNE_COMMAND("tune",
                 "run the agent loop with every trial as local processes on this machine "
                 "(-f CAMPAIGN --local [--out DIR] [--max-trials K] [--devices N|LIST|none])",
                 {"--local"}, RunTune,
                 {"-f", "--devices", "--max-trials", "--out", "--seed", "--strategy"});

}  // namespace paratune::cli
