// The ledger in a shared cluster: one campaign (one tenant) cannot condemn a node alone, and a
// ledger of a thousand nodes is compacted under the ConfigMap bound, stale healthy nodes first,
// suspects never.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "agents/health/node_ledger.h"

namespace paratune::health {
namespace {

TrialObservation Drift(const std::string& campaign, const std::string& trial,
                       const std::string& node) {
  TrialObservation o;
  o.campaign = campaign;
  o.trial = trial;
  o.nodes = {node};
  Anomaly a;
  a.kind = AnomalyKind::kStepTimeDrift;
  a.summary = "step time drifted";
  o.anomaly = a;
  return o;
}

TrialObservation Healthy(const std::string& campaign, const std::string& trial,
                         const std::string& node) {
  TrialObservation o;
  o.campaign = campaign;
  o.trial = trial;
  o.nodes = {node};
  return o;
}

TEST(NodeLedgerCampaignsTest, OneCampaignCannotCondemnANodeAlone) {
  LedgerOptions o;
  o.min_campaigns = 2;
  NodeLedger l(o);
  for (int i = 0; i < 10; ++i) {
    l.RecordTrial(Drift("team-a/pin", "pin-t" + std::to_string(i), "gpu-7"), "t");
  }
  EXPECT_FALSE(l.IsSuspect("gpu-7")) << "ten bad trials, all from one campaign";
  EXPECT_LT(l.Find("gpu-7")->score, o.suspect_threshold);
  // A second campaign seeing the same node misbehave: now it is suspect.
  auto became = l.RecordTrial(Drift("team-b/llama", "llama-t1", "gpu-7"), "t");
  EXPECT_EQ(became, std::vector<std::string>{"gpu-7"});
  // The evidence survives a round trip through the ConfigMap.
  auto back = NodeLedger::FromJson(l.ToJson(), o);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->Find("gpu-7")->campaigns.size(), 2u);
  // A failed diagnostic check (run by the operator itself) still suspects a node on its own.
  NodeLedger d(o);
  d.RecordTrial(Drift("team-a/pin", "pin-t1", "gpu-3"), "t");
  EXPECT_TRUE(d.RecordDiagnostic("gpu-3", "gemm", false, "42% of expected", "t"));
  EXPECT_TRUE(d.IsSuspect("gpu-3"));
}

TEST(NodeLedgerCampaignsTest, OneCampaignsEvidenceCountsInFullWhenConfiguredSo) {
  NodeLedger l;  // min_campaigns 1: the CLI's simulations, a single-tenant cluster
  EXPECT_EQ(l.RecordTrial(Drift("c", "t1", "gpu-7"), "t"), std::vector<std::string>{"gpu-7"});
}

// A thousand nodes, each with a full history: far beyond a ConfigMap uncompacted.
NodeLedger Thousand(int suspects) {
  LedgerOptions o;
  o.min_campaigns = 2;
  NodeLedger l(o);
  for (int n = 0; n < 1000; ++n) {
    const std::string node = "gpu-node-" + std::to_string(n) + ".pool-a.example.internal";
    for (int t = 0; t < 25; ++t) {
      // Older nodes first: node n was last seen at "hour" n.
      char when[32];
      std::snprintf(when, sizeof(when), "2026-11-%02dT%02d:00:00Z", 1 + n / 24, n % 24);
      l.RecordTrial(Healthy("ns/c" + std::to_string(t % 7),
                            "trial-" + std::to_string(n) + "-" + std::to_string(t), node),
                    when);
    }
    if (n < suspects) l.RecordDiagnostic(node, "gemm", false, "slow", "2026-11-30T00:00:00Z");
  }
  return l;
}

TEST(NodeLedgerCompactTest, AThousandNodeLedgerFitsTheBoundSuspectsKept) {
  NodeLedger l = Thousand(3);
  const size_t before = l.ToJson().dump().size();
  EXPECT_GT(before, 1000u * 1024u) << "the test must start beyond the object limit";
  const size_t bound = 900 * 1024;
  CompactionReport r = l.Compact(bound);
  EXPECT_TRUE(r.fits);
  EXPECT_LE(l.ToJson().dump().size(), bound);
  EXPECT_EQ(r.bytes, l.ToJson().dump().size());
  EXPECT_EQ(r.bytes_before, before);
  EXPECT_GT(r.evicted_nodes, 0u);
  for (int n = 0; n < 3; ++n) {
    EXPECT_TRUE(l.IsSuspect("gpu-node-" + std::to_string(n) + ".pool-a.example.internal"));
  }
  // The least recently seen healthy nodes went first: the newest is kept.
  EXPECT_NE(l.Find("gpu-node-999.pool-a.example.internal"), nullptr);
  EXPECT_EQ(l.Find("gpu-node-3.pool-a.example.internal"), nullptr);
  // Compacting what fits changes nothing.
  EXPECT_FALSE(l.Compact(bound).changed());
}

TEST(NodeLedgerCompactTest, ALedgerOfSuspectsOnlyThatCannotFitSaysSo) {
  NodeLedger l = Thousand(1000);
  CompactionReport r = l.Compact(16 * 1024);
  EXPECT_FALSE(r.fits);
  EXPECT_EQ(l.Suspects().size(), 1000u) << "suspects are never forgotten";
}

}  // namespace
}  // namespace paratune::health
