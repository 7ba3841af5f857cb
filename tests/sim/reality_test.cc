#include "agents/sim/reality.h"

#include <gtest/gtest.h>

#include "agents/model/perf_model.h"
#include "tests/sim/workloads.h"

namespace paratune {
namespace {

using testing::Llama8bH100;

using PV = ParamValue;

ParallelPlan Plan(const Workload& w, int64_t tp, int64_t mbs) {
  return PlanFromConfig(w, {{"tp", PV::Int(tp)},
                            {"pp", PV::Int(1)},
                            {"mbs", PV::Int(mbs)},
                            {"recompute", PV::Enum("full")}});
}

TEST(RealityTest, KindsShareTheSeedsPerturbedConstantsAndUnknownKindsAreRefused) {
  auto perturbed = sim::RealityFor(7, "perturbed");
  auto structural = sim::RealityFor(7, "structural");
  ASSERT_TRUE(perturbed.ok());
  ASSERT_TRUE(structural.ok());
  EXPECT_FALSE(perturbed->structural);
  EXPECT_TRUE(structural->structural);
  EXPECT_DOUBLE_EQ(perturbed->constants.gemm_max, structural->constants.gemm_max);
  EXPECT_DOUBLE_EQ(perturbed->per_microbatch_overhead_s, structural->per_microbatch_overhead_s);
  auto bad = sim::RealityFor(7, "exact");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--reality"), std::string::npos);
}

TEST(RealityTest, StructuralRealitiesCostMoreMemoryAndPayAFloorPerMicroBatch) {
  const Workload w = Llama8bH100();
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    const sim::Reality p = sim::RealityForSeed(seed);
    const sim::Reality s = *sim::RealityFor(seed, "structural");
    for (int64_t mbs : {1, 2, 4}) {
      const sim::RealOutcome a = sim::EvaluateReality(w, Plan(w, 2, mbs), p);
      const sim::RealOutcome b = sim::EvaluateReality(w, Plan(w, 2, mbs), s);
      EXPECT_GT(b.peak_gib, a.peak_gib) << "seed " << seed << " mbs " << mbs;
      EXPECT_GT(b.step_time_seconds, a.step_time_seconds) << "seed " << seed << " mbs " << mbs;
    }
    // The same tokens in more micro-batches cost more on a structural reality than the
    // perturbed one says (the launch floor and small tiles), so the form differs.
    const double perturbed_ratio = sim::EvaluateReality(w, Plan(w, 2, 1), p).step_time_seconds /
                                   sim::EvaluateReality(w, Plan(w, 2, 4), p).step_time_seconds;
    const double structural_ratio = sim::EvaluateReality(w, Plan(w, 2, 1), s).step_time_seconds /
                                    sim::EvaluateReality(w, Plan(w, 2, 4), s).step_time_seconds;
    EXPECT_GT(structural_ratio, perturbed_ratio) << "seed " << seed;
  }
}

}  // namespace
}  // namespace paratune
