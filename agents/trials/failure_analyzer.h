// The loop's Diagnostician seam: failure evidence of one trial -> FailureDiagnosis. The real one
// wraps agents/knowledge's Diagnostician over the embedded knowledge base
// (knowledge_failure_analyzer.h); a small built-in fallback covers the common signatures when no
// knowledge base is available.
#ifndef PARATUNE_AGENTS_TRIALS_FAILURE_ANALYZER_H_
#define PARATUNE_AGENTS_TRIALS_FAILURE_ANALYZER_H_

#include <memory>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/core/results.h"
#include "base/status.h"

namespace paratune {

struct Workload;

// What a failed trial left behind (pod status, log tail, events).
struct FailureEvidence {
  std::string log;         // log tail, or the termination message
  std::string pod_reason;  // "OOMKilled", "DeadlineExceeded", ... ("" if none)
  int exit_code = 0;
  std::vector<std::string> events;
};

// Thread-safety: Diagnose may run concurrently.
class FailureAnalyzer {
 public:
  virtual ~FailureAnalyzer() = default;
  // Always returns a diagnosis; category "Unknown" with low confidence when nothing matches.
  virtual FailureDiagnosis Diagnose(const FailureEvidence& evidence, const Config& config,
                                    const Workload* workload) const = 0;
};

// A keyword-based analyzer for the common failures (CUDA/XLA out of memory, divisibility
// assertions, collective timeouts, node faults). Used when the knowledge base is unavailable.
std::unique_ptr<FailureAnalyzer> MakeFallbackFailureAnalyzer();

}  // namespace paratune

#endif  // PARATUNE_AGENTS_TRIALS_FAILURE_ANALYZER_H_
