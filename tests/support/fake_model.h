// A small analytic stand-in for agents/model and trial-sim, so the loop is tested without them:
// 8 devices, tp/pp/mbs/recompute, 80 GiB, and a "reality" with its own efficiencies.
#ifndef PARATUNE_TESTS_SUPPORT_FAKE_MODEL_H_
#define PARATUNE_TESTS_SUPPORT_FAKE_MODEL_H_

#include <cmath>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/predict/planner_model.h"
#include "agents/session/tuning_session.h"

namespace paratune::testing {

class FakeModel : public PlannerModel {
 public:
  std::vector<std::string> Violations(const Config& c) const override {
    const int64_t tp = GetInt(c, "tp", 1), pp = GetInt(c, "pp", 1);
    if (tp * pp > 8)
      return {"tp " + std::to_string(tp) + " x pp " + std::to_string(pp) +
              " exceeds the 8 devices"};
    return {};
  }
  Estimate EstimateUncalibrated(const Config& c) const override { return Eval(c, 1, 1, 0); }
  double CapacityGiB() const override { return 80; }
  const Workload* workload() const override { return nullptr; }

  // The same formulas with efficiencies and an allocator overhead: the fake cluster's truth.
  Estimate Eval(const Config& c, double ce, double me, double overhead) const {
    const int64_t tp = GetInt(c, "tp", 1), pp = GetInt(c, "pp", 1), mbs = GetInt(c, "mbs", 1);
    const std::string rc = GetEnum(c, "recompute", "none");
    const double recompute = rc == "full" ? 1.33 : rc == "selective" ? 1.04 : 1.0;
    const double gemm = mbs == 1 ? 1.0 : mbs == 2 ? 0.93 : 0.9;
    Estimate e;
    e.time.compute = 10.0 * recompute * gemm / ce;
    e.time.tensor_parallel = 1.2 * (tp - 1) / static_cast<double>(tp) * (tp > 4 ? 2 : 1) / me;
    e.time.pipeline_bubble = e.time.compute * (pp - 1) / (16.0 / mbs);
    e.time.data_parallel = 0.3 / me;
    e.step_time_seconds =
        e.time.compute + e.time.tensor_parallel + e.time.pipeline_bubble + e.time.data_parallel;
    e.mfu = 5.0 / e.step_time_seconds;
    e.model_tflops_per_device = e.mfu * 989;
    e.tokens_per_second_per_device = 4000 * e.mfu;
    const double act = rc == "full" ? 2 : rc == "selective" ? 9 : 22;
    e.peak_memory_gib = 48.0 / (tp * pp) + 6 + act * mbs / tp + overhead;
    e.capacity_gib = 80;
    e.fits = e.peak_memory_gib <= 80;
    e.bottleneck = "compute";
    return e;
  }
};

// Runs a plan on the fake cluster: OOM above 80 GiB (with the hidden overhead), else metrics.
inline TrialOutcome RunFake(const FakeModel& m, const TrialPlan& plan, double ce = 0.9,
                            double me = 0.7, double overhead = 3) {
  TrialOutcome o;
  o.name = plan.name;
  const Estimate e = m.Eval(plan.config, ce, me, overhead);
  if (e.peak_memory_gib > 80) {
    o.succeeded = false;
    o.exit_code = 1;
    o.log = "iteration 1\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
    return o;
  }
  o.succeeded = true;
  o.termination_message = "{\"metrics\": {\"mfu\": " + std::to_string(e.mfu) +
                          ", \"stepTimeSeconds\": " + std::to_string(e.step_time_seconds) +
                          ", \"peakMemoryGiB\": " + std::to_string(e.peak_memory_gib) + "}}";
  return o;
}

inline CampaignSpec FakeCampaign(bool with_baseline = true) {
  const char* yaml = R"(
metadata: {name: fake}
spec:
  model: {preset: llama3-8b}
  training: {globalBatchSize: 512}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 1, devicesPerNode: 8}
  searchSpace:
    parameters:
    - {name: tp, values: [1, 2, 4, 8]}
    - {name: pp, values: [1, 2, 4]}
    - {name: mbs, values: [1, 2, 4]}
    - {name: recompute, values: [none, selective, full]}
  baseline: {tp: 1, pp: 1, mbs: 1, recompute: full}
  budget: {maxTrials: 20, maxFailedTrials: 8}
)";
  CampaignSpec spec = CampaignFromYaml(yaml).value();
  if (!with_baseline) spec.baseline.reset();
  return spec;
}

}  // namespace paratune::testing

#endif  // PARATUNE_TESTS_SUPPORT_FAKE_MODEL_H_
