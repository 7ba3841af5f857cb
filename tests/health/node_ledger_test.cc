#include "agents/health/node_ledger.h"

#include <gtest/gtest.h>

namespace paratune::health {
namespace {

TrialObservation Obs(const std::string& trial, std::vector<std::string> nodes,
                     const std::string& failure = "", double confidence = 100) {
  TrialObservation o;
  o.campaign = "c";
  o.trial = trial;
  o.nodes = std::move(nodes);
  o.failure_category = failure;
  o.failure_confidence = confidence;
  return o;
}

TrialObservation Anomalous(const std::string& trial, std::vector<std::string> nodes) {
  TrialObservation o = Obs(trial, std::move(nodes));
  Anomaly a;
  a.kind = AnomalyKind::kStepTimeDrift;
  a.summary = "step time drifted";
  o.anomaly = a;
  return o;
}

double Score(const NodeLedger& l, const std::string& n) {
  const NodeRecord* r = l.Find(n);
  return r ? r->score : 0;
}

TEST(NodeLedgerTest, TheNodeSharedByBadTrialsWithDifferentPartnersBecomesSuspect) {
  LedgerOptions o;
  o.suspect_threshold = 3.0;  // three shared anomalies needed, to see the sharing at work
  NodeLedger l(o);
  EXPECT_TRUE(l.RecordTrial(Anomalous("t1", {"g2", "g5"}), "t").empty());
  EXPECT_TRUE(l.RecordTrial(Anomalous("t2", {"g2", "g6"}), "t").empty());
  // g5 and g6 run healthy trials without g2 and are credited back.
  l.RecordTrial(Obs("t3", {"g5", "g6"}), "t");
  auto became = l.RecordTrial(Anomalous("t4", {"g7", "g2"}), "2026-11-21T08:10:00Z");
  ASSERT_EQ(became, std::vector<std::string>{"g2"});
  EXPECT_TRUE(l.IsSuspect("g2"));
  EXPECT_EQ(l.Find("g2")->suspect_since, "2026-11-21T08:10:00Z");
  for (const char* n : {"g5", "g6", "g7"}) EXPECT_FALSE(l.IsSuspect(n)) << n;
  EXPECT_GT(Score(l, "g2"), Score(l, "g7") * 2);
  ASSERT_EQ(l.Suspects().size(), 1u);
  EXPECT_EQ(SuspectReasons(*l.Find("g2")),
            (std::vector<std::string>{"t1 StepTimeDrift", "t2 StepTimeDrift", "t4 StepTimeDrift"}));
}

TEST(NodeLedgerTest, RecordingTheSameTrialTwiceChangesNothing) {
  NodeLedger l;
  l.RecordTrial(Obs("t1", {"g1"}, "NodeFault"), "t");
  const nlohmann::json before = l.ToJson();
  EXPECT_TRUE(l.RecordTrial(Obs("t1", {"g1"}, "NodeFault"), "t").empty());
  EXPECT_EQ(l.ToJson(), before);
  // The same trial name in another campaign is another trial.
  TrialObservation other = Obs("t1", {"g1"}, "NodeFault");
  other.campaign = "d";
  EXPECT_EQ(l.RecordTrial(other, "t"), std::vector<std::string>{"g1"});
}

TEST(NodeLedgerTest, HealthyTrialsCreditNodesAndFailuresWeighByKindAndConfidence) {
  NodeLedger l;
  l.RecordTrial(Obs("t1", {"a"}, "NodeFault", 100), "t");
  l.RecordTrial(Obs("t2", {"b"}, "NodeFault", 50), "t");
  l.RecordTrial(Obs("t3", {"c"}, "CollectiveTimeout", 100), "t");
  l.RecordTrial(Obs("t4", {"d"}, "CudaOOM", 100), "t");  // the config's fault, not the node's
  EXPECT_GT(Score(l, "a"), Score(l, "b"));
  EXPECT_GT(Score(l, "a"), Score(l, "c"));
  EXPECT_EQ(Score(l, "d"), 0);
  const double a = Score(l, "a");
  l.RecordTrial(Obs("t5", {"a", "b"}), "t");
  EXPECT_LT(Score(l, "a"), a);
  // Credit never goes below zero: a long healthy past does not hide a new fault.
  for (int i = 0; i < 20; ++i) l.RecordTrial(Obs("h" + std::to_string(i), {"e"}), "t");
  EXPECT_EQ(Score(l, "e"), 0);
  l.RecordTrial(Obs("x1", {"e"}, "NodeFault"), "t");
  EXPECT_FALSE(l.IsSuspect("e"));  // one node error can be bad luck
  EXPECT_EQ(l.RecordTrial(Obs("x2", {"e"}, "NodeFault"), "t"), std::vector<std::string>{"e"});
}

TEST(NodeLedgerTest, DiagnosticsMakeSuspectAndAllPassingClears) {
  NodeLedger l;
  EXPECT_TRUE(l.RecordDiagnostic("g3", "gpu-clocks", false, "SM clock 990 MHz", "t1"));
  EXPECT_TRUE(l.IsSuspect("g3"));
  EXPECT_FALSE(l.RecordDiagnostic("g3", "ecc-xid", false, "Xid 79", "t1"));  // already suspect
  const auto& checks = l.options().clearing_checks;
  for (size_t i = 0; i + 1 < checks.size(); ++i) {
    EXPECT_FALSE(l.RecordDiagnostic("g3", checks[i], true, "ok", "t2")) << checks[i];
    EXPECT_TRUE(l.IsSuspect("g3"));
  }
  EXPECT_TRUE(l.RecordDiagnostic("g3", checks.back(), true, "ok", "t2"));
  EXPECT_FALSE(l.IsSuspect("g3"));
}

TEST(NodeLedgerTest, AFailedCheckKeepsTheSuspicionUntilItPasses) {
  NodeLedger l;
  l.RecordTrial(Obs("t1", {"g1"}, "NodeFault"), "t");
  l.RecordTrial(Obs("t2", {"g1"}, "NodeFault"), "t");
  ASSERT_TRUE(l.IsSuspect("g1"));
  EXPECT_FALSE(l.RecordDiagnostic("g1", "gemm", false, "312 of 989 TFLOPS", "t"));
  for (const auto& c : l.options().clearing_checks) {
    if (c != "gemm") {
      EXPECT_FALSE(l.RecordDiagnostic("g1", c, true, "ok", "t"));
    }
  }
  EXPECT_TRUE(l.IsSuspect("g1"));
  EXPECT_TRUE(l.RecordDiagnostic("g1", "gemm", true, "980 TFLOPS", "t"));
  EXPECT_FALSE(l.IsSuspect("g1"));
  EXPECT_EQ(Score(l, "g1"), 0);
}

TEST(NodeLedgerTest, ClearEndsASuspicionAndEvidenceIsBounded) {
  LedgerOptions o;
  o.max_evidence = 3;
  NodeLedger l(o);
  for (int i = 0; i < 6; ++i) l.RecordTrial(Obs("t" + std::to_string(i), {"g"}, "NodeFault"), "t");
  ASSERT_TRUE(l.IsSuspect("g"));
  EXPECT_EQ(l.Find("g")->evidence.size(), 3u);
  l.Clear("g", "uncordoned after remediation", "t9");
  EXPECT_FALSE(l.IsSuspect("g"));
  EXPECT_EQ(l.Find("g")->evidence.back().kind, "Cleared");
  EXPECT_TRUE(l.Suspects().empty());
}

TEST(NodeLedgerTest, JsonRoundTripsAndKeepsIdempotency) {
  NodeLedger l;
  l.RecordTrial(Anomalous("t1", {"g2", "g5"}), "t");
  l.RecordTrial(Obs("t2", {"g2"}, "NodeFault"), "t");
  l.RecordDiagnostic("g2", "gpu-clocks", false, "slow", "t");
  auto back = NodeLedger::FromJson(nlohmann::json::parse(l.ToJson().dump()));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ToJson(), l.ToJson());
  EXPECT_TRUE(back->IsSuspect("g2"));
  EXPECT_TRUE(back->RecordTrial(Obs("t2", {"g2"}, "NodeFault"), "t").empty());
  EXPECT_EQ(back->ToJson(), l.ToJson());
}

TEST(NodeLedgerTest, BadJsonIsRefusedNamingTheField) {
  auto score = NodeLedger::FromJson({{"nodes", {{{"name", "g1"}, {"score", "high"}}}}});
  ASSERT_FALSE(score.ok());
  EXPECT_NE(score.status().message().find("nodes[0].score: must be a number"), std::string::npos)
      << score.status().message();
  auto name = NodeLedger::FromJson({{"nodes", {{{"score", 1}}}}});
  ASSERT_FALSE(name.ok());
  EXPECT_NE(name.status().message().find("nodes[0].name: required"), std::string::npos);
  auto ev =
      NodeLedger::FromJson({{"nodes", {{{"name", "g1"}, {"evidence", {{{"weight", "x"}}}}}}}});
  ASSERT_FALSE(ev.ok());
  EXPECT_NE(ev.status().message().find("nodes[0].evidence[0].weight"), std::string::npos);
  auto typo = NodeLedger::FromJson({{"node", nlohmann::json::array()}});
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("unknown field"), std::string::npos);
  EXPECT_TRUE(NodeLedger::FromJson(nlohmann::json::object()).ok());
}

}  // namespace
}  // namespace paratune::health
