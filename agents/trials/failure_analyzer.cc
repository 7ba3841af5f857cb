#include "agents/trials/failure_analyzer.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>

#include "base/strings.h"

namespace paratune {

namespace {

struct Rule {
  const char* needle;  // lower case
  const char* category;
  std::vector<std::string> parameters;
  bool retryable;
  int confidence;
  const char* error;
  // A symptom explains a failure only when no root-cause line does (every retryable rule is
  // one; a bare timeout is one that is not retried: a hang with no cause in the log would hang
  // again, as the knowledge base's Timeout signature judges it).
  bool symptom = false;
};

const std::vector<Rule>& Rules() {
  static const std::vector<Rule> kRules = {
      {"cuda out of memory",
       "CudaOOM",
       {"mbs", "recompute", "tp", "pp"},
       false,
       90,
       "torch.OutOfMemoryError"},
      {"resource_exhausted",
       "TpuResourceExhausted",
       {"perDeviceBatchSize", "remat", "iciFsdp"},
       false,
       90,
       "RESOURCE_EXHAUSTED"},
      {"is not divisible by", "InvalidParallelism", {"tp", "pp"}, false, 85, "AssertionError"},
      {"divisible", "InvalidParallelism", {"tp", "pp"}, false, 70, "ValueError"},
      {"nccl", "CollectiveTimeout", {}, true, 60, "NCCL error"},
      {"xid", "NodeFault", {}, true, 70, "Xid error"},
      {"ecc error", "NodeFault", {}, true, 70, "ECC error"},
      {"node fault", "NodeFault", {}, true, 60, "node fault"},
      {"timed out", "Timeout", {}, false, 40, "timeout", true},
  };
  return kRules;
}

FailureDiagnosis FromRule(const Rule& r, const std::string& line, const Config& config) {
  FailureDiagnosis d;
  d.category = r.category;
  d.retryable = r.retryable;
  d.confidence = r.confidence;
  d.evidence = line;
  std::string who;
  for (const auto& p : r.parameters) {
    if (config.count(p) == 0) continue;
    d.parameters.push_back(p);
    who += (who.empty() ? "" : " and ") + p + " " + config.at(p).ToString();
  }
  d.summary = (who.empty() ? std::string("infrastructure") : who) + " caused " + r.error +
              " (Confidence: " + std::to_string(r.confidence) + ")";
  return d;
}

class FallbackFailureAnalyzer : public FailureAnalyzer {
 public:
  // The earliest root-cause line wins; symptoms (faults, collective and other timeouts) are
  // used only when nothing else explains the failure.
  FailureDiagnosis Diagnose(const FailureEvidence& evidence, const Config& config,
                            const Workload*) const override {
    std::optional<FailureDiagnosis> symptom;
    std::istringstream in(evidence.log);
    std::string line;
    while (std::getline(in, line)) {
      const std::string lower = Lower(line);
      for (const Rule& r : Rules()) {
        if (lower.find(r.needle) == std::string::npos) continue;
        if (!r.retryable && !r.symptom) return FromRule(r, line, config);
        if (!symptom) symptom = FromRule(r, line, config);
        break;
      }
    }
    if (symptom) return *symptom;
    FailureDiagnosis d;
    d.category = "Unknown";
    d.confidence = 20;
    d.summary = "unrecognized failure (Confidence: 20)";
    if (evidence.pod_reason == "OOMKilled") {
      d.category = "HostOOM";
      d.confidence = 70;
      d.summary = "host memory exhausted (OOMKilled) (Confidence: 70)";
    }
    return d;
  }
};

}  // namespace

std::unique_ptr<FailureAnalyzer> MakeFallbackFailureAnalyzer() {
  return std::make_unique<FallbackFailureAnalyzer>();
}

}  // namespace paratune
