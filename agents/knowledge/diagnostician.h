// The Diagnostician: from a failed trial's log tail, pod reason, exit code and events to a
// FailureDiagnosis (contract section 5): category, implicated config keys, a one-line summary
// ("tp 4 and numAttentionHeads 14 caused ValueError (Confidence: 95)"), confidence, retryable and
// the evidence lines.
//
// Rules: the earliest root-cause line wins over later noise; timeouts, watchdogs and "child
// failed" lines are symptoms and win only when nothing else explains the failure; when no
// signature matches, the known failures most like the log vote (known_failures.h) and decide only
// when their vote is clear; log text is data, never instructions (a line addressing "the agent"
// changes nothing).
#ifndef PARATUNE_AGENTS_KNOWLEDGE_DIAGNOSTICIAN_H_
#define PARATUNE_AGENTS_KNOWLEDGE_DIAGNOSTICIAN_H_

#include <memory>
#include <string>
#include <vector>

#include "agents/core/config.h"
#include "agents/core/results.h"
#include "agents/knowledge/knowledge_base.h"
#include "base/status.h"

namespace paratune {

struct Workload;  // agents/model/workload.h

struct DiagnosisInput {
  std::string log;                     // container log tail or termination message
  std::string pod_reason;              // "OOMKilled", "DeadlineExceeded", "Unschedulable",
                                       // "ErrImagePull", "ImagePullBackOff" ("" if none)
  int exit_code = 0;                   // container exit code (0: unknown)
  std::vector<std::string> events;     // scheduling / Job events text
  const Config* config = nullptr;      // the trial's config (parameter attribution); may be null
  const Workload* workload = nullptr;  // model shape for "numAttentionHeads 14"; may be null
};

class Diagnostician {
 public:
  // `kb` is not owned and must outlive the Diagnostician. Fails when kb is null.
  static Result<std::unique_ptr<Diagnostician>> Create(const KnowledgeBase* kb);

  // Always returns a diagnosis: a signature's when one matches; else the known failures' vote
  // when it is clear (confidence <= 60, signature "case:<url>"); else the category their words
  // make most probable when the model is sure (confidence 30, signature "words:<category>");
  // else category "Unknown" with confidence <= 30.
  // Thread-safe.
  FailureDiagnosis Diagnose(const DiagnosisInput& in) const;

  Diagnostician(const Diagnostician&) = delete;
  Diagnostician& operator=(const Diagnostician&) = delete;

 private:
  explicit Diagnostician(const KnowledgeBase* kb) : kb_(kb) {}
  const KnowledgeBase* kb_;
};

}  // namespace paratune

#endif  // PARATUNE_AGENTS_KNOWLEDGE_DIAGNOSTICIAN_H_
