// Every failure the simulated cluster plays is diagnosed as what it is. The simulator writes the
// log a framework prints for each kind of failure and records the kind it played
// (`true_failure_category`); the loop only sees the log, through the diagnostician and the
// embedded knowledge base. A simulated failure the diagnosis names wrongly would teach the loop
// the wrong lesson (a chip fault taken for a compile error is never retried and its configuration
// is avoided), so each kind is checked on both accelerators, over many attempts.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "agents/sim/simulated_cluster.h"
#include "tests/sim/workloads.h"
#include "tests/support/embedded_diagnostician.h"

namespace paratune {
namespace {

using PV = ParamValue;

struct Played {
  int failures = 0;
  std::map<std::string, int> by_category;  // true category -> failures played
};

// Runs `attempts` attempts of (w, c) and checks each failure's diagnosis: its category is the one
// played, and it is retryable exactly when the failure is the cluster's (a chip, a node, the
// network), not the configuration's.
Played ExpectDiagnosedAsPlayed(const Diagnostician& d, const Workload& w, const Config& c,
                               const SimOptions& opt, int attempts) {
  Played played;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    const SimTrialResult r = RunSimulatedTrial(w, c, opt, attempt);
    if (r.exit_code == 0) continue;
    ++played.failures;
    ++played.by_category[r.true_failure_category];
    DiagnosisInput in;
    in.log = r.log;
    in.exit_code = r.exit_code;
    in.config = &c;
    in.workload = &w;
    const FailureDiagnosis got = d.Diagnose(in);
    const bool cluster_fault =
        r.true_failure_category == "NodeFault" || r.true_failure_category == "CollectiveTimeout";
    EXPECT_EQ(got.category, r.true_failure_category)
        << w.hardware.accelerator << " attempt " << attempt << " (" << got.signature << ")\n"
        << r.log.substr(r.log.size() > 1500 ? r.log.size() - 1500 : 0);
    EXPECT_EQ(got.retryable, cluster_fault)
        << w.hardware.accelerator << " attempt " << attempt << " " << r.true_failure_category
        << " (" << got.signature << ")";
  }
  return played;
}

class SimulatedFailureDiagnosisTest : public ::testing::Test {
 protected:
  void SetUp() override {
    embedded_ = testing::LoadEmbeddedDiagnostician();
    ASSERT_NE(embedded_.diagnostician, nullptr);
  }

  static SimOptions InfraFaultsOnly() {
    SimOptions o;
    o.infra_fault_rate = 1;
    return o;
  }

  const Diagnostician& diagnostician() const { return *embedded_.diagnostician; }

  testing::EmbeddedDiagnostician embedded_;
};

const Config kGpuFits = {{"tp", PV::Int(2)},
                         {"mbs", PV::Int(1)},
                         {"recompute", PV::Enum("selective")},
                         {"distributedOptimizer", PV::Bool(true)}};
const Config kTpuFits = {{"remat", PV::Enum("full")}};

TEST_F(SimulatedFailureDiagnosisTest, GpuInfrastructureFaults) {
  const Played p = ExpectDiagnosedAsPlayed(diagnostician(), testing::Llama8bH100(2), kGpuFits,
                                           InfraFaultsOnly(), 30);
  EXPECT_EQ(p.failures, 30);
  EXPECT_GT(p.by_category.count("NodeFault"), 0u);  // both kinds were played
  EXPECT_GT(p.by_category.count("CollectiveTimeout"), 0u);
}

TEST_F(SimulatedFailureDiagnosisTest, TpuInfrastructureFaults) {
  const Played p = ExpectDiagnosedAsPlayed(diagnostician(), testing::Llama7bV5e(), kTpuFits,
                                           InfraFaultsOnly(), 10);
  EXPECT_EQ(p.failures, 10);
  EXPECT_EQ(p.by_category.count("NodeFault"), 1u);
}

TEST_F(SimulatedFailureDiagnosisTest, FlakyGpuNode) {
  const Played p = ExpectDiagnosedAsPlayed(diagnostician(), testing::Llama8bH100(2), kGpuFits,
                                           testing::OnNodes({"n0", "n1"}, "n1=flaky:1"), 30);
  EXPECT_GT(p.failures, 10);
  EXPECT_GT(p.by_category.count("NodeFault"), 0u);
  EXPECT_GT(p.by_category.count("CollectiveTimeout"), 0u);
}

TEST_F(SimulatedFailureDiagnosisTest, FlakyTpuHost) {
  const Played p = ExpectDiagnosedAsPlayed(diagnostician(), testing::Llama7bV5e(), kTpuFits,
                                           testing::OnNodes({"t0"}, "t0=flaky:1"), 10);
  EXPECT_GT(p.failures, 3);
  EXPECT_EQ(p.by_category.count("NodeFault"), 1u);
}

TEST_F(SimulatedFailureDiagnosisTest, ConfigurationFailures) {
  SimOptions none;
  none.infra_fault_rate = 0;
  Workload qwen = testing::Llama8bH100();
  qwen.model = *FindModelPreset("qwen2.5-0.5b");  // 14 heads
  const struct {
    Workload w;
    Config c;
    const char* expected;
  } cases[] = {
      {testing::Llama8bH100(),
       {{"tp", PV::Int(1)}, {"mbs", PV::Int(4)}, {"recompute", PV::Enum("none")}},
       "CudaOOM"},
      {qwen, {{"tp", PV::Int(4)}}, "InvalidParallelism"},
      {testing::Llama8bH100(), {{"mbs", PV::Int(3)}}, "InvalidParallelism"},
      {testing::Llama7bV5e(),
       {{"remat", PV::Enum("minimal")}, {"perDeviceBatchSize", PV::Int(8)}},
       "TpuResourceExhausted"},
      {testing::Llama7bV5e(),
       {{"iciFsdp", PV::Int(8)}, {"iciTensor", PV::Int(4)}},
       "InvalidParallelism"},
  };
  for (const auto& tc : cases) {
    const Played p = ExpectDiagnosedAsPlayed(diagnostician(), tc.w, tc.c, none, 2);
    EXPECT_EQ(p.failures, 2) << tc.expected;
    EXPECT_EQ(p.by_category.count(tc.expected), 1u) << tc.expected;
  }
}

}  // namespace
}  // namespace paratune
