// paratune trial-sim: the simulated training run of contract section 8. Reads the trial's
// configuration from PARATUNE_<KEY> variables (and --set), the workload from PARATUNE_WORKLOAD or
// -f CAMPAIGN.yaml, prints the framework's log and exits 0, or prints the real error text and
// exits 1. Bad input exits 2.
// Multi-pod trials (issue 13): the pod's node rank comes from --rank, JOB_COMPLETION_INDEX (the
// Indexed Job's), NODE_RANK or JAX_PROCESS_ID, the pod count from --nodes, NNODES or
// JAX_PROCESS_COUNT (the job renderer sets NNODES; without it: one pod); each pod prints what
// the framework prints on that rank (framework_log.h LineForRank: Megatron-LM's iteration
// lines on the last rank only, MaxText's and torchtitan's on rank 0), paced like the whole run. A
// real framework writes no termination message, so neither does trial-sim unless
// --termination-message or PARATUNE_SIM_TERMINATION_MESSAGE=1 (then every pod writes it on
// success). What is printed is what the framework prints (issue 35, framework_log.h
// AsPrinted): Megatron-LM without its TFLOP/s field unless --log-throughput (or
// PARATUNE_SIM_LOG_THROUGHPUT=1), as Megatron-LM does by default; torchtitan's step lines on
// every local rank (`[rankN]:`, plain torchrun) unless --one-rank; MaxText's step-1 dispatch
// artefact; validation lines. Progress lines are paced about 0.3 s each (at most ~5 s in all);
// --pace SECONDS or PARATUNE_SIM_SECONDS_PER_LINE sets the pause per progress line. Node faults
// (issue 9): --node-faults / PARATUNE_SIM_NODE_FAULTS (node_faults.h text form), the pod's node
// --node / PARATUNE_NODE_NAME and its Job's nodes --job-nodes / PARATUNE_SIM_JOB_NODES
// (comma-separated, default: its own node). The faults of those nodes are played
// (agents/sim/simulated_cluster.h); bad fault text exits 2 naming its source.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/model/parallel_plan.h"
#include "agents/model/workload.h"
#include "agents/sim/framework_log.h"
#include "agents/sim/node_faults.h"
#include "agents/sim/reality.h"
#include "agents/sim/simulated_cluster.h"
#include "cli/command.h"

namespace paratune::cli {

namespace {

const char* Env(const char* name) {
  const char* v = std::getenv(name);
  return (v != nullptr && v[0] != '\0') ? v : nullptr;
}

Status ReadEnvConfig(Config* config) {
  for (const auto& info : KnownParameters()) {
    const std::string var = "PARATUNE_" + ParameterEnvName(info.name);
    if (const char* v = Env(var.c_str())) {
      auto value = ParseParamText(info, v, var);
      if (!value.ok()) return value.status();
      (*config)[info.name] = *value;
    }
  }
  return Status::Ok();
}

Status ApplySets(const std::vector<std::string>& sets, Config* config) {
  for (const auto& s : sets) {
    const auto eq = s.find('=');
    const ParamInfo* info = eq == std::string::npos ? nullptr : FindParameter(s.substr(0, eq));
    if (info == nullptr) return Status::Invalid("--set " + s + ": expected a known key=value");
    auto value = ParseParamText(*info, s.substr(eq + 1), "--set " + s);
    if (!value.ok()) return value.status();
    (*config)[info->name] = *value;
  }
  return Status::Ok();
}

Result<Workload> LoadWorkload(const Args& args, Config* baseline) {
  if (auto file = args.Get("-f")) {
    auto spec = LoadCampaignFile(*file);
    if (!spec.ok()) return spec.status();
    if (spec->baseline) *baseline = *spec->baseline;
    return ResolveWorkload(*spec);
  }
  const char* text = Env("PARATUNE_WORKLOAD");
  if (text == nullptr) {
    return Status::Invalid("PARATUNE_WORKLOAD: not set (or pass -f CAMPAIGN.yaml)");
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::Invalid("PARATUNE_WORKLOAD: not valid JSON");
  return WorkloadFromJson(j);
}

std::vector<std::string> SplitNodes(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string n; std::getline(in, n, ',');) {
    const size_t b = n.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    n = n.substr(b, n.find_last_not_of(" \t") - b + 1);
    if (std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

// The simulated cluster's node faults (--node-faults or PARATUNE_SIM_NODE_FAULTS), this pod's
// node (--node or PARATUNE_NODE_NAME) and the nodes of its Job (--job-nodes or
// PARATUNE_SIM_JOB_NODES, comma-separated; its own node is always one of them).
Status ReadNodeFaults(const Args& args, SimOptions* opt) {
  std::string source = "--node-faults";
  std::optional<std::string> text = args.Get("--node-faults");
  if (!text) {
    source = "PARATUNE_SIM_NODE_FAULTS";
    if (const char* v = Env("PARATUNE_SIM_NODE_FAULTS")) text = v;
  }
  if (text) {
    auto faults = ParseNodeFaults(*text);
    if (!faults.ok()) return Status::Invalid(source + ": " + faults.status().message());
    opt->node_faults = *faults;
  }
  std::string node =
      args.GetOr("--node", Env("PARATUNE_NODE_NAME") ? Env("PARATUNE_NODE_NAME") : "");
  std::string job =
      args.GetOr("--job-nodes", Env("PARATUNE_SIM_JOB_NODES") ? Env("PARATUNE_SIM_JOB_NODES") : "");
  opt->nodes = SplitNodes(job);
  if (!node.empty() && std::find(opt->nodes.begin(), opt->nodes.end(), node) == opt->nodes.end()) {
    opt->nodes.insert(opt->nodes.begin(), node);
  }
  return Status::Ok();
}

Result<SimOptions> ReadOptions(const Args& args, int64_t* attempt) {
  SimOptions opt;
  const char* campaign = Env("PARATUNE_CAMPAIGN");
  int64_t default_seed =
      campaign ? static_cast<int64_t>(sim::HashString(campaign) & 0x7fffffffffffLL) : 1;
  if (const char* s = Env("PARATUNE_SIM_SEED")) default_seed = std::atoll(s);
  auto seed = args.GetInt("--seed", default_seed, 0, INT64_MAX);
  if (!seed.ok()) return seed.status();
  opt.seed = static_cast<uint64_t>(*seed);
  // --reality perturbed|structural (contract section 11; same --seed meaning as simulate).
  const std::string reality = args.GetOr("--reality", "perturbed");
  if (reality != "perturbed" && reality != "structural") {
    return Status::Invalid("--reality: unknown kind \"" + reality + "\" (perturbed, structural)");
  }
  opt.structural_reality = reality == "structural";
  const char* env_attempt = Env("PARATUNE_ATTEMPT");
  auto a = args.GetInt("--attempt", env_attempt ? std::atoll(env_attempt) : 0, 0, 1 << 20);
  if (!a.ok()) return a.status();
  *attempt = *a;
  if (auto rate = args.Get("--fault-rate")) {
    opt.infra_fault_rate = std::atof(rate->c_str());
  } else if (const char* r = Env("PARATUNE_SIM_FAULT_RATE")) {
    opt.infra_fault_rate = std::atof(r);
  }
  if (opt.infra_fault_rate < 0 || opt.infra_fault_rate > 1) {
    return Status::Invalid("--fault-rate: must be within [0, 1]");
  }
  PARATUNE_RETURN_IF_ERROR(ReadNodeFaults(args, &opt));
  opt.start_unix_seconds =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return opt;
}

std::string TerminationLogPath(const Args& args) {
  if (auto p = args.Get("--termination-log")) return *p;
  if (const char* p = Env("PARATUNE_TERMINATION_LOG")) return p;
  if (access("/dev/termination-log", W_OK) == 0) return "/dev/termination-log";
  return "";
}

bool IsProgressLine(const std::string& line) {
  return line.find("] iteration ") != std::string::npos || line.rfind("completed step:", 0) == 0 ||
         line.find(" - step: ") != std::string::npos;
}

// This pod's place in the trial: --rank / --nodes, else the env the Job gives it.
Result<sim::RankView> ReadRankView(const Args& args) {
  sim::RankView v;
  int64_t env_rank = 0;
  for (const char* var : {"JOB_COMPLETION_INDEX", "NODE_RANK", "JAX_PROCESS_ID"}) {
    if (const char* r = Env(var)) {
      env_rank = std::atoll(r);
      break;
    }
  }
  // Outside a multi-pod Job (no NNODES: a run by hand, a single-pod Job) it prints everything.
  int64_t env_nodes = 1;
  for (const char* var : {"NNODES", "JAX_PROCESS_COUNT"}) {
    if (const char* n = Env(var)) {
      env_nodes = std::atoll(n);
      break;
    }
  }
  auto nodes = args.GetInt("--nodes", env_nodes, 1, 1 << 20);
  if (!nodes.ok()) return nodes.status();
  auto rank = args.GetInt("--rank", env_rank, 0, *nodes - 1);
  if (!rank.ok()) return rank.status();
  v.nodes = *nodes;
  v.node_rank = *rank;
  return v;
}

bool WantsTerminationMessage(const Args& args) {
  if (args.Has("--termination-message")) return true;
  const char* v = Env("PARATUNE_SIM_TERMINATION_MESSAGE");
  return v != nullptr && std::string(v) == "1";
}

// Prints this rank's lines of the whole trial's log; every progress line of the whole log is
// paced (`pace` seconds, or about 0.3 s each and at most ~5 s in all when negative) unless
// `fast`, so that every pod of the trial runs as long as the whole run.
void PrintLog(const std::string& log, bool fast, double pace,
              const std::function<std::vector<std::string>(const std::string&)>& keep) {
  int progress = 0;
  std::istringstream count(log);
  for (std::string line; std::getline(count, line);) progress += IsProgressLine(line);
  const double pause = pace >= 0 ? pace : (progress > 0 ? std::min(0.3, 5.0 / progress) : 0);
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    for (const std::string& printed : keep(line)) std::cout << printed << "\n" << std::flush;
    if (!fast && IsProgressLine(line)) {
      std::this_thread::sleep_for(std::chrono::duration<double>(pause));
    }
  }
}

Result<double> ReadPace(const Args& args) {
  if (auto p = args.Get("--pace")) {
    char* end = nullptr;
    const double v = std::strtod(p->c_str(), &end);
    if (end == p->c_str() || !(v >= 0 && v <= 3600)) {
      return Status::Invalid("--pace: seconds per progress line in [0, 3600]");
    }
    return v;
  }
  if (const char* p = Env("PARATUNE_SIM_SECONDS_PER_LINE")) {
    const double v = std::atof(p);
    if (!(v >= 0 && v <= 3600)) {
      return Status::Invalid("PARATUNE_SIM_SECONDS_PER_LINE: seconds in [0, 3600]");
    }
    return v;
  }
  return -1.0;
}

int RunTrialSim(const Args& args) {
  const std::string cmd = "trial-sim";
  Config config;
  auto workload = LoadWorkload(args, &config);
  if (!workload.ok()) return ReportError(cmd, workload.status());
  Status st = ReadEnvConfig(&config);
  if (st.ok()) st = ApplySets(args.GetAll("--set"), &config);
  if (!st.ok()) return ReportError(cmd, st);
  int64_t attempt = 0;
  auto opt = ReadOptions(args, &attempt);
  if (!opt.ok()) return ReportError(cmd, opt.status());
  auto view = ReadRankView(args);
  if (!view.ok()) return ReportError(cmd, view.status());
  auto pace = ReadPace(args);
  if (!pace.ok()) return ReportError(cmd, pace.status());
  const SimTrialResult r = RunSimulatedTrial(*workload, config, *opt, attempt);
  const ParallelPlan plan = PlanFromConfig(*workload, config);
  sim::PrintOptions print;
  const char* throughput = Env("PARATUNE_SIM_LOG_THROUGHPUT");
  print.log_throughput =
      args.Has("--log-throughput") || (throughput != nullptr && std::string(throughput) == "1");
  print.every_rank = !args.Has("--one-rank");
  PrintLog(r.log, args.Has("--fast"), *pace, [&](const std::string& line) {
    auto kept = sim::LineForRank(*workload, plan, *view, line);
    return kept ? sim::AsPrinted(*workload, *view, print, *kept) : std::vector<std::string>{};
  });
  if (r.exit_code == 0 && WantsTerminationMessage(args)) {
    const std::string path = TerminationLogPath(args);
    if (!path.empty()) {
      std::ofstream out(path, std::ios::trunc);
      out << r.termination_message;
      if (!out) std::cerr << "trial-sim: could not write the termination log " << path << "\n";
    }
  }
  if (args.JsonOutput()) {
    std::cout << nlohmann::json{{"exitCode", r.exit_code},
                                {"metrics", r.metrics.ToJson()},
                                {"terminationMessage", r.termination_message}}
                     .dump()
              << "\n";
  }
  return r.exit_code == 0 ? kExitOk : kExitFailure;
}

}  // namespace

PARATUNE_COMMAND("trial-sim",
                 "simulated training run: reads PARATUNE_* and prints a framework log "
                 "(--fast, --seed, --attempt, -f CAMPAIGN; --rank N --nodes M: this pod's rank "
                 "(default JOB_COMPLETION_INDEX, NNODES), which decides the lines it prints; "
                 "--termination-message or PARATUNE_SIM_TERMINATION_MESSAGE=1: write the "
                 "metrics to the termination log; --pace SECONDS per progress line; node faults: "
                 "--node-faults TEXT or "
                 "PARATUNE_SIM_NODE_FAULTS, e.g. \"gpu-2=throttle:0.5;gpu-3=slow-link:0.3;"
                 "gpu-1=flaky:0.4\", played on --node NAME or PARATUNE_NODE_NAME and the Job's "
                 "--job-nodes A,B or PARATUNE_SIM_JOB_NODES; what the framework prints: "
                 "Megatron-LM's TFLOP/s only with --log-throughput or "
                 "PARATUNE_SIM_LOG_THROUGHPUT=1, torchtitan's step line on every local rank "
                 "unless --one-rank)",
                 {"--fast", "--termination-message", "--log-throughput", "--one-rank"}, RunTrialSim,
                 {"-f", "--attempt", "--fault-rate", "--job-nodes", "--node", "--node-faults",
                  "--nodes", "--pace", "--rank", "--reality", "--seed", "--set",
                  "--termination-log"});

}  // namespace paratune::cli
