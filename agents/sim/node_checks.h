// The simulated counterpart of the whitelisted diagnostic checks (contract section 10): what the
// real tools would print on a simulated node, from that node's hidden faults (node_faults.h).
// `paratune node-check CHECK` prints it inside the simulated cluster. Pure and deterministic for
// the same arguments: thread-safe.
#ifndef PARATUNE_AGENTS_SIM_NODE_CHECKS_H_
#define PARATUNE_AGENTS_SIM_NODE_CHECKS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "agents/sim/node_faults.h"

namespace paratune {

// The check names the simulation knows (the diagnostic whitelist).
const std::vector<std::string>& SimulatedCheckNames();

// The output of `check` on `node` in exactly the real tools' formats:
//   gpu-clocks      nvidia-smi --query-gpu=index,clocks.sm,clocks.max.sm,... --format=csv,noheader
//   ecc-xid         nvidia-smi --query-gpu=index,ecc.errors.uncorrected.volatile.total,... CSV,
//                   then NVRM Xid kernel-log lines
//   gemm            "gpu N: gemm bf16 8192x8192x8192 712.4 TFLOPS" per GPU
//   hbm-bandwidth   "gpu N: hbm copy 4096 MiB 2950.1 GB/s" per GPU
//   nccl-allreduce  nccl-tests all_reduce_perf's table and "# Avg bus bandwidth" line
// Faults of `node` (and, for nccl-allreduce, of `peers`): throttle puts one GPU's SM clock at
// severity x max with HW Slowdown active and its gemm at about severity; slow-link scales the
// bus bandwidth by severity; flaky logs an Xid 79 or 48 and ECC counts. A healthy node prints
// normal values with small noise drawn from `seed` and the node name. `accelerator` is a catalog
// name (unknown: nvidia-h100-80gb). An unknown check gives "".
std::string SimulatedCheckOutput(const std::string& check, const std::string& node,
                                 const std::vector<NodeFault>& faults,
                                 const std::vector<std::string>& peers,
                                 const std::string& accelerator, uint64_t seed);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_SIM_NODE_CHECKS_H_
