#include "agents/session/tuning_session.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "agents/engines/engine_factory.h"
#include "tests/support/fake_model.h"

namespace paratune {
namespace {

using testing::FakeCampaign;
using testing::FakeModel;
using testing::RunFake;

std::shared_ptr<FakeModel> Model() { return std::make_shared<FakeModel>(); }

SessionDeps Deps(std::shared_ptr<FakeModel> m, const std::string& engine = "builtin") {
  SessionDeps d;
  d.model = m;
  d.diagnostician = MakeFallbackFailureAnalyzer();
  EngineOptions eo;
  d.engine = CreateStrategyEngine(engine, eo).value();
  return d;
}

// Runs the loop to its stop; returns the stop decision.
StopDecision RunToStop(TuningSession& s, const FakeModel& m) {
  for (int guard = 0; guard < 100; ++guard) {
    if (auto stop = s.ShouldStop()) return *stop;
    auto plans = s.ProposeNext(1);
    EXPECT_TRUE(plans.ok()) << plans.status().ToString();
    if (!plans.ok() || plans->empty()) break;
    for (const auto& p : *plans) EXPECT_TRUE(s.RecordOutcome(RunFake(m, p)).ok());
  }
  auto stop = s.ShouldStop();
  EXPECT_TRUE(stop.has_value());
  return stop.value_or(StopDecision{});
}

// The true optimum of the fake cluster by brute force.
double TrueOptimum(const FakeModel& m, const CampaignSpec& spec) {
  double best = 0;
  for (int64_t tp : {1, 2, 4, 8})
    for (int64_t pp : {1, 2, 4})
      for (int64_t mbs : {1, 2, 4})
        for (const char* rc : {"none", "selective", "full"}) {
          Config c{{"tp", ParamValue::Int(tp)},
                   {"pp", ParamValue::Int(pp)},
                   {"mbs", ParamValue::Int(mbs)},
                   {"recompute", ParamValue::Enum(rc)}};
          if (!m.Violations(c).empty()) continue;
          const Estimate e = m.Eval(c, 0.9, 0.7, 3);
          if (e.peak_memory_gib <= 80) best = std::max(best, e.mfu);
        }
  (void)spec;
  return best;
}

TEST(TuningSessionTest, FirstPlanIsTheBaselineWithEveryParameterAndADeterministicName) {
  MessagePool pool;
  auto m = Model();
  auto s = TuningSession::Create(FakeCampaign(), &pool, Deps(m));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto plans = (*s)->ProposeNext(1);
  ASSERT_TRUE(plans.ok());
  ASSERT_EQ(plans->size(), 1u);
  EXPECT_EQ(plans->front().name, "fake-t001");
  EXPECT_EQ(plans->front().iteration, 1);
  EXPECT_EQ(plans->front().config.size(), 4u);
  EXPECT_EQ(plans->front().proposal.proposed_by, "baseline");
  EXPECT_EQ(ConfigKey(plans->front().config), ConfigKey(*FakeCampaign().baseline));
  EXPECT_GT(plans->front().prediction.step_time_seconds, 0);
  EXPECT_EQ(pool.trials().size(), 1u);
  EXPECT_EQ(pool.trials().front().phase, TrialPhase::kPending);
}

// Every free slot is filled at once: the baseline takes one, the engine the others (it used to
// fill only n minus the plans already made, so a campaign with a baseline launched one trial
// in its first round whatever its parallelTrials, and its second a reconcile later).
TEST(TuningSessionTest, TheBaselineAndTheEngineFillEveryFreeSlotOfTheFirstRound) {
  MessagePool pool;
  auto m = Model();
  auto s = TuningSession::Create(FakeCampaign(), &pool, Deps(m)).value();
  auto plans = s->ProposeNext(3);
  ASSERT_TRUE(plans.ok()) << plans.status().ToString();
  ASSERT_EQ(plans->size(), 3u);
  EXPECT_EQ((*plans)[0].proposal.proposed_by, "baseline");
  std::set<std::string> keys;
  for (const auto& p : *plans) EXPECT_TRUE(keys.insert(ConfigKey(p.config)).second) << p.name;
  EXPECT_EQ((*plans)[1].proposal.proposed_by, "builtin");
  EXPECT_EQ((*plans)[2].proposal.proposed_by, "builtin");
}

TEST(TuningSessionTest, BuiltinReachesTheOptimumWithoutRepeatsOrWastedRuns) {
  MessagePool pool;
  auto m = Model();
  auto s = TuningSession::Create(FakeCampaign(), &pool, Deps(m)).value();
  const StopDecision stop = RunToStop(*s, *m);
  const auto sum = s->Summary();
  ASSERT_TRUE(sum.best.has_value());
  EXPECT_GE(sum.best->metrics->mfu, 0.98 * TrueOptimum(*m, FakeCampaign()));
  std::set<std::string> keys;
  for (const auto& t : pool.trials()) EXPECT_TRUE(keys.insert(ConfigKey(t.config)).second);
  EXPECT_LE(sum.counts.failed, 1);
  EXPECT_GT(sum.improvement_over_baseline, 0.1);
  EXPECT_LT(sum.counts.total, 20) << "should converge before the budget: " << stop.message;
  EXPECT_EQ(stop.reason, StopReason::kConverged);
  for (const auto& t : pool.trials()) EXPECT_FALSE(t.proposal.rationale.empty()) << t.name;
}

TEST(TuningSessionTest, WithoutBaselineStartsFromTheModelsBestPrediction) {
  MessagePool pool;
  auto m = Model();
  auto s = TuningSession::Create(FakeCampaign(false), &pool, Deps(m)).value();
  auto plans = s->ProposeNext(1).value();
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_EQ(plans[0].proposal.proposed_by, "builtin");
  EXPECT_NE(plans[0].proposal.rationale.find("model's best prediction"), std::string::npos);
}

TEST(TuningSessionTest, CalibrationLearnsTheClustersEfficiencyAndMemoryOverhead) {
  MessagePool pool;
  auto m = Model();
  auto s = TuningSession::Create(FakeCampaign(), &pool, Deps(m)).value();
  for (int i = 0; i < 4; ++i) {
    auto plans = s->ProposeNext(1).value();
    ASSERT_EQ(plans.size(), 1u);
    ASSERT_TRUE(s->RecordOutcome(RunFake(*m, plans[0])).ok());
  }
  const CalibrationState& c = pool.calibration();
  EXPECT_NEAR(c.compute_efficiency, 0.9, 0.05);
  EXPECT_NEAR(c.memory_overhead_gib, 3.0, 0.1);  // a ridge fit toward the model
  EXPECT_GE(c.observations, 3);
}

// A trial that leaves no termination message (real frameworks do not write one) is read from its
// log by the campaign's collector, the code the operator's trial reconciler runs.
TEST(TuningSessionTest, AnOutcomeWithOnlyALogIsCollectedLikeTheOperatorCollectsIt) {
  MessagePool pool;
  auto m = Model();
  auto s = TuningSession::Create(FakeCampaign(), &pool, Deps(m)).value();
  auto plans = s->ProposeNext(1).value();
  ASSERT_EQ(plans.size(), 1u);
  TrialOutcome o;
  o.name = plans[0].name;
  o.succeeded = true;
  for (int it = 10; it <= 80; it += 10) {
    char line[256];
    std::snprintf(line, sizeof(line),
                  " [2026-11-21 05:40:01] iteration %8d/      80 | elapsed time per iteration "
                  "(ms): %.1f | throughput per GPU (TFLOP/s/GPU): 400.0 | global batch size:   "
                  "512 |\n",
                  it, it == 10 ? 9000.0 : 5000.0);
    o.log += line;
  }
  ASSERT_TRUE(s->RecordOutcome(o).ok());
  const TrialRecord& t = pool.trials()[0];
  ASSERT_EQ(t.phase, TrialPhase::kSucceeded);
  ASSERT_TRUE(t.metrics.has_value());
  EXPECT_NEAR(t.metrics->step_time_seconds, 5.0, 1e-9) << "warm-up skipped";
  EXPECT_NEAR(t.metrics->tflops_per_device, 400.0, 1e-9);
  EXPECT_GT(t.metrics->mfu, 0) << "MFU from the accelerator's peak (CollectorContextFor)";
}

TEST(TuningSessionTest, RetryableFailureIsRetriedOnceUnderTheSameIteration) {
  MessagePool pool;
  auto m = Model();
  auto s = TuningSession::Create(FakeCampaign(), &pool, Deps(m)).value();
  auto plans = s->ProposeNext(1).value();
  TrialOutcome o;
  o.name = plans[0].name;
  o.exit_code = 1;
  o.log = "step 3\nNCCL watchdog: collective operation timed out after 600000 ms";
  ASSERT_TRUE(s->RecordOutcome(o).ok());
  ASSERT_TRUE(pool.trials()[0].failure->retryable);
  auto retry = s->ProposeNext(1).value();
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(retry[0].name, "fake-t001-r1");
  EXPECT_EQ(retry[0].retry_of, "fake-t001");
  EXPECT_EQ(retry[0].iteration, 1);
  o.name = retry[0].name;
  ASSERT_TRUE(s->RecordOutcome(o).ok());
  auto next = s->ProposeNext(1).value();
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].name, "fake-t002") << "a retry is not retried again";
}

TEST(TuningSessionTest, OutOfMemoryIsDiagnosedAndTeachesTheValidator) {
  MessagePool pool;
  auto m = Model();
  auto spec = FakeCampaign();
  // Predicted at 76 GiB of 80, so pre-flight launches it; the cluster's hidden 20 GiB makes it
  // run out of memory (a baseline predicted far beyond capacity is never launched at all).
  spec.baseline = Config{{"tp", ParamValue::Int(1)},
                         {"pp", ParamValue::Int(1)},
                         {"mbs", ParamValue::Int(1)},
                         {"recompute", ParamValue::Enum("none")}};
  auto s = TuningSession::Create(spec, &pool, Deps(m)).value();
  auto plans = s->ProposeNext(1).value();
  ASSERT_EQ(plans[0].config, *spec.baseline);
  ASSERT_TRUE(s->RecordOutcome(RunFake(*m, plans[0], 0.9, 0.7, /*overhead=*/20)).ok());
  const auto& failed = pool.trials()[0];
  ASSERT_EQ(failed.phase, TrialPhase::kFailed);
  EXPECT_EQ(failed.failure->category, "CudaOOM");
  EXPECT_FALSE(failed.failure->retryable);
  EXPECT_EQ(pool.calibration().oom_observations, 1);
  // Everything proposed afterwards is predicted to fit with the learned margin, and nothing
  // else runs out of memory.
  while (!s->ShouldStop()) {
    auto p = s->ProposeNext(1).value();
    ASSERT_EQ(p.size(), 1u);
    EXPECT_LT(p[0].prediction.peak_memory_gib + pool.calibration().memory_margin_gib, 80.0);
    ASSERT_TRUE(s->RecordOutcome(RunFake(*m, p[0])).ok());
  }
  EXPECT_EQ(s->Summary().counts.failed, 1);
  EXPECT_GE(s->Summary().counts.succeeded, 4);
}

TEST(TuningSessionTest, ResumesFromThePoolAloneWithTheSameDecisions) {
  auto m = Model();
  MessagePool a;
  auto sa = TuningSession::Create(FakeCampaign(), &a, Deps(m)).value();
  for (int i = 0; i < 3; ++i) {
    auto p = sa->ProposeNext(1).value();
    ASSERT_TRUE(sa->RecordOutcome(RunFake(*m, p[0])).ok());
  }
  auto restored = MessagePool::FromJson(nlohmann::json::parse(a.ToJson().dump()));
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  MessagePool b = *restored;
  auto sb = TuningSession::Create(FakeCampaign(), &b, Deps(m)).value();
  auto pa = sa->ProposeNext(1).value();
  auto pb = sb->ProposeNext(1).value();
  ASSERT_EQ(pa.size(), 1u);
  ASSERT_EQ(pb.size(), 1u);
  EXPECT_EQ(pa[0].name, pb[0].name);
  EXPECT_EQ(ConfigKey(pa[0].config), ConfigKey(pb[0].config));
}

TEST(TuningSessionTest, RecordOutcomeRejectsUnknownAndFinishedTrials) {
  MessagePool pool;
  auto m = Model();
  auto s = TuningSession::Create(FakeCampaign(), &pool, Deps(m)).value();
  TrialOutcome o;
  o.name = "nope";
  EXPECT_EQ(s->RecordOutcome(o).code(), StatusCode::kNotFound);
  auto p = s->ProposeNext(1).value();
  ASSERT_TRUE(s->RecordOutcome(RunFake(*m, p[0])).ok());
  EXPECT_EQ(s->RecordOutcome(RunFake(*m, p[0])).code(), StatusCode::kFailedPrecondition);
}

TEST(TuningSessionTest, StopsAtBudgetTargetAndMaxFailedTrials) {
  auto m = Model();
  {
    auto spec = FakeCampaign();
    spec.budget.max_trials = 3;
    MessagePool pool;
    auto s = TuningSession::Create(spec, &pool, Deps(m)).value();
    EXPECT_EQ(RunToStop(*s, *m).reason, StopReason::kBudgetExhausted);
    EXPECT_EQ(pool.trials().size(), 3u);
  }
  {
    auto spec = FakeCampaign();
    spec.objective.target = 0.3;  // the baseline already reaches it
    MessagePool pool;
    auto s = TuningSession::Create(spec, &pool, Deps(m)).value();
    EXPECT_EQ(RunToStop(*s, *m).reason, StopReason::kTargetReached);
    EXPECT_EQ(pool.trials().size(), 1u);
  }
  {
    auto spec = FakeCampaign();
    spec.budget.max_failed_trials = 2;
    MessagePool pool;
    auto s = TuningSession::Create(spec, &pool, Deps(m)).value();
    for (int i = 0; i < 2; ++i) {
      auto p = s->ProposeNext(1).value();
      TrialOutcome o;
      o.name = p[0].name;
      o.log = "AssertionError: numAttentionHeads 32 is not divisible by tp 3";
      ASSERT_TRUE(s->RecordOutcome(o).ok());
    }
    auto stop = s->ShouldStop();
    ASSERT_TRUE(stop.has_value());
    EXPECT_EQ(stop->reason, StopReason::kMaxFailedTrials);
    EXPECT_TRUE(s->ProposeNext(1).value().empty());
  }
}

// Pods no node (or queue) could ever take: the next trial would ask for the same pods.
TEST(TuningSessionTest, AnUnschedulableFailureThatWaitingCannotFixStopsTheCampaign) {
  auto m = Model();
  for (bool retryable : {true, false}) {
    SCOPED_TRACE(retryable ? "capacity in use" : "no node could ever run it");
    auto spec = FakeCampaign();
    MessagePool pool;
    auto s = TuningSession::Create(spec, &pool, Deps(m)).value();
    auto p = s->ProposeNext(1).value();
    ASSERT_EQ(p.size(), 1u);
    TrialOutcome o;
    o.name = p[0].name;
    FailureDiagnosis d;
    d.category = "Unschedulable";
    d.retryable = retryable;
    d.summary =
        "no node of the cluster could ever run pod x: of 2 nodes, 2 offer at most 4 "
        "nvidia.com/gpu (the pod requests 8)";
    o.diagnosis = d;
    ASSERT_TRUE(s->RecordOutcome(o).ok());
    auto stop = s->ShouldStop();
    if (retryable) {
      EXPECT_FALSE(stop.has_value());
      auto next = s->ProposeNext(1).value();
      ASSERT_EQ(next.size(), 1u);
      EXPECT_EQ(next[0].name, p[0].name + "-r1");  // waiting can help: run again
      continue;
    }
    ASSERT_TRUE(stop.has_value());
    EXPECT_EQ(stop->reason, StopReason::kClusterCannotRun);
    EXPECT_STREQ(StopReasonName(stop->reason), "ClusterCannotRun");
    EXPECT_NE(stop->message.find("offer at most 4 nvidia.com/gpu"), std::string::npos)
        << stop->message;
    EXPECT_TRUE(s->ProposeNext(1).value().empty());
  }
  // The same category guessed from the words of known failures (no signature, no Node verdict)
  // is no proof that no node could ever run the pods: the campaign goes on.
  for (const char* guess : {"words:Unschedulable", "case:https://example.com/issue/1"}) {
    SCOPED_TRACE(guess);
    auto spec = FakeCampaign();
    MessagePool pool;
    auto s = TuningSession::Create(spec, &pool, Deps(m)).value();
    auto p = s->ProposeNext(1).value();
    ASSERT_EQ(p.size(), 1u);
    TrialOutcome o;
    o.name = p[0].name;
    FailureDiagnosis d;
    d.category = "Unschedulable";
    d.signature = guess;
    d.confidence = 30;
    o.diagnosis = d;
    ASSERT_TRUE(s->RecordOutcome(o).ok());
    EXPECT_FALSE(s->ShouldStop().has_value());
    EXPECT_EQ(s->ProposeNext(1).value().size(), 1u);
  }
}

TEST(TuningSessionTest, BadCampaignsAreRejectedNamingTheField) {
  auto m = Model();
  MessagePool pool;
  auto spec = FakeCampaign();
  spec.search_space.clear();
  auto s = TuningSession::Create(spec, &pool, Deps(m));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("spec.searchSpace"), std::string::npos);

  spec = FakeCampaign();
  (*spec.baseline)["tp"] = ParamValue::Int(3);
  s = TuningSession::Create(spec, &pool, Deps(m));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.status().message().find("spec.baseline"), std::string::npos);

  spec = FakeCampaign(false);
  spec.search_space[0].values = {ParamValue::Int(8)};
  spec.search_space[1].values = {ParamValue::Int(4)};
  s = TuningSession::Create(spec, &pool, Deps(m));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("no valid configuration"), std::string::npos);
}

TEST(TuningSessionTest, GreedyChangesOneParameterAtATimeFromTheBaseline) {
  MessagePool pool;
  auto m = Model();
  SessionDeps d = Deps(m, "greedy");
  d.options.validator_checks_memory = false;
  d.options.stop_on_convergence = false;
  d.options.fallback_to_builtin = false;
  auto s = TuningSession::Create(FakeCampaign(), &pool, std::move(d)).value();
  for (int i = 0; i < 5; ++i) {
    auto p = s->ProposeNext(1).value();
    ASSERT_EQ(p.size(), 1u);
    ASSERT_TRUE(s->RecordOutcome(RunFake(*m, p[0])).ok());
  }
  const Config base = *FakeCampaign().baseline;
  for (size_t i = 1; i < pool.trials().size(); ++i) {
    EXPECT_LE(ChangedKeys(base, pool.trials()[i].config).size(), 2u);
    EXPECT_EQ(pool.trials()[i].proposal.proposed_by, "greedy");
  }
  EXPECT_EQ(ChangedKeys(base, pool.trials()[1].config), std::vector<std::string>{"tp"});
}

}  // namespace
}  // namespace paratune
