// Signatures written from what the software prints and its documentation says the cause is (CUDA's
// error enum, NCCL's and PyTorch's source, the NVIDIA Xid catalog, Kubernetes' pod disruption
// conditions and scheduler plugins, Kueue, the cluster autoscaler, node-problem-detector and the
// kernel, DCGM, InfiniBand, DeepSpeed, Megatron-LM, JAX, compilers, MaxText's maxtest guide):
// each message, as a
// user sees it in a failed pod's log or status, is explained by its own signature, with the
// category and retryable its documentation gives, and the signature names its source.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <set>
#include <string>

#include "tests/support/embedded_diagnostician.h"

namespace paratune {
namespace {

TEST(DocumentedMessagesTest, EachIsExplainedByItsOwnSignatureAsDocumented) {
  const testing::EmbeddedDiagnostician e = testing::LoadEmbeddedDiagnostician();
  ASSERT_NE(e.diagnostician, nullptr);
  const YAML::Node file =
      YAML::LoadFile(PARATUNE_SOURCE_DIR "/tests/knowledge/data/documented-messages.yaml");
  const YAML::Node messages = file["messages"];
  ASSERT_TRUE(messages.IsSequence());
  std::set<std::string> keys;
  for (const auto& m : messages) {
    const std::string key = m["signature"].as<std::string>();
    keys.insert(key);
    const FailureSignature* sig = e.kb->FindSignature(key);
    ASSERT_NE(sig, nullptr) << key;
    EXPECT_FALSE(sig->reference.empty()) << key;
    DiagnosisInput in;
    in.log = m["log"].as<std::string>();
    in.exit_code = 1;
    const FailureDiagnosis got = e.diagnostician->Diagnose(in);
    EXPECT_EQ(got.signature, key) << in.log;
    EXPECT_EQ(got.category, m["category"].as<std::string>()) << key;
    EXPECT_EQ(got.retryable, m["retryable"].as<bool>()) << key;
    EXPECT_EQ(sig->retryable, m["retryable"].as<bool>()) << key;
  }
  EXPECT_GE(keys.size(), 75u);  // of the signatures written or widened from documentation
}

// A message that only resembles a documented one is not taken for it: the signatures name the
// specific failure, not its family.
TEST(DocumentedMessagesTest, NeighbouringMessagesAreNotTakenForThem) {
  const testing::EmbeddedDiagnostician e = testing::LoadEmbeddedDiagnostician();
  ASSERT_NE(e.diagnostician, nullptr);
  const struct {
    const char* log;
    const char* not_signature;
  } cases[] = {
      // A program's own halt injects a slice failure of another kind: not the chip driver's.
      {"E0511 18:18:50.796852 915 tpunetd_client.cc:311] Detected failure "
       "SLICE_FAILURE_SW_INJECT_ERROR in session e6c885828b538167; Start failure handling",
       "tpu-slice-chip-driver-error"},
      // The older halt report blames only the compiler.
      {"0x0x0_TC0: *** Halt is unexpected, all pending programs will fail. This is likely an XLA "
       "compiler bug, please file a bug to xla-tpu@ and CC tfrt-devs@.",
       "tpu-bad-hardware-or-compiler"},
      // Xid 79 is the GPU's, not the application's.
      {"NVRM: Xid (PCI:0000:1b:00): 79, pid=4127, name=python, GPU has fallen off the bus.",
       "gpu-xid-application"},
      // A taint of the pool's own (the GPU nodes') is the placement's, not a passing condition.
      {"0/3 nodes are available: 3 node(s) had untolerated taint {nvidia.com/gpu: present}.",
       "unschedulable-condition-taint"},
      // A CPU resource the kubelet lacks is not an accelerator fault.
      {"Pod was rejected: Node didn't have enough resource: cpu, requested: 8000, used: 60000, "
       "capacity: 64000",
       "k8s-kubelet-out-of-accelerator"},
  };
  for (const auto& c : cases) {
    DiagnosisInput in;
    in.log = c.log;
    in.exit_code = 1;
    EXPECT_NE(e.diagnostician->Diagnose(in).signature, c.not_signature) << c.log;
  }
}

}  // namespace
}  // namespace paratune
