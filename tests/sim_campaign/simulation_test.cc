#include "agents/sim_campaign/simulation.h"

#include <gtest/gtest.h>

#include "agents/knowledge/knowledge_base.h"
#include "agents/report/report.h"
#include "agents/sim_campaign/sim_runner.h"
#include "tests/support/fake_model.h"

namespace paratune {
namespace {

using testing::FakeCampaign;
using testing::FakeModel;
using testing::RunFake;

class FakeRunner : public TrialRunner {
 public:
  TrialOutcome Run(const TrialPlan& plan, int64_t) override { return RunFake(model_, plan); }
  std::optional<TrialMetrics> TrueMetrics(const Config& c) const override {
    const Estimate e = model_.Eval(c, 0.9, 0.7, 3);
    if (e.peak_memory_gib > 80) return std::nullopt;
    TrialMetrics m;
    m.mfu = e.mfu;
    m.step_time_seconds = e.step_time_seconds;
    return m;
  }
  FakeModel model_;
};

Result<SimulationResult> Simulate(const std::string& strategy, const std::string& ablate = "") {
  FakeRunner runner;
  SimulationOptions o;
  o.strategy = strategy;
  o.exhaustive = true;
  o.ablate = ablate;
  SessionDeps deps;
  deps.model = std::make_shared<FakeModel>();
  deps.diagnostician = MakeFallbackFailureAnalyzer();
  return RunSimulation(FakeCampaign(), o, &runner, {}, std::move(deps));
}

TEST(SimulationTest, JsonHasTheContractShape) {
  auto r = Simulate("builtin");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto& j = r->json;
  ASSERT_TRUE(j["trials"].is_array());
  ASSERT_FALSE(j["trials"].empty());
  for (const char* k :
       {"iteration", "name", "config", "phase", "metrics", "failure", "rationale", "prediction"}) {
    EXPECT_TRUE(j["trials"][0].contains(k)) << k;
  }
  EXPECT_EQ(j["baseline"]["trialName"], "fake-t001");
  EXPECT_TRUE(j["best"].is_object());
  EXPECT_TRUE(j["optimum"].is_object());
  EXPECT_GE(j["best"]["objective"].get<double>(), 0.98 * j["optimum"]["objective"].get<double>());
  EXPECT_EQ(j["stopReason"], "Converged");
  EXPECT_TRUE(j["pool"]["trials"].is_array());
  EXPECT_LT(r->wall_seconds, 1.0);
}

// parallelTrials 2: the first batch is the baseline alone (the engine has nothing measured to
// move from), which must not end the campaign as SpaceExhausted once the baseline is in.
TEST(SimulationTest, ParallelTrialsGoOnAfterABaselineThatRanAlone) {
  FakeRunner runner;
  CampaignSpec spec = FakeCampaign();
  spec.budget.parallel_trials = 2;
  SessionDeps deps;
  deps.model = std::make_shared<FakeModel>();
  deps.diagnostician = MakeFallbackFailureAnalyzer();
  auto r = RunSimulation(spec, SimulationOptions{}, &runner, {}, std::move(deps));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_GT(r->json["trials"].size(), 2u) << r->json["stopReason"];
  EXPECT_NE(r->json["stopReason"], "SpaceExhausted") << r->json["stopMessage"];
  EXPECT_GT(r->json["best"]["objective"].get<double>(),
            r->json["baseline"]["objective"].get<double>());
}

TEST(SimulationTest, BaselinesAndAblationsRunAndUnknownOnesAreRejected) {
  for (const char* s : {"random", "grid", "greedy"}) {
    auto r = Simulate(s);
    ASSERT_TRUE(r.ok()) << s << ": " << r.status().ToString();
    EXPECT_EQ(r->json["trials"].size(), 20u) << s << " uses the whole budget";
    EXPECT_EQ(r->json["trials"][1]["proposedBy"], s);
  }
  for (const char* a : {"pool", "failure-analysis", "calibration"}) {
    auto r = Simulate("builtin", a);
    ASSERT_TRUE(r.ok()) << a << ": " << r.status().ToString();
  }
  auto bad = Simulate("builtin", "everything");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--ablate"), std::string::npos);
  bad = Simulate("oracle");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("strategy"), std::string::npos);
}

TEST(ReportTest, MarkdownAndChartShowTrialsFailuresAndBaseline) {
  FakeRunner runner;
  SimulationOptions o;
  o.strategy = "grid";
  o.max_trials = 12;
  o.exhaustive = true;
  SessionDeps deps;
  deps.model = std::make_shared<FakeModel>();
  deps.diagnostician = MakeFallbackFailureAnalyzer();
  auto r = RunSimulation(FakeCampaign(), o, &runner, {}, std::move(deps));
  ASSERT_TRUE(r.ok());
  auto rep = RenderCampaignReport(r->json);
  ASSERT_TRUE(rep.ok()) << rep.status().ToString();
  EXPECT_NE(rep->markdown.find("# Tuning report: fake"), std::string::npos);
  EXPECT_NE(rep->markdown.find("fake-t012"), std::string::npos);
  EXPECT_NE(rep->markdown.find("objective.svg"), std::string::npos);
  EXPECT_NE(rep->svg.find("<svg"), std::string::npos);
  EXPECT_NE(rep->svg.find("stroke-dasharray=\"6,4\""), std::string::npos) << "baseline dashed";
  size_t circles = 0, failures = 0;
  for (size_t p = 0; (p = rep->svg.find("class=\"trial\"", p)) != std::string::npos; ++p) ++circles;
  for (size_t p = 0; (p = rep->svg.find("class=\"failure\"", p)) != std::string::npos; ++p)
    ++failures;
  EXPECT_EQ(circles, r->json["trialCounts"]["succeeded"].get<size_t>());
  EXPECT_EQ(failures, r->json["trialCounts"]["failed"].get<size_t>());
  EXPECT_GT(failures, 0u) << "grid search without the memory check runs out of memory";
  EXPECT_NE(rep->markdown.find("CudaOOM"), std::string::npos);
}

// Issue 13: accelerator-hours per trial and in total, in the JSON and the report (the
// simulated cluster's trials hold their devices for their simulated run time).
TEST(ReportTest, AcceleratorHoursPerTrialAndInTotal) {
  auto spec = LoadCampaignFile(std::string(PARATUNE_SOURCE_DIR) +
                               "/bench/scenarios/s02-llama3-8b-h100x8.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  auto runner = MakeSimulatedClusterRunner(*spec, 1, "", "perturbed");
  ASSERT_TRUE(runner.ok());
  SimulationOptions o;
  o.max_trials = 4;
  auto r = RunSimulation(*spec, o, runner->get(), {});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  double sum = 0;
  for (const auto& t : r->json["trials"]) {
    ASSERT_TRUE(t.contains("acceleratorHours")) << t.dump();
    const double h = t["acceleratorHours"].get<double>();
    sum += h;
    if (t["phase"] == "Succeeded") {
      // 8 devices for at least the 100 iterations the log shows.
      const double step = t["metrics"]["stepTimeSeconds"].get<double>();
      EXPECT_GE(h, 8 * 100 * step / 3600 * 0.9) << t.dump();
      EXPECT_LE(h, 8 * (100 * step + 600) / 3600) << t.dump();
    }
  }
  EXPECT_GT(sum, 0);
  EXPECT_NEAR(r->json["acceleratorHours"].get<double>(), sum, 1e-9);
  auto rep = RenderCampaignReport(r->json);
  ASSERT_TRUE(rep.ok());
  EXPECT_NE(rep->markdown.find("Accelerator-hours spent: "), std::string::npos);
  EXPECT_NE(rep->markdown.find("| accelerator-hours |"), std::string::npos);
}

TEST(ReportTest, PastOptimizationRecordIsRetrievableKnowledge) {
  auto r = Simulate("builtin");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto rec = PastOptimizationRecord(r->json);
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  const auto& p = (*rec)["pastOptimizations"][0];
  EXPECT_EQ(p["after"], r->json["best"]["config"]);
  EXPECT_EQ(p["before"], r->json["baseline"]["config"]);
  // The knowledge base reads it back and retrieval finds it, so later proposals can cite it.
  auto kb = KnowledgeBase::LoadEmbedded();
  ASSERT_TRUE(kb.ok());
  ASSERT_TRUE((*kb)->AddPastOptimizations("past-optimization.json", rec->dump()).ok());
  bool found = false;
  for (const auto& hit : (*kb)->Search(p["note"].get<std::string>(), 5)) {
    found = found || hit.id == "past:" + p["id"].get<std::string>();
  }
  EXPECT_TRUE(found);
  EXPECT_FALSE(PastOptimizationRecord(nlohmann::json{{"trials", nlohmann::json::array()}}).ok());
}

TEST(ReportTest, RejectsJsonThatIsNotASimulateRun) {
  auto rep = RenderCampaignReport(nlohmann::json{{"foo", 1}});
  ASSERT_FALSE(rep.ok());
  EXPECT_NE(rep.status().message().find("trials"), std::string::npos);
}

}  // namespace
}  // namespace paratune
