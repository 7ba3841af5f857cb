// Pre-flight of the campaign's baseline (issue 13): a baseline that breaks a constraint or whose
// predicted peak exceeds capacity beyond the calibrated uncertainty costs no trial; the session
// starts from the nearest feasible configuration, and the report says so.
#include "agents/session/baseline_preflight.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "agents/model/perf_model.h"
#include "agents/model/workload.h"
#include "agents/predict/validator.h"
#include "agents/report/report.h"
#include "agents/session/tuning_session.h"
#include "agents/sim_campaign/simulation.h"

namespace paratune {
namespace {

CampaignSpec Spec(const std::string& baseline) {
  auto spec = CampaignFromYaml(R"(
metadata: {name: pf}
spec:
  model: {preset: llama3-8b}
  training: {framework: megatron-lm, seqLength: 8192, globalBatchSize: 512}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 1, devicesPerNode: 8}
  searchSpace:
    parameters:
    - {name: tp, values: [1, 2, 3, 4, 8]}
    - {name: mbs, values: [1, 4]}
    - {name: recompute, values: [none, selective, full]}
  baseline: )" + baseline + R"(
  budget: {maxTrials: 3}
)");
  EXPECT_TRUE(spec.ok()) << spec.status().ToString();
  return *spec;
}

struct Started {
  MessagePool pool;
  std::unique_ptr<TuningSession> session;
  std::vector<TrialPlan> plans;
};

void Start(const CampaignSpec& spec, Started* s) {
  auto session = TuningSession::Create(spec, &s->pool, SessionDeps{});
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  s->session = std::move(*session);
  auto plans = s->session->ProposeNext(1);
  ASSERT_TRUE(plans.ok()) << plans.status().ToString();
  s->plans = *plans;
}

TEST(BaselinePreflightTest, BaselineBreakingAConstraintIsReplacedByTheNearestValidConfig) {
  // tp 3 does not divide llama3-8b's 32 attention heads.
  const CampaignSpec spec = Spec("{tp: 3, mbs: 1, recompute: full}");
  Started s;
  Start(spec, &s);
  ASSERT_EQ(s.plans.size(), 1u);
  const Config& c = s.plans[0].config;
  EXPECT_NE(c.at("tp"), ParamValue::Int(3));
  // Nearest: only tp changes, to a neighbouring value.
  EXPECT_EQ(c.at("mbs"), ParamValue::Int(1));
  EXPECT_EQ(c.at("recompute"), ParamValue::Enum("full"));
  EXPECT_TRUE(c.at("tp") == ParamValue::Int(2) || c.at("tp") == ParamValue::Int(4));
  EXPECT_EQ(s.plans[0].proposal.proposed_by, "baseline");
  ASSERT_EQ(s.pool.rejected().size(), 1u);
  EXPECT_EQ(s.pool.rejected()[0].proposed_by, "baseline");
  auto pre = s.session->RejectedBaseline();
  ASSERT_TRUE(pre.has_value());
  EXPECT_FALSE(pre->constraint.empty());
  EXPECT_NE(pre->reason.find(pre->constraint), std::string::npos);
  EXPECT_EQ(pre->start_changed_parameters, 1);
  // The session's summary treats the stand-in as the baseline.
  EXPECT_EQ(s.session->pool().trials().front().proposal.proposed_by, "baseline");
}

TEST(BaselinePreflightTest, BaselineFarBeyondMemoryIsNotLaunched) {
  const CampaignSpec spec = Spec("{tp: 1, mbs: 4, recompute: none}");
  Started s;
  Start(spec, &s);
  ASSERT_EQ(s.plans.size(), 1u);
  auto pre = s.session->RejectedBaseline();
  ASSERT_TRUE(pre.has_value());
  EXPECT_TRUE(pre->constraint.empty());
  EXPECT_GT(pre->predicted_peak_gib - std::max(pre->uncertainty_gib, pre->interval_gib),
            pre->capacity_gib);
  EXPECT_EQ(pre->verdict, "does-not-fit");
  EXPECT_NEAR(pre->capacity_gib, 80.0, 1.0);
  ASSERT_TRUE(pre->start.has_value());
  EXPECT_EQ(s.plans[0].config, *pre->start);
  EXPECT_LE(pre->start_peak_gib + pre->uncertainty_gib, pre->capacity_gib);
  // The report names the numbers and the configuration the campaign started from.
  nlohmann::json run = SimulationJson(*s.session, std::nullopt, std::nullopt);
  ASSERT_TRUE(run.contains("baselinePreflight"));
  auto report = RenderCampaignReport(run);
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_NE(report->markdown.find("## Baseline pre-flight"), std::string::npos);
  EXPECT_NE(report->markdown.find("not launched"), std::string::npos);
  EXPECT_NE(report->markdown.find("nearest feasible configuration"), std::string::npos);
}

TEST(BaselinePreflightTest, BaselinePredictedToFitIsLaunchedAsGiven) {
  const CampaignSpec spec = Spec("{tp: 4, mbs: 1, recompute: full}");
  Started s;
  Start(spec, &s);
  ASSERT_EQ(s.plans.size(), 1u);
  EXPECT_EQ(s.plans[0].config, *spec.baseline);
  EXPECT_TRUE(s.pool.rejected().empty());
  EXPECT_FALSE(s.session->RejectedBaseline().has_value());
  nlohmann::json run = SimulationJson(*s.session, std::nullopt, std::nullopt);
  EXPECT_FALSE(run.contains("baselinePreflight"));
}

// Issue 36: a baseline the model predicts beyond the device, but that fits at the optimistic end
// of the model's interval (verdict marginal), is launched as given: it costs minutes and its
// result teaches memory. Once a configuration has run out of memory, one that needs at least as
// much memory (the domination rule) is refused whatever the interval says.
TEST(BaselinePreflightTest, MarginalBaselineIsLaunchedAndADominatedOneIsRefusedAfterAnOom) {
  const CampaignSpec probe = Spec("{tp: 4, mbs: 1, recompute: full}");
  auto w = ResolveWorkload(probe);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  std::string marginal;
  Config marginal_config;
  for (int64_t tp : {1, 2, 4, 8}) {
    for (int64_t mbs : {1, 4}) {
      for (const char* rc : {"none", "selective", "full"}) {
        const Config c = {{"tp", ParamValue::Int(tp)},
                          {"mbs", ParamValue::Int(mbs)},
                          {"recompute", ParamValue::Enum(rc)}};
        const Estimate e = EstimateConfig(*w, c);
        if (marginal.empty() && e.verdict == "marginal" &&
            e.peak_memory_gib > e.capacity_gib + 0.1 * e.capacity_gib) {
          marginal = "{tp: " + std::to_string(tp) + ", mbs: " + std::to_string(mbs) +
                     ", recompute: " + rc + "}";
          marginal_config = c;
        }
      }
    }
  }
  ASSERT_FALSE(marginal.empty()) << "no configuration of the space is marginal beyond the margin";
  const CampaignSpec spec = Spec(marginal);
  Started s;
  Start(spec, &s);
  ASSERT_EQ(s.plans.size(), 1u);
  EXPECT_EQ(s.plans[0].config, *spec.baseline) << marginal;
  EXPECT_TRUE(s.pool.rejected().empty());
  EXPECT_FALSE(s.session->RejectedBaseline().has_value());

  // It ran out of memory: the same tp with a larger micro-batch is dominated and refused.
  MessagePool pool;
  TrialRecord t;
  t.name = "pf-t001";
  t.config = s.plans[0].config;
  t.phase = TrialPhase::kFailed;
  FailureDiagnosis d;
  d.category = "CudaOOM";
  d.signature = "cuda-oom";
  t.failure = d;
  pool.AddTrial(t);
  Config dominated = t.config;
  dominated["mbs"] = ParamValue::Int(4);
  if (dominated == t.config) dominated["recompute"] = ParamValue::Enum("none");
  const CalibrationState fit =
      FitCalibration(s.session->space(), s.session->model(), pool, CalibrationState{});
  const CalibratedPredictor predictor(&s.session->space(), spec.objective, fit, {});
  Validator v(&spec, &s.session->model(), &s.session->space(), {});
  const ValidationVerdict verdict = v.Check(dominated, pool, predictor, 0.0);
  EXPECT_FALSE(verdict.ok) << ConfigKey(dominated);
  EXPECT_NE(verdict.reason.find("needs at least as much memory as pf-t001"), std::string::npos)
      << verdict.reason;
}

}  // namespace
}  // namespace paratune
