// The attribution benchmark (issue 9, `make bench`): can paratune name the sick node behind its
// trials? One pool of simulated nodes runs three campaigns in sequence (bench/scenarios s02:
// 1-node trials, s03 and s14: 2-node trials), sharing one node ledger as the operator does
// across campaigns. One node carries a hidden fault (throttle 0.5/0.7, slow-link 0.3, flaky
// 0.3/0.5; agents/sim/node_faults.h); the agents see only trial results and logs. Per run:
// was the faulty node named suspect (and no other), false alarms on fault-free runs, trials that
// touched the faulty node before it became suspect, and whether each campaign's best is still
// >= 98% of the same campaign's best on the fault-free cluster (true, noise-free objectives).
// The ledger threshold is chosen on the odd seeds and the figures are reported on the even ones.
// Prints Markdown to stdout; exit 1 only when it could not measure.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/sim_campaign/sim_runner.h"
#include "agents/sim_campaign/simulation.h"

namespace paratune {
namespace {

constexpr int kSeeds = 32;  // odd: tuning half, even: reported half
constexpr int kNodes = 8;
const char* const kCampaigns[] = {"s02-llama3-8b-h100x8", "s03-llama2-7b-a100x16",
                                  "s14-llama3-8b-h100x16-tokens"};
const char* const kFaults[] = {"throttle:0.5", "throttle:0.7", "slow-link:0.3", "flaky:0.3",
                               "flaky:0.5"};

struct Sequence {
  std::vector<nlohmann::json> runs;  // one simulate JSON per campaign
  std::vector<double> best_true;     // true objective of each campaign's best (0: none)
  std::vector<std::string> suspects;
};

Result<Sequence> RunSequence(const std::vector<CampaignSpec>& specs, uint64_t seed,
                             const std::string& faults, const health::LedgerOptions& lo) {
  Sequence out;
  std::optional<health::NodeLedger> ledger;
  for (const CampaignSpec& spec : specs) {
    auto runner = MakeSimulatedClusterRunner(spec, seed, faults);
    if (!runner.ok()) return runner.status();
    SimulationOptions o;
    o.seed = seed;
    o.nodes = kNodes;
    o.ledger = lo;
    o.start_ledger = ledger;
    auto r = RunSimulation(spec, o, runner->get(), {});
    if (!r.ok()) return r.status();
    ledger = r->ledger;
    double best = 0;
    if (r->json["best"].is_object()) {
      auto cfg = ConfigFromJson(r->json["best"]["config"], "config");
      auto truth = cfg.ok() ? (*runner)->TrueMetrics(*cfg) : std::nullopt;
      if (truth) best = truth->Objective(spec.objective.metric);
    }
    out.best_true.push_back(best);
    out.runs.push_back(std::move(r->json));
  }
  if (ledger) out.suspects = ledger->SuspectNames();
  return out;
}

struct Tally {
  int runs = 0, named = 0, exact = 0, other = 0, best_ok = 0, campaigns = 0, touched = 0;
  double wasted = 0;
  void Print(const std::string& label) const {
    std::printf("| %s | %d | %.0f%% | %.0f%% | %.0f%% | %.1f | %.1f | %.0f%% |\n", label.c_str(),
                runs, 100.0 * named / runs, 100.0 * exact / runs, 100.0 * other / runs,
                wasted / runs, static_cast<double>(touched) / runs,
                100.0 * best_ok / std::max(1, campaigns));
  }
};

// Scores one faulty sequence against the fault-free one of the same seed.
void Score(const Sequence& s, const Sequence& healthy, const std::vector<CampaignSpec>& specs,
           const std::string& faulty, Tally* t) {
  ++t->runs;
  const bool named = std::count(s.suspects.begin(), s.suspects.end(), faulty) > 0;
  t->named += named;
  t->exact += named && s.suspects.size() == 1;
  t->other += s.suspects.size() > (named ? 1u : 0u);
  bool detected = false;
  for (size_t k = 0; k < s.runs.size(); ++k) {
    std::string after;
    for (const auto& n : s.runs[k].value("suspectNodes", nlohmann::json::array())) {
      if (n["name"] == faulty) after = n.value("afterTrial", "");
    }
    for (const auto& trial : s.runs[k]["trials"]) {
      const auto nodes = trial.value("nodes", std::vector<std::string>());
      const bool touches = std::count(nodes.begin(), nodes.end(), faulty) > 0;
      t->touched += touches;
      if (touches && !detected) t->wasted += 1;
      if (!after.empty() && trial["name"] == after) detected = true;
    }
    const bool maximize = specs[k].objective.Maximize();
    const double a = s.best_true[k], b = healthy.best_true[k];
    ++t->campaigns;
    if (b <= 0 || (a > 0 && (maximize ? a >= 0.98 * b : a <= b / 0.98))) ++t->best_ok;
  }
}

std::string FaultyNode(uint64_t seed) {
  return "paratune-gpu-" + std::to_string(seed * 5 % kNodes);
}

struct Evaluation {
  std::map<std::string, Tally> by_fault;
  Tally all;
  int fault_free = 0, false_alarms = 0;
};

Result<Evaluation> Evaluate(const std::vector<CampaignSpec>& specs, int parity,
                            const health::LedgerOptions& lo) {
  Evaluation e;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    if (static_cast<int>(seed % 2) != parity) continue;
    auto healthy = RunSequence(specs, seed, "", lo);
    if (!healthy.ok()) return healthy.status();
    ++e.fault_free;
    e.false_alarms += !healthy->suspects.empty();
    for (const char* f : kFaults) {
      const std::string faulty = FaultyNode(seed);
      auto s = RunSequence(specs, seed, faulty + "=" + f, lo);
      if (!s.ok()) return s.status();
      Score(*s, *healthy, specs, faulty, &e.by_fault[f]);
      Score(*s, *healthy, specs, faulty, &e.all);
    }
  }
  return e;
}

int Main() {
  std::vector<CampaignSpec> specs;
  for (const char* name : kCampaigns) {
    auto spec =
        LoadCampaignFile(std::string(PARATUNE_SOURCE_DIR) + "/bench/scenarios/" + name + ".yaml");
    if (!spec.ok()) {
      std::cerr << name << ": " << spec.status().ToString() << "\n";
      return 1;
    }
    specs.push_back(*spec);
  }
  std::printf("## Attribution\n\n");
  std::printf(
      "%d simulated GPU nodes run three campaigns in sequence (%s: 1-node trials; %s, %s: 2-node "
      "trials) with one node ledger, builtin engine, RetryTrial approved at once. One node has a "
      "hidden fault; the agents see only trial results and logs. %d seeds (hidden realities): "
      "the ledger threshold is chosen on the odd seeds (tuning half) and every figure below "
      "the tuning table is measured on the even seeds only.\n\n",
      kNodes, kCampaigns[0], kCampaigns[1], kCampaigns[2], kSeeds);
  std::printf("Tuning half (odd seeds):\n\n| suspect threshold | named exactly | false alarms |\n");
  std::printf("|---|---|---|\n");
  double chosen = 3.0, best_score = -1e9;
  for (double threshold : {2.0, 3.0, 4.0}) {
    health::LedgerOptions lo;
    lo.suspect_threshold = threshold;
    auto e = Evaluate(specs, 1, lo);
    if (!e.ok()) {
      std::cerr << e.status().ToString() << "\n";
      return 1;
    }
    const double exact = static_cast<double>(e->all.exact) / e->all.runs;
    const double fa = static_cast<double>(e->false_alarms) / e->fault_free;
    std::printf("| %.1f | %.0f%% | %d of %d |\n", threshold, 100 * exact, e->false_alarms,
                e->fault_free);
    if (exact - 2 * fa > best_score + 1e-9) {
      best_score = exact - 2 * fa;
      chosen = threshold;
    }
  }
  health::LedgerOptions lo;
  lo.suspect_threshold = chosen;
  auto e = Evaluate(specs, 0, lo);
  if (!e.ok()) {
    std::cerr << e.status().ToString() << "\n";
    return 1;
  }
  std::printf(
      "\nChosen threshold %.1f (exact rate - 2 x false-alarm rate). Reported half (even "
      "seeds):\n\n",
      chosen);
  std::printf(
      "| fault | runs | faulty node named | named and no other | other node named | "
      "trials wasted before detection | trials touching it | campaign best >= 98%% of "
      "fault-free |\n|---|---|---|---|---|---|---|---|\n");
  for (const char* f : kFaults) e->by_fault[f].Print(f);
  e->all.Print("**all**");
  std::printf("\n- false alarms on fault-free runs: %d of %d (%.0f%% of runs with any suspect)\n",
              e->false_alarms, e->fault_free, 100.0 * e->false_alarms / e->fault_free);
  std::printf(
      "- slow-link slows only collectives that cross nodes: the 1-node campaign cannot "
      "see it, and in these 2-node campaigns the gradient reduce hides behind the backward "
      "pass, so a 0.3 link costs their trials about 1%% (below any honest threshold; the "
      "nccl-allreduce diagnostic is the tool for it).\n");
  std::printf("- the ledger's default threshold (agents/health/node_ledger.h) is %.1f.\n\n",
              health::LedgerOptions().suspect_threshold);
  return 0;
}

}  // namespace
}  // namespace paratune

int main() { return paratune::Main(); }
