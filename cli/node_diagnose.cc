// paratune node-diagnose [--checks gpu-clocks,ecc-xid,gemm,hbm-bandwidth]
//   [--accelerator nvidia-h100-80gb] [--node NAME] [--timeout SECONDS] [--simulated] [-o json]
// The whitelisted diagnostic checks of contract section 10 (agents/health/diagnostic_checks.h)
// on THIS machine: each check's fixed command (nvidia-smi, the GEMM and HBM PyTorch scripts) runs
// as a local process in its own process group, and its output is judged by the very parser the
// operator uses on a diagnostic Job's log (InterpretCheckOutput), against the catalog figures of
// --accelerator. nccl-allreduce needs two nodes and is refused here. --simulated judges what
// `paratune node-check` prints for a healthy simulated node instead of running the tools (for
// machines without a GPU). A check whose output does not parse, that cannot start or that runs
// past --timeout is inconclusive. JSON: {"node", "accelerator", "checks": [{"check", "passed",
// "inconclusive", "summary", "measurements", "seconds"}], "passed", "inconclusive"}. Exit 0 when
// every check passed, 1 otherwise, 2 on bad flags.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "agents/health/diagnostic_checks.h"
#include "agents/sim/node_checks.h"
#include "cli/command.h"
#include "cli/local_process.h"

namespace paratune::cli {

namespace {

struct Ran {
  std::string output;
  std::string error;  // why there is no output to judge
  double seconds = 0;
};

Ran RunCheckCommand(const health::CheckSpec& check, const std::string& dir, int64_t timeout_s) {
  Ran ran;
  const auto start = std::chrono::steady_clock::now();
  ProcessSpec ps;
  ps.argv = check.command;
  ps.log_path = dir + "/" + check.name + ".log";
  auto p = LocalProcess::Start(ps);
  if (!p.ok()) {
    ran.error = p.status().message();
    return ran;
  }
  std::optional<int> status;
  while (!(status = (*p)->Poll())) {
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(timeout_s)) {
      (*p)->Signal(SIGKILL);
      ran.error = "ran past --timeout " + std::to_string(timeout_s) + "s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ran.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream in(ps.log_path);
  std::stringstream ss;
  ss << in.rdbuf();
  ran.output = ss.str();
  if (ran.error.empty() && status && *status != 0 && ran.output.empty()) {
    ran.error = "exit status " + std::to_string(*status) + " with no output";
  }
  return ran;
}

Result<std::vector<std::string>> ChecksOf(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string name; std::getline(in, name, ',');) {
    auto spec = health::FindCheck(name);
    if (!spec.ok()) return spec.status().WithPrefix("--checks");
    if ((*spec)->pods > 1) {
      return Status::Invalid("--checks: " + name + " needs " + std::to_string((*spec)->pods) +
                             " nodes; node-diagnose runs one-node checks only");
    }
    out.push_back(name);
  }
  if (out.empty()) return Status::Invalid("--checks: no check named");
  return out;
}

nlohmann::json Judge(const std::string& check, const std::string& node, const Ran& ran,
                     const nlohmann::json& expected) {
  nlohmann::json j = {{"check", check}, {"seconds", ran.seconds}};
  auto judged = ran.error.empty() ? health::InterpretCheckOutput(check, node, ran.output, expected)
                                  : Result<health::CheckResult>(Status::Unavailable(ran.error));
  if (!judged.ok()) {
    j.update({{"passed", false},
              {"inconclusive", true},
              {"summary", judged.status().message()},
              {"measurements", nullptr}});
    return j;
  }
  j.update({{"passed", judged->passed},
            {"inconclusive", judged->inconclusive},
            {"summary", judged->summary},
            {"measurements", judged->measurements}});
  return j;
}

int RunNodeDiagnose(const Args& args) {
  const std::string cmd = "node-diagnose";
  auto checks = ChecksOf(args.GetOr("--checks", "gpu-clocks,ecc-xid,gemm,hbm-bandwidth"));
  if (!checks.ok()) return ReportError(cmd, checks.status());
  auto timeout = args.GetInt("--timeout", 120, 1, 3600);
  if (!timeout.ok()) return ReportError(cmd, timeout.status());
  const std::string accelerator = args.GetOr("--accelerator", "nvidia-h100-80gb");
  char host[256] = "localhost";
  gethostname(host, sizeof(host) - 1);
  const std::string node = args.GetOr("--node", host);
  const nlohmann::json expected = health::ExpectationsFor(accelerator);
  std::error_code ec;
  const std::string dir = std::filesystem::temp_directory_path(ec).string() + "/paratune-diag-" +
                          std::to_string(getpid());
  std::filesystem::create_directories(dir, ec);
  if (ec) return ReportError(cmd, Status::Internal("cannot create " + dir + ": " + ec.message()));
  nlohmann::json out = {{"node", node},
                        {"accelerator", accelerator},
                        {"simulated", args.Has("--simulated")},
                        {"checks", nlohmann::json::array()}};
  bool passed = true, inconclusive = false;
  for (const auto& name : *checks) {
    Ran ran;
    if (args.Has("--simulated")) {
      ran.output = SimulatedCheckOutput(name, node, {}, {node}, accelerator, 1);
    } else {
      ran = RunCheckCommand(**health::FindCheck(name), dir, *timeout);
    }
    nlohmann::json j = Judge(name, node, ran, expected);
    passed &= j.value("passed", false);
    inconclusive |= j.value("inconclusive", false);
    if (!args.JsonOutput()) {
      std::cout << name << ": "
                << (j.value("inconclusive", false) ? "INCONCLUSIVE"
                                                   : (j.value("passed", false) ? "pass" : "FAIL"))
                << "  " << j.value("summary", "") << "\n";
    }
    out["checks"].push_back(std::move(j));
  }
  std::filesystem::remove_all(dir, ec);
  out["passed"] = passed;
  out["inconclusive"] = inconclusive;
  if (args.JsonOutput()) std::cout << out.dump(2) << "\n";
  return passed ? kExitOk : kExitFailure;
}

}  // namespace

PARATUNE_COMMAND("node-diagnose",
                 "run the whitelisted diagnostic checks on this machine and judge them as the "
                 "operator does (--checks gpu-clocks,ecc-xid,gemm,hbm-bandwidth, --accelerator, "
                 "--timeout, --simulated)",
                 {"--simulated"}, RunNodeDiagnose,
                 {"--accelerator", "--checks", "--node", "--timeout"});

}  // namespace paratune::cli
