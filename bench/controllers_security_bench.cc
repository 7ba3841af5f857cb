// Bounded state in a shared cluster (issue 16, `make bench`): the node ledger of a 1,000-node
// cluster with full histories, written through NodeLedgerStore (compacted before every write)
// into the ConfigMap of a fake API server; the EventRecorder's de-duplication memory after
// 20,000 distinct Events; campaigns of up to 10,000 trials saved through ConfigMapPoolStore; the
// knowledge of 40 namespaces' campaigns (controllers/campaign_knowledge.h), each with its own
// knowledge ConfigMap near the API's size limit.
// Reports sizes against the ConfigMap limit (1 MiB of data), the time
// each write takes, what compaction kept, and this process's peak RSS.
// Prints Markdown to stdout; exit 1 only when it could not measure.
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "agents/trials/knowledge_failure_analyzer.h"
#include "base/time_source.h"
#include "controllers/campaign_knowledge.h"
#include "controllers/message_pool_store.h"
#include "controllers/node_health/node_ledger_store.h"
#include "operator/event_recorder.h"
#include "testing/fakes/fake_kube_client.h"
#include "tests/controllers/long_campaign_pool.h"

namespace paratune {
namespace {

using Clock = std::chrono::steady_clock;
namespace res = kube::resources;

long PeakRssKiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// This process's resident memory now (VmRSS), in KiB.
long RssKiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

std::string Node(int n) { return "gpu-node-" + std::to_string(n) + ".pool-a.example.internal"; }

health::TrialObservation Trial(int campaign, int node, int t, bool bad) {
  health::TrialObservation o;
  o.campaign = "team-" + std::to_string(campaign) + "/llama";
  o.trial = "llama-" + std::to_string(node) + "-t" + std::to_string(t);
  o.nodes = {Node(node)};
  if (bad) o.failure_category = "NodeFault";
  return o;
}

std::string When(int n) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "2026-11-%02dT%02d:%02d:00Z", 1 + n / 1440, n / 60 % 24, n % 60);
  return buf;
}

int Ledger() {
  kube::FakeKubeClient client;
  controllers::NodeLedgerStore store(&client, "paratune-system");
  health::LedgerOptions lo;
  lo.min_campaigns = 2;
  store.set_ledger_options(lo);
  // Uncompacted size, for reference: the same evidence in one ledger with no bound.
  health::NodeLedger raw(lo);
  std::printf(
      "| nodes | uncompacted nodes.json | stored ConfigMap data | nodes kept | "
      "suspects kept | write (median of the last 10) |\n|---|---|---|---|---|---|\n");
  std::vector<double> ms;
  // Ten nodes' trials per write (a reconcile records every finished trial it sees at once).
  for (int n = 9; n < 1000; n += 10) {
    auto change = [&](health::NodeLedger* l) {
      for (int k = n - 9; k <= n; ++k) {
        for (int t = 0; t < 25; ++t) {
          // Every 50th node is faulty for two campaigns: it must stay suspect.
          const bool bad = k % 50 == 0 && t < 4;
          l->RecordTrial(Trial(bad ? t % 2 : t % 7, k, t, bad), When(k));
        }
      }
    };
    change(&raw);
    const auto t0 = Clock::now();
    health::CompactionReport rep;
    auto written = store.Modify(change, &rep);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!written.ok()) {
      std::fprintf(stderr, "ledger write failed at node %d: %s\n", n,
                   written.status().ToString().c_str());
      return 1;
    }
    if ((n + 1) % 250 != 0) continue;
    auto cm = client.Get(res::kConfigMaps, "paratune-system", controllers::kNodeHealthConfigMap);
    if (!cm.ok()) return 1;
    const size_t stored = (*cm)["data"][controllers::kNodeHealthKey].get<std::string>().size();
    std::vector<double> last(ms.end() - std::min<size_t>(10, ms.size()), ms.end());
    std::nth_element(last.begin(), last.begin() + last.size() / 2, last.end());
    std::printf("| %d | %.0f KiB | %.0f KiB | %zu | %zu | %.1f ms |\n", n + 1,
                raw.ToJson().dump().size() / 1024.0, stored / 1024.0, written->size(),
                written->Suspects().size(), last[last.size() / 2]);
  }
  std::printf(
      "\nBound %zu bytes (ConfigMap data limit 1,048,576). Suspects expected: 20 "
      "(every 50th node, evidence from two campaigns).\n\n",
      store.max_bytes());
  return 0;
}

int Events() {
  kube::FakeKubeClient client;
  FakeTimeSource time;
  kube::EventRecorder rec(&client, "paratune-operator", &time);
  const int n = 20000;
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    kube::Json obj = {{"apiVersion", "tuning.paratune.dev/v1alpha1"},
                      {"kind", "TuningCampaign"},
                      {"metadata",
                       {{"name", "c" + std::to_string(i % 500)},
                        {"namespace", "ns"},
                        {"uid", "uid-" + std::to_string(i % 500)}}}};
    rec.Event(obj, "Normal", "Launched", "trial " + std::to_string(i) + " launched");
    time.Advance(Millis(20));
  }
  const double s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf(
      "EventRecorder: %d distinct Events over %.0f simulated minutes: %zu remembered for "
      "de-duplication (bound %zu), %.1f us per Event.\n\n",
      n, n * 0.02 / 60, rec.remembered(), kube::EventRecorder::kMaxSeen, s * 1e6 / n);
  return 0;
}

int Pools() {
  std::printf(
      "Message pools of long campaigns, saved once through ConfigMapPoolStore into a fake API "
      "server (the API server refuses a ConfigMap over 1 MiB):\n\n"
      "| trials | pool JSON | ConfigMaps | largest ConfigMap data | condition | trials after "
      "reload | save |\n|---|---|---|---|---|---|---|\n");
  for (int trials : {1000, 2500, 5000, 10000}) {
    kube::FakeKubeClient client;
    kube::Json campaign = {{"apiVersion", "tuning.paratune.dev/v1alpha1"},
                           {"kind", "TuningCampaign"},
                           {"metadata", {{"name", "llama"}, {"namespace", "ns"}}},
                           {"spec", kube::Json::object()}};
    auto created = client.Create(res::kTuningCampaigns, "ns", campaign);
    if (!created.ok()) return 1;
    const MessagePool pool = testing::LongCampaignPool(trials);
    controllers::ConfigMapPoolStore store(&client);
    const auto t0 = Clock::now();
    auto saved = store.Save(*created, pool, "");
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    if (!saved.ok()) {
      std::fprintf(stderr, "pool of %d trials not saved: %s\n", trials,
                   saved.status().ToString().c_str());
      return 1;
    }
    auto all = client.List(res::kConfigMaps, "ns", {});
    if (!all.ok()) return 1;
    size_t largest = 0;
    for (const auto& cm : all->items) {
      size_t bytes = 0;
      for (const auto& [key, value] : cm["data"].items()) bytes += value.get<std::string>().size();
      largest = std::max(largest, bytes);
    }
    controllers::CampaignStatus typed;
    if (auto c = store.PoolCondition(*created)) typed.Apply(*c, 1, "2026-11-21T06:00:00Z");
    kube::Json status = typed.ToJson();
    std::string condition = "none";
    if (status.contains("conditions") && !status["conditions"].empty()) {
      const auto& c = status["conditions"][0];
      condition = c.value("type", "") + "=" + c.value("status", "") + "/" + c.value("reason", "");
    }
    controllers::ConfigMapPoolStore fresh(&client);
    auto loaded = fresh.Load(*created);
    if (!loaded.ok()) return 1;
    std::printf("| %d | %.0f KiB | %zu | %.0f KiB | %s | %zu | %.0f ms |\n", trials,
                pool.ToJson().dump().size() / 1024.0, all->items.size(), largest / 1024.0,
                condition.c_str(), loaded->pool.trials().size(), ms);
  }
  std::printf("\n");
  return 0;
}

// 40 namespaces, each with a knowledge ConfigMap of 300 signatures, 400 known failures and a
// runbook (about 900 KiB, near the 1 MiB limit a namespace user can fill), one regex signature
// among them (refused). Every campaign's knowledge is built once, then asked again.
int Knowledge() {
  kube::FakeKubeClient client;
  controllers::ConfigMapCache configmaps(&client);
  auto site_kb = KnowledgeBase::LoadEmbedded();
  if (!site_kb.ok()) return 1;
  std::shared_ptr<const KnowledgeBase> site(std::move(*site_kb));
  auto site_analyzer = MakeKnowledgeFailureAnalyzer(site);
  if (!site_analyzer.ok()) return 1;
  controllers::CampaignKnowledge knowledge(
      &configmaps, "", site, std::shared_ptr<const FailureAnalyzer>(std::move(*site_analyzer)));
  const int namespaces = 40;
  std::string sigs = "signatures:\n", cases = "cases:\n";
  for (int i = 0; i < 300; ++i) {
    sigs += "- key: team-" + std::to_string(i) +
            "\n  category: NodeFault\n  contains: [\"site fault " + std::to_string(i) +
            " on rack\"]\n  cause: " + std::string(1500, 'c') + "\n  retryable: true\n";
  }
  for (int i = 0; i < 400; ++i) {
    cases += "- url: https://tickets.example.com/T-" + std::to_string(i) +
             "\n  category: NodeFault\n  retryable: true\n  log: |\n    fabric agent " +
             std::to_string(i) + " lost lease on gateway " + std::string(600, 'g') + "\n";
  }
  size_t bytes = 0;
  for (int n = 0; n < namespaces; ++n) {
    const std::string ns = "team-" + std::to_string(n);
    kube::Json cm = {
        {"apiVersion", "v1"},
        {"kind", "ConfigMap"},
        {"metadata", {{"name", "team-knowledge"}, {"namespace", ns}}},
        {"data",
         {{"signatures.yaml", sigs},
          {"regex.yaml",
           "signatures:\n- key: team-regex\n  category: Unknown\n  regex: ['(a+)+$']\n"},
          {"incidents.yaml", cases},
          {"runbook.md", "# Runbook\nDrain the node, then page the fabric team.\n"}}}};
    bytes = sigs.size() + cases.size();
    if (!client.Create(res::kConfigMaps, ns, cm).ok()) return 1;
  }
  CampaignSpec spec;
  spec.agents.knowledge_config_maps = {"team-knowledge"};
  const long rss0 = RssKiB();
  std::vector<double> build_ms;
  size_t warnings = 0;
  for (int n = 0; n < namespaces; ++n) {
    const auto t0 = Clock::now();
    auto view = knowledge.For("team-" + std::to_string(n), spec);
    build_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!view.ok()) return 1;
    warnings += view->warnings.size();
  }
  const long rss1 = RssKiB();
  // The last 16 are cached: asking again costs the GET and a lookup.
  const auto t1 = Clock::now();
  FailureDiagnosis d;
  for (int n = namespaces - 16; n < namespaces; ++n) {
    auto view = knowledge.For("team-" + std::to_string(n), spec);
    if (!view.ok()) return 1;
    FailureEvidence ev;
    ev.log = "site fault 17 on rack r4\n";
    d = view->analyzer->Diagnose(ev, Config{}, nullptr);
  }
  const double again_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count() / 16;
  std::sort(build_ms.begin(), build_ms.end());
  std::printf(
      "Campaign knowledge: %d namespaces, each naming a knowledge ConfigMap of %.0f KiB (300 "
      "signatures, 400 known failures, a runbook, and one regex signature, refused: %zu "
      "warnings in all). Built per namespace in %.0f ms (median; max %.0f ms); asked again "
      "(cached: one GET, a lookup and a diagnosis) %.2f ms; a campaign signature explained the "
      "test log: %s. Resident memory of the 16 kept (the cache's bound): %.0f MiB more than "
      "before (%.1f MiB each).\n\n",
      namespaces, bytes / 1024.0, warnings, build_ms[build_ms.size() / 2], build_ms.back(),
      again_ms, d.signature.c_str(), (rss1 - rss0) / 1024.0, (rss1 - rss0) / 1024.0 / 16);
  return 0;
}

}  // namespace
}  // namespace paratune

int main() {
  spdlog::set_level(spdlog::level::warn);  // stdout is the Markdown report.
  std::printf("## Security and bounded state\n\n");
  std::printf(
      "`controllers_security_bench`: the node ledger of a 1,000-node cluster, 25 trials "
      "per node from 7 campaigns (min_campaigns 2), written through NodeLedgerStore into "
      "a fake API server's ConfigMap.\n\n");
  if (paratune::Ledger() != 0) return 1;
  if (paratune::Events() != 0) return 1;
  if (paratune::Knowledge() != 0) return 1;
  if (paratune::Pools() != 0) return 1;
  std::printf("Peak RSS of the benchmark process: %ld MiB.\n", paratune::PeakRssKiB() / 1024);
  return 0;
}
