// paratune node-check CHECK: the simulated diagnostic check of contract section 10. Prints what
// the real whitelisted check (nvidia-smi, the GEMM/HBM scripts, nccl-tests' all_reduce_perf)
// would print on the simulated node, from that node's hidden faults, and exits 0; the operator
// parses that output exactly as it parses the real tools'. Reads, like trial-sim:
//   PARATUNE_NODE_NAME        the pod's node (--node)
//   PARATUNE_SIM_NODE_FAULTS  the cluster's faults, "NODE=KIND:SEVERITY;..." (--node-faults)
//   PARATUNE_SIM_JOB_NODES    the nodes of the pod's Job, ',' ';' or space separated (--peers):
//                             nccl-allreduce's partners
//   PARATUNE_ACCELERATOR      catalog name of the node's GPUs (--accelerator; default H100)
//   PARATUNE_SIM_SEED         noise seed (--seed)
// The output's tail (at most 4096 bytes, whole lines) also goes to the termination log.
// Exit 2 on an unknown check (naming the whitelist) or bad flags.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "agents/sim/node_checks.h"
#include "agents/sim/node_faults.h"
#include "agents/sim/reality.h"
#include "base/strings.h"
#include "cli/command.h"

namespace paratune::cli {

namespace {

std::vector<std::string> SplitNodes(std::string text) {
  for (char& c : text) {
    if (c == ',' || c == ';') c = ' ';
  }
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string n; in >> n;) out.push_back(n);
  return out;
}

std::string Names() {
  std::string out;
  for (const auto& n : SimulatedCheckNames()) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The last whole lines of `text` that fit in 4096 bytes (the kubelet's termination-message cap).
void WriteTerminationLog(const Args& args, const std::string& output) {
  std::string path = args.GetOr("--termination-log", EnvOr("PARATUNE_TERMINATION_LOG", ""));
  if (path.empty() && access("/dev/termination-log", W_OK) == 0) path = "/dev/termination-log";
  if (path.empty()) return;
  std::ofstream out(path, std::ios::trunc);
  out << LastLinesWithin(output, 4096);
  if (!out) std::cerr << "node-check: could not write the termination log " << path << "\n";
}

int RunNodeCheck(const Args& args) {
  const std::string cmd = "node-check";
  if (args.positional().size() != 1) {
    return ReportError(cmd,
                       Status::Invalid("CHECK: expected exactly one check name (" + Names() + ")"));
  }
  const std::string check = args.positional()[0];
  const auto& names = SimulatedCheckNames();
  if (std::find(names.begin(), names.end(), check) == names.end()) {
    return ReportError(
        cmd, Status::Invalid("CHECK \"" + check + "\": not a whitelisted check (" + Names() + ")"));
  }
  const std::string node = args.GetOr("--node", EnvOr("PARATUNE_NODE_NAME", ""));
  if (node.empty()) {
    return ReportError(cmd, Status::Invalid("--node: not given and PARATUNE_NODE_NAME is not set"));
  }
  auto faults = ParseNodeFaults(args.GetOr("--node-faults", EnvOr("PARATUNE_SIM_NODE_FAULTS", "")));
  if (!faults.ok()) return ReportError(cmd, faults.status().WithPrefix("--node-faults"));
  const auto peers = SplitNodes(args.GetOr("--peers", EnvOr("PARATUNE_SIM_JOB_NODES", "")));
  const std::string accelerator =
      args.GetOr("--accelerator", EnvOr("PARATUNE_ACCELERATOR", "nvidia-h100-80gb"));
  const std::string seed_text = EnvOr("PARATUNE_SIM_SEED", "");
  const int64_t default_seed =
      !seed_text.empty()
          ? std::atoll(seed_text.c_str())
          : static_cast<int64_t>(sim::HashString(EnvOr("PARATUNE_CAMPAIGN", "paratune")) &
                                 0x7fffffffffffLL);
  auto seed = args.GetInt("--seed", default_seed, 0, INT64_MAX);
  if (!seed.ok()) return ReportError(cmd, seed.status());
  const std::string output =
      SimulatedCheckOutput(check, node, *faults, peers, accelerator, static_cast<uint64_t>(*seed));
  std::cout << output << std::flush;
  WriteTerminationLog(args, output);
  return kExitOk;
}

}  // namespace

PARATUNE_COMMAND("node-check",
                 "simulated diagnostic check: prints what CHECK (gpu-clocks, ecc-xid, gemm, "
                 "hbm-bandwidth, nccl-allreduce) reports on the simulated node "
                 "(--node, --accelerator, --node-faults, --peers, --seed)",
                 {}, RunNodeCheck,
                 {"--accelerator", "--node", "--node-faults", "--peers", "--seed",
                  "--termination-log"});

}  // namespace paratune::cli
