// Per-node faults of the simulated cluster (issue 9): the hidden state of a sick node that
// trial-sim, `paratune node-check` and the attribution benchmark play, and that the agents must
// discover from what trials and diagnostic checks report. Never read by the agents themselves.
//
// Text form, used by `paratune-kubelet-sim --node-faults`, the env variable
// PARATUNE_SIM_NODE_FAULTS and trial-sim's `--node-faults` flag: entries separated by ';' or ',',
// each NODE=KIND:SEVERITY, e.g.
//   "paratune-gpu-2=throttle:0.5;paratune-gpu-3=flaky:0.3"
// KIND:
//   throttle   one GPU runs at SEVERITY of its clock (0 < SEVERITY < 1): compute slows; a
//              synchronous job runs at the pace of its slowest device.
//   slow-link  the node's network runs at SEVERITY of its bandwidth (0 < SEVERITY < 1):
//              inter-node collectives slow.
//   flaky      each trial touching the node fails with probability SEVERITY (0 < SEVERITY <= 1)
//              with a node-level error (Xid, NCCL timeout); survivors show step-time spikes.
// Pure value types and functions: thread-safe.
#ifndef PARATUNE_AGENTS_SIM_NODE_FAULTS_H_
#define PARATUNE_AGENTS_SIM_NODE_FAULTS_H_

#include <string>
#include <vector>

#include "base/status.h"

namespace paratune {

enum class NodeFaultKind { kThrottle, kSlowLink, kFlaky };

struct NodeFault {
  std::string node;
  NodeFaultKind kind = NodeFaultKind::kThrottle;
  double severity = 0.5;
};

// "throttle", "slow-link", "flaky".
const char* NodeFaultKindName(NodeFaultKind kind);

// Parses the text form above. Empty text gives no faults. Errors name the entry, e.g.
// `node fault "gpu-2=hot:0.5": kind must be throttle, slow-link or flaky`.
Result<std::vector<NodeFault>> ParseNodeFaults(const std::string& text);
// The text form of `faults` (parses back to the same list).
std::string FormatNodeFaults(const std::vector<NodeFault>& faults);

// The faults of the given nodes, in the order of `faults`.
std::vector<NodeFault> FaultsOn(const std::vector<NodeFault>& faults,
                                const std::vector<std::string>& nodes);

}  // namespace paratune

#endif  // PARATUNE_AGENTS_SIM_NODE_FAULTS_H_
