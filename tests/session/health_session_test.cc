// The agent loop and cluster health (issue 9): anomalous successes are flagged, not learned
// from, counted, explained, and re-run on other nodes once a retry is approved.
#include <gtest/gtest.h>

#include <random>

#include "agents/engines/engine_factory.h"
#include "agents/session/tuning_session.h"
#include "agents/sim_campaign/sim_runner.h"
#include "agents/sim_campaign/simulation.h"
#include "tests/support/fake_model.h"

namespace paratune {
namespace {

using testing::FakeCampaign;
using testing::FakeModel;
using testing::RunFake;

SessionDeps Deps(std::shared_ptr<FakeModel> m) {
  SessionDeps d;
  d.model = m;
  d.diagnostician = MakeFallbackFailureAnalyzer();
  EngineOptions eo;
  d.engine = CreateStrategyEngine("builtin", eo).value();
  return d;
}

// Runs `n` healthy trials; returns the last plan.
void RunHealthy(TuningSession& s, const FakeModel& m, int n) {
  for (int i = 0; i < n; ++i) {
    auto p = s.ProposeNext(1).value();
    ASSERT_EQ(p.size(), 1u);
    TrialOutcome o = RunFake(m, p[0]);
    o.node_names = {"gpu-" + std::to_string(i % 4)};
    ASSERT_TRUE(s.RecordOutcome(o).ok());
  }
}

TEST(HealthSessionTest, AThrottledRunIsFlaggedAndNeverBecomesTheBest) {
  auto m = std::make_shared<FakeModel>();
  MessagePool pool;
  auto s = TuningSession::Create(FakeCampaign(), &pool, Deps(m)).value();
  RunHealthy(*s, *m, 3);
  const CalibrationState calibrated = pool.calibration();
  auto p = s->ProposeNext(1).value();
  ASSERT_EQ(p.size(), 1u);
  // One GPU at half its clock: the whole synchronous job runs at half speed.
  TrialOutcome o = RunFake(*m, p[0], 0.45, 0.35);
  o.node_names = {"paratune-gpu-2"};
  ASSERT_TRUE(s->RecordOutcome(o).ok());
  const TrialRecord* t = pool.FindTrial(p[0].name);
  ASSERT_TRUE(t->anomaly.has_value());
  EXPECT_EQ(t->anomaly->kind, health::AnomalyKind::kSlowerThanPredicted);
  EXPECT_LT(t->anomaly->ratio, 0.75);
  EXPECT_EQ(t->anomaly->node_names, std::vector<std::string>{"paratune-gpu-2"});
  EXPECT_EQ(t->phase, TrialPhase::kSucceeded);  // it ran; its result is set aside
  EXPECT_EQ(s->AnomalyOf(p[0].name)->kind, health::AnomalyKind::kSlowerThanPredicted);
  const SessionSummary sum = s->Summary();
  EXPECT_EQ(sum.counts.anomalous, 1);
  EXPECT_EQ(sum.counts.succeeded, 3);
  EXPECT_EQ(sum.counts.total, 4);
  ASSERT_EQ(sum.anomalous.size(), 1u);
  ASSERT_TRUE(sum.best.has_value());
  EXPECT_NE(sum.best->name, p[0].name);
  // Not learned: the calibration is what the healthy trials taught.
  EXPECT_EQ(pool.calibration().observations, calibrated.observations);
  EXPECT_NEAR(pool.calibration().compute_efficiency, calibrated.compute_efficiency, 1e-12);
  // Explained in the pool, naming the node.
  ASSERT_FALSE(pool.messages().empty());
  EXPECT_EQ(pool.messages().back().kind, "Anomaly");
  EXPECT_NE(pool.messages().back().text.find("paratune-gpu-2"), std::string::npos);
}

TEST(HealthSessionTest, AFastLookingRunWithDriftingStepsIsNotTheBest) {
  auto m = std::make_shared<FakeModel>();
  MessagePool pool;
  auto s = TuningSession::Create(FakeCampaign(), &pool, Deps(m)).value();
  RunHealthy(*s, *m, 2);
  auto p = s->ProposeNext(1).value();
  TrialOutcome o = RunFake(*m, p[0], 2.0, 2.0);               // reports a best-ever objective...
  o.step_times = {30, 10, 10.5, 11, 12, 13, 14, 14, 14, 14};  // ...but its steps drift up 40%
  ASSERT_TRUE(s->RecordOutcome(o).ok());
  ASSERT_TRUE(s->AnomalyOf(p[0].name).has_value());
  EXPECT_EQ(s->AnomalyOf(p[0].name)->kind, health::AnomalyKind::kStepTimeDrift);
  EXPECT_NE(s->Summary().best->name, p[0].name);
}

TEST(HealthSessionTest, AHealthyNoisyCampaignHasNoAnomaly) {
  auto m = std::make_shared<FakeModel>();
  MessagePool pool;
  auto s = TuningSession::Create(FakeCampaign(), &pool, Deps(m)).value();
  std::mt19937_64 rng(7);
  std::normal_distribution<double> noise(0, 0.03);
  for (int guard = 0; guard < 40 && !s->ShouldStop(); ++guard) {
    auto plans = s->ProposeNext(1).value();
    if (plans.empty()) break;
    const double f = 1 + noise(rng);
    TrialOutcome o = RunFake(*m, plans[0], 0.9 * f, 0.7 * f);
    for (int i = 0; i < 10; ++i) o.step_times.push_back(10 * (1 + noise(rng)));
    ASSERT_TRUE(s->RecordOutcome(o).ok());
  }
  EXPECT_EQ(s->Summary().counts.anomalous, 0);
  EXPECT_GE(s->Summary().counts.succeeded, 3);
}

TEST(HealthSessionTest, AnApprovedRetryComesFirstOnOtherNodesAndSurvivesAResume) {
  auto m = std::make_shared<FakeModel>();
  MessagePool pool;
  auto s = TuningSession::Create(FakeCampaign(), &pool, Deps(m)).value();
  RunHealthy(*s, *m, 3);
  auto p = s->ProposeNext(1).value();
  TrialOutcome o = RunFake(*m, p[0], 0.45, 0.35);
  o.node_names = {"paratune-gpu-2"};
  ASSERT_TRUE(s->RecordOutcome(o).ok());
  ASSERT_TRUE(s->AnomalyOf(p[0].name).has_value());
  // Refused: unknown, healthy, then (after one approval) a second approval.
  EXPECT_EQ(s->RequestRetry("nope", {}).code(), StatusCode::kNotFound);
  EXPECT_EQ(s->RequestRetry(pool.trials().front().name, {}).code(),
            StatusCode::kFailedPrecondition);
  ASSERT_TRUE(s->RequestRetry(p[0].name, {"paratune-gpu-2"}).ok());
  EXPECT_EQ(s->RequestRetry(p[0].name, {}).code(), StatusCode::kFailedPrecondition);

  // The pool alone carries the approval: a resumed session proposes the same retry.
  auto restored = MessagePool::FromJson(nlohmann::json::parse(pool.ToJson().dump()));
  ASSERT_TRUE(restored.ok()) << restored.status().ToString();
  MessagePool copy = *restored;
  EXPECT_EQ(copy.FindTrial(p[0].name)->anomaly->summary,
            pool.FindTrial(p[0].name)->anomaly->summary);
  auto resumed = TuningSession::Create(FakeCampaign(), &copy, Deps(m)).value();
  auto r1 = s->ProposeNext(2).value();
  auto r2 = resumed->ProposeNext(2).value();
  ASSERT_GE(r1.size(), 1u);
  ASSERT_EQ(r1.size(), r2.size());
  for (const auto& r : {r1, r2}) {
    EXPECT_EQ(r[0].retry_of, p[0].name);
    EXPECT_EQ(r[0].name, p[0].name + "-r1");
    EXPECT_EQ(r[0].avoid_nodes, std::vector<std::string>{"paratune-gpu-2"});
    EXPECT_EQ(ConfigKey(r[0].config), ConfigKey(p[0].config));
  }
  for (size_t i = 1; i < r1.size(); ++i) {
    EXPECT_EQ(r1[i].name, r2[i].name);
    EXPECT_EQ(ConfigKey(r1[i].config), ConfigKey(r2[i].config));
  }
  // On healthy nodes the re-run is learned like any trial.
  TrialOutcome ok = RunFake(*m, r1[0]);
  ok.node_names = {"paratune-gpu-5"};
  ASSERT_TRUE(s->RecordOutcome(ok).ok());
  EXPECT_TRUE(pool.FindTrial(r1[0].name)->Learnable());
  EXPECT_EQ(s->Summary().counts.succeeded, 4);
}

TEST(HealthSessionTest, PoolsWithoutHealthFieldsLoadAndBadAnomaliesNameTheField) {
  const nlohmann::json old = {{"trials",
                               {{{"iteration", 1},
                                 {"name", "x-t001"},
                                 {"phase", "Succeeded"},
                                 {"config", {{"tp", 1}}},
                                 {"metrics", {{"mfu", 0.5}}}}}}};
  auto p = MessagePool::FromJson(old);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_FALSE(p->trials()[0].anomaly.has_value());
  EXPECT_TRUE(p->trials()[0].node_names.empty());
  EXPECT_TRUE(p->trials()[0].Learnable());
  nlohmann::json bad = old;
  bad["trials"][0]["anomaly"] = {{"kind", "Sluggish"}};
  auto b = MessagePool::FromJson(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("pool.trials[0]"), std::string::npos) << b.status().message();
  EXPECT_NE(b.status().message().find("anomaly.kind"), std::string::npos);
}

TEST(HealthSessionTest, SimulatedThrottledNodeIsNamedAndAvoided) {
  const CampaignSpec spec = LoadCampaignFile(std::string(PARATUNE_SOURCE_DIR) +
                                             "/bench/scenarios/s03-llama2-7b-a100x16.yaml")
                                .value();
  int named = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    auto runner = MakeSimulatedClusterRunner(spec, seed, "paratune-gpu-3=throttle:0.5").value();
    SimulationOptions o;
    o.seed = seed;
    o.nodes = 8;
    auto r = RunSimulation(spec, o, runner.get(), {});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    const auto& j = r->json;
    ASSERT_TRUE(j.contains("suspectNodes"));
    for (const auto& n : j["suspectNodes"]) EXPECT_EQ(n["name"], "paratune-gpu-3") << n.dump();
    named += !j["suspectNodes"].empty();
    bool suspect = false;
    for (const auto& t : j["trials"]) {
      ASSERT_EQ(t["nodes"].size(), 2u);  // 16 GPUs on 8-GPU nodes
      const bool on_faulty = t["nodes"][0] == "paratune-gpu-3" || t["nodes"][1] == "paratune-gpu-3";
      if (suspect) {
        EXPECT_FALSE(on_faulty) << t["name"];  // avoided once suspect
      }
      if (on_faulty && t["phase"] == "Succeeded") {
        EXPECT_FALSE(t["anomaly"].is_null()) << t["name"];
      }
      if (!j["suspectNodes"].empty() && t["name"] == j["suspectNodes"][0]["afterTrial"])
        suspect = true;
    }
  }
  // Naming takes two anomalous trials on the node and placement is random. Since tp-1
  // sequenceParallel twins are one point of the space (framework_rules.h) campaigns run fewer
  // trials: over seeds 1..12 the node is named in 9 (10 when the twins ran as two trials).
  EXPECT_GE(named, 2);
  // Without --nodes the JSON is as before: no placement fields.
  auto runner = MakeSimulatedClusterRunner(spec, 1).value();
  auto plain = RunSimulation(spec, SimulationOptions{}, runner.get(), {});
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->json.contains("suspectNodes"));
  EXPECT_FALSE(plain->json["trials"][0].contains("nodes"));
  EXPECT_EQ(MakeSimulatedClusterRunner(spec, 1, "gpu-1=hot:0.5").status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace paratune
