#include "agents/trials/knowledge_failure_analyzer.h"

#include <memory>

#include "agents/knowledge/diagnostician.h"
#include "agents/knowledge/knowledge_base.h"

namespace paratune {

namespace {

// Owns the knowledge base the Diagnostician reads.
class KnowledgeFailureAnalyzer : public FailureAnalyzer {
 public:
  KnowledgeFailureAnalyzer(std::shared_ptr<const KnowledgeBase> kb,
                           std::unique_ptr<Diagnostician> d)
      : kb_(std::move(kb)), diagnostician_(std::move(d)) {}

  FailureDiagnosis Diagnose(const FailureEvidence& evidence, const Config& config,
                            const Workload* workload) const override {
    DiagnosisInput in;
    in.log = evidence.log;
    in.pod_reason = evidence.pod_reason;
    in.exit_code = evidence.exit_code;
    in.events = evidence.events;
    in.config = &config;
    in.workload = workload;
    return diagnostician_->Diagnose(in);
  }

 private:
  std::shared_ptr<const KnowledgeBase> kb_;
  std::unique_ptr<Diagnostician> diagnostician_;
};

}  // namespace

Result<std::unique_ptr<FailureAnalyzer>> MakeKnowledgeFailureAnalyzer(
    std::shared_ptr<const KnowledgeBase> kb) {
  if (kb == nullptr) return Status::Invalid("knowledge base: required");
  auto d = Diagnostician::Create(kb.get());
  if (!d.ok()) return d.status();
  return std::unique_ptr<FailureAnalyzer>(
      new KnowledgeFailureAnalyzer(std::move(kb), std::move(d).value()));
}

Result<std::unique_ptr<FailureAnalyzer>> MakeKnowledgeFailureAnalyzer(
    const std::string& knowledge_dir) {
  auto kb = KnowledgeBase::LoadDefault(knowledge_dir);
  if (!kb.ok()) return kb.status();
  return MakeKnowledgeFailureAnalyzer(std::shared_ptr<const KnowledgeBase>(std::move(*kb)));
}

std::shared_ptr<const FailureAnalyzer> MakeEmbeddedFailureAnalyzer() {
  auto k = MakeKnowledgeFailureAnalyzer();
  return k.ok() ? std::shared_ptr<const FailureAnalyzer>(std::move(k).value())
                : std::shared_ptr<const FailureAnalyzer>(MakeFallbackFailureAnalyzer());
}

}  // namespace paratune
