// The fallback diagnostician (used when the knowledge base cannot be loaded): the earliest root
// cause wins, symptoms explain a failure only when nothing else does, and a bare timeout is not
// retried (a hang with no cause in the log would hang again), as the knowledge base judges it.
#include <gtest/gtest.h>

#include "agents/trials/failure_analyzer.h"

namespace paratune {
namespace {

FailureDiagnosis Diagnose(const std::string& log, const std::string& pod_reason = "") {
  FailureEvidence e;
  e.log = log;
  e.pod_reason = pod_reason;
  const Config config{{"mbs", ParamValue::Int(4)}, {"tp", ParamValue::Int(2)}};
  return MakeFallbackFailureAnalyzer()->Diagnose(e, config, nullptr);
}

TEST(FallbackFailureAnalyzerTest, ABareTimeoutIsATimeoutThatIsNotRetried) {
  const FailureDiagnosis d = Diagnose("step 3\nRuntimeError: operation timed out after 1800 s");
  EXPECT_EQ(d.category, "Timeout");
  EXPECT_FALSE(d.retryable);
}

TEST(FallbackFailureAnalyzerTest, ARootCauseAfterATimeoutLineStillWins) {
  const FailureDiagnosis d = Diagnose(
      "warning: rendezvous timed out once, retrying\n"
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB");
  EXPECT_EQ(d.category, "CudaOOM");
  EXPECT_FALSE(d.retryable);
  EXPECT_EQ(d.parameters, (std::vector<std::string>{"mbs", "tp"}));
}

TEST(FallbackFailureAnalyzerTest, CollectiveTimeoutsAndNodeFaultsAreRetried) {
  FailureDiagnosis d = Diagnose("NCCL watchdog: collective operation timed out after 600000 ms");
  EXPECT_EQ(d.category, "CollectiveTimeout");
  EXPECT_TRUE(d.retryable);
  d = Diagnose("NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus");
  EXPECT_EQ(d.category, "NodeFault");
  EXPECT_TRUE(d.retryable);
}

TEST(FallbackFailureAnalyzerTest, ASilentLogFallsBackToThePodReason) {
  EXPECT_EQ(Diagnose("", "OOMKilled").category, "HostOOM");
  EXPECT_EQ(Diagnose("nothing to see").category, "Unknown");
}

}  // namespace
}  // namespace paratune
