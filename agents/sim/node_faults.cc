#include "agents/sim/node_faults.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "base/strings.h"

namespace paratune {

namespace {

Result<NodeFault> ParseEntry(const std::string& entry) {
  const std::string where = "node fault \"" + entry + "\": ";
  size_t eq = entry.find('=');
  size_t colon = entry.rfind(':');
  if (eq == std::string::npos || colon == std::string::npos || colon < eq) {
    return Status::Invalid(where + "expected NODE=KIND:SEVERITY");
  }
  NodeFault f;
  f.node = Trim(entry.substr(0, eq));
  if (f.node.empty()) return Status::Invalid(where + "the node name is empty");
  std::string kind = Trim(entry.substr(eq + 1, colon - eq - 1));
  if (kind == "throttle") {
    f.kind = NodeFaultKind::kThrottle;
  } else if (kind == "slow-link") {
    f.kind = NodeFaultKind::kSlowLink;
  } else if (kind == "flaky") {
    f.kind = NodeFaultKind::kFlaky;
  } else {
    return Status::Invalid(where + "kind must be throttle, slow-link or flaky");
  }
  std::string sev = Trim(entry.substr(colon + 1));
  char* end = nullptr;
  f.severity = std::strtod(sev.c_str(), &end);
  if (sev.empty() || end == nullptr || *end != '\0') {
    return Status::Invalid(where + "severity is not a number");
  }
  bool ok = f.kind == NodeFaultKind::kFlaky ? (f.severity > 0 && f.severity <= 1)
                                            : (f.severity > 0 && f.severity < 1);
  if (!ok) {
    return Status::Invalid(where + (f.kind == NodeFaultKind::kFlaky
                                        ? "severity must be in (0, 1]"
                                        : "severity must be in (0, 1)"));
  }
  return f;
}

}  // namespace

const char* NodeFaultKindName(NodeFaultKind kind) {
  switch (kind) {
    case NodeFaultKind::kThrottle:
      return "throttle";
    case NodeFaultKind::kSlowLink:
      return "slow-link";
    case NodeFaultKind::kFlaky:
      return "flaky";
  }
  return "throttle";
}

Result<std::vector<NodeFault>> ParseNodeFaults(const std::string& text) {
  std::vector<NodeFault> out;
  std::string entry;
  std::string normalized = text;
  std::replace(normalized.begin(), normalized.end(), ',', ';');
  std::stringstream in(normalized);
  while (std::getline(in, entry, ';')) {
    entry = Trim(entry);
    if (entry.empty()) continue;
    auto f = ParseEntry(entry);
    if (!f.ok()) return f.status();
    out.push_back(*f);
  }
  return out;
}

std::string FormatNodeFaults(const std::vector<NodeFault>& faults) {
  std::ostringstream out;
  for (size_t i = 0; i < faults.size(); ++i) {
    if (i > 0) out << ';';
    out << faults[i].node << '=' << NodeFaultKindName(faults[i].kind) << ':' << faults[i].severity;
  }
  return out.str();
}

std::vector<NodeFault> FaultsOn(const std::vector<NodeFault>& faults,
                                const std::vector<std::string>& nodes) {
  std::vector<NodeFault> out;
  for (const NodeFault& f : faults) {
    if (std::find(nodes.begin(), nodes.end(), f.node) != nodes.end()) out.push_back(f);
  }
  return out;
}

}  // namespace paratune
