// Per-node faults of the simulated cluster (issue 9): parsing, and what each fault does to a
// trial that runs on the sick node (size and direction of the effect, the drift and spike shapes,
// the flaky failure rate and its error texts, determinism, and no change without a fault).
#include "agents/sim/node_faults.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <sstream>

#include "agents/model/catalog.h"
#include "agents/sim/simulated_cluster.h"
#include "tests/sim/workloads.h"

namespace paratune {
namespace {

using testing::Llama7bV5e;
using testing::OnNodes;

using PV = ParamValue;

Workload Llama8b(int nodes = 1) {
  Workload w;
  w.model = *FindModelPreset("llama3-8b");
  w.training.seq_length = 8192;
  w.training.global_batch_size = 512;
  w.hardware.accelerator = "nvidia-h100-80gb";
  w.hardware.nodes = nodes;
  w.hardware.devices_per_node = 8;
  w.accel = FindAccelerator("nvidia-h100-80gb");
  w.devices = 8 * nodes;
  return w;
}

Config Good() {
  return {{"tp", PV::Int(2)},
          {"mbs", PV::Int(1)},
          {"recompute", PV::Enum("selective")},
          {"distributedOptimizer", PV::Bool(true)}};
}

// step_times of a faulted run divided by those of the healthy run (same noise draws).
std::vector<double> Ratios(const SimTrialResult& sick, const SimTrialResult& healthy) {
  std::vector<double> out;
  for (size_t i = 0; i < sick.step_times.size() && i < healthy.step_times.size(); ++i) {
    out.push_back(sick.step_times[i] / healthy.step_times[i]);
  }
  return out;
}

TEST(NodeFaultsTest, ParsesFormatsAndNamesBadEntries) {
  auto f = ParseNodeFaults("paratune-gpu-2=throttle:0.5; paratune-gpu-3=slow-link:0.3,g1=flaky:1");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->size(), 3u);
  EXPECT_EQ((*f)[1].node, "paratune-gpu-3");
  EXPECT_EQ((*f)[1].kind, NodeFaultKind::kSlowLink);
  EXPECT_DOUBLE_EQ((*f)[1].severity, 0.3);
  auto again = ParseNodeFaults(FormatNodeFaults(*f));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(FormatNodeFaults(*again), FormatNodeFaults(*f));
  EXPECT_TRUE(ParseNodeFaults("").ok());
  EXPECT_NE(ParseNodeFaults("gpu-2=hot:0.5").status().message().find("\"gpu-2=hot:0.5\""),
            std::string::npos);
  EXPECT_FALSE(ParseNodeFaults("gpu-2=throttle:1.5").ok());
  EXPECT_FALSE(ParseNodeFaults("gpu-2=throttle").ok());
  EXPECT_EQ(FaultsOn(*f, {"g1", "x"}).size(), 1u);
}

TEST(NodeFaultsTest, FaultsOnOtherNodesChangeNothing) {
  const Workload w = Llama8b();
  SimOptions plain;
  plain.seed = 7;
  plain.infra_fault_rate = 0.3;  // infrastructure faults keep being drawn as before
  for (int attempt = 0; attempt < 20; ++attempt) {
    SimTrialResult a = RunSimulatedTrial(w, Good(), plain, attempt);
    SimOptions o =
        OnNodes({"paratune-gpu-0"}, "paratune-gpu-1=throttle:0.3;paratune-gpu-2=flaky:1");
    o.infra_fault_rate = 0.3;
    SimTrialResult b = RunSimulatedTrial(w, Good(), o, attempt);
    SimOptions unplaced = o;  // faults but no node placement: ignored
    unplaced.nodes.clear();
    unplaced.node_faults = *ParseNodeFaults("paratune-gpu-0=throttle:0.3");
    SimTrialResult c = RunSimulatedTrial(w, Good(), unplaced, attempt);
    for (const SimTrialResult* r : {&b, &c}) {
      EXPECT_EQ(r->log, a.log);
      EXPECT_EQ(r->termination_message, a.termination_message);
      EXPECT_EQ(r->exit_code, a.exit_code);
      EXPECT_EQ(r->step_times, a.step_times);
      EXPECT_EQ(r->simulated_seconds, a.simulated_seconds);
      EXPECT_EQ(r->fault_played, "");
    }
  }
}

TEST(NodeFaultsTest, StepTimesAreWhatTheLogShows) {
  SimTrialResult r = RunSimulatedTrial(Llama8b(), Good(), OnNodes({"n0"}, "n0=throttle:0.6"), 0);
  ASSERT_EQ(r.exit_code, 0) << r.log;
  const std::regex ms(R"(elapsed time per iteration \(ms\): ([\d.]+))");
  std::vector<double> logged;
  for (std::sregex_iterator it(r.log.begin(), r.log.end(), ms), end; it != end; ++it) {
    logged.push_back(std::stod((*it)[1]) / 1000.0);
  }
  ASSERT_EQ(logged.size(), r.step_times.size());
  for (size_t i = 0; i < logged.size(); ++i) EXPECT_NEAR(logged[i], r.step_times[i], 1e-4);
}

TEST(NodeFaultsTest, ThrottledGpuSlowsComputeByAboutOneOverSeverity) {
  const Workload w = Llama8b();
  SimTrialResult healthy = RunSimulatedTrial(w, Good(), OnNodes({"n0"}, ""), 0);
  ASSERT_EQ(healthy.exit_code, 0);
  double previous = 1.0;
  for (double s : {0.8, 0.5, 0.3}) {
    SimOptions o = OnNodes({"n0"}, "n0=throttle:" + std::to_string(s));
    SimTrialResult sick = RunSimulatedTrial(w, Good(), o, 0);
    ASSERT_EQ(sick.exit_code, 0) << sick.log;
    EXPECT_EQ(sick.fault_played, FormatNodeFaults(o.node_faults));
    const double slowdown = Ratios(sick, healthy).back();
    // This config spends ~90% of its step in compute: the step slows by nearly 1/s, never more.
    EXPECT_GT(slowdown, 1.0 + 0.8 * (1.0 / s - 1.0)) << "s=" << s;
    EXPECT_LE(slowdown, 1.0 / s + 1e-9) << "s=" << s;
    EXPECT_GT(slowdown, previous);  // a harder throttle is slower
    previous = slowdown;
    // The measured objective falls with it (the mean includes the ramp-in).
    EXPECT_LT(sick.metrics.mfu, healthy.metrics.mfu / (1.0 + 0.6 * (1.0 / s - 1.0)));
    EXPECT_DOUBLE_EQ(sick.metrics.peak_memory_gib, healthy.metrics.peak_memory_gib);
  }
}

TEST(NodeFaultsTest, ThrottlingDriftsUpwardThenHolds) {
  const Workload w = Llama8b();
  SimTrialResult healthy = RunSimulatedTrial(w, Good(), OnNodes({"n0"}, ""), 3);
  SimTrialResult sick = RunSimulatedTrial(w, Good(), OnNodes({"n0"}, "n0=throttle:0.5"), 3);
  std::vector<double> r = Ratios(sick, healthy);
  ASSERT_EQ(r.size(), 10u);      // 100 iterations, one line every 10
  EXPECT_NEAR(r[0], 1.0, 1e-9);  // the first logged interval runs at normal speed
  EXPECT_LT(r[1], r[2]);
  EXPECT_LT(r[2], r[3]);
  EXPECT_GT(r[1], 1.05);
  // Full slowdown 30% of the run after the first interval, flat from then on.
  for (size_t i = 4; i < r.size(); ++i) EXPECT_NEAR(r[i], r[3], 1e-9) << i;
  // TPU: one chip of the slice throttled slows the job the same way.
  const Workload v5e = Llama7bV5e();
  const Config c{{"remat", PV::Enum("full")}};
  SimTrialResult tpu_ok = RunSimulatedTrial(v5e, c, OnNodes({"paratune-tpu-1"}, ""), 0);
  SimTrialResult tpu_sick = RunSimulatedTrial(
      v5e, c, OnNodes({"paratune-tpu-0", "paratune-tpu-1"}, "paratune-tpu-1=throttle:0.5"), 0);
  ASSERT_EQ(tpu_sick.exit_code, 0) << tpu_sick.log;
  EXPECT_GT(Ratios(tpu_sick, tpu_ok).back(), 1.6);
}

TEST(NodeFaultsTest, SlowLinkSlowsOnlyCollectivesAcrossNodes) {
  // One node: NVLink only, the slow NIC is not on any path.
  SimTrialResult one = RunSimulatedTrial(Llama8b(1), Good(), OnNodes({"n0"}, ""), 0);
  SimTrialResult one_slow =
      RunSimulatedTrial(Llama8b(1), Good(), OnNodes({"n0"}, "n0=slow-link:0.2"), 0);
  EXPECT_EQ(one_slow.log, one.log);
  EXPECT_EQ(one_slow.fault_played, "");
  // Two nodes: the data-parallel gradient reduce crosses the slow NIC. The step slows, more for
  // a slower link, and no drift: every interval is slowed the same.
  const Workload w = Llama8b(2);
  SimTrialResult healthy = RunSimulatedTrial(w, Good(), OnNodes({"n0", "n1"}, ""), 0);
  double previous = 1.0;
  for (double s : {0.5, 0.2, 0.05}) {
    SimOptions o = OnNodes({"n0", "n1"}, "n1=slow-link:" + std::to_string(s));
    SimTrialResult sick = RunSimulatedTrial(w, Good(), o, 0);
    ASSERT_EQ(sick.exit_code, 0);
    EXPECT_EQ(sick.fault_played, FormatNodeFaults(o.node_faults));
    std::vector<double> r = Ratios(sick, healthy);
    EXPECT_GT(r.back(), previous) << "s=" << s;
    EXPECT_NEAR(r[1], r.back(), 1e-9);
    previous = r.back();
  }
}

struct FlakyCount {
  int runs = 0, failed = 0, xid = 0, watchdog = 0, spiked = 0;
};

FlakyCount CountFlaky(const Workload& w, const std::string& faults, int runs) {
  FlakyCount n;
  const std::regex xid(
      R"(NVRM: Xid \(PCI:0000:[0-9a-f]{2}:00\): 79, pid=\d+, name=python, GPU has fallen off the bus\.)");
  const std::regex watchdog(
      R"(\[Rank \d+\] Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=\d+, OpType=ALLREDUCE, NumelIn=\d+, NumelOut=\d+, Timeout\(ms\)=600000\) ran for 600000 milliseconds before timing out\.)");
  for (int i = 0; i < runs; ++i) {
    // Trials differ by seed (campaign) and attempt: the draw is not a property of the node alone.
    SimOptions o = OnNodes({"n0"}, faults, 100 + static_cast<uint64_t>(i % 50));
    SimTrialResult r = RunSimulatedTrial(w, Good(), o, i / 50);
    ++n.runs;
    if (r.exit_code != 0) {
      ++n.failed;
      EXPECT_NE(r.fault_played.find(" failed"), std::string::npos);
      if (r.true_failure_category == "NodeFault" && std::regex_search(r.log, xid)) ++n.xid;
      if (r.true_failure_category == "CollectiveTimeout" && std::regex_search(r.log, watchdog)) {
        ++n.watchdog;
      }
      EXPECT_TRUE(r.termination_message.empty());
    } else {
      EXPECT_NE(r.fault_played.find(" spikes"), std::string::npos);
      n.spiked += std::count_if(r.step_times.begin(), r.step_times.end(),
                                [&](double s) { return s > 1.8 * r.step_times.back(); }) > 0;
    }
  }
  return n;
}

TEST(NodeFaultsTest, FlakyNodeFailsAtItsRateWithNodeLevelErrors) {
  const Workload w = Llama8b();
  for (double p : {0.15, 0.5}) {
    FlakyCount n = CountFlaky(w, "n0=flaky:" + std::to_string(p), 400);
    // Binomial(400, p): 4 standard deviations.
    const double sd = std::sqrt(400 * p * (1 - p));
    EXPECT_NEAR(n.failed, 400 * p, 4 * sd) << "p=" << p;
    EXPECT_EQ(n.xid + n.watchdog, n.failed);  // every failure is one of the two real texts
    EXPECT_GT(n.xid, 0);
    EXPECT_GT(n.watchdog, 0);
  }
  FlakyCount always = CountFlaky(w, "n0=flaky:1", 20);
  EXPECT_EQ(always.failed, 20);
}

TEST(NodeFaultsTest, SurvivingAFlakyNodeShowsAFewSpikes) {
  const Workload w = Llama8b();
  int survivors = 0;
  for (int attempt = 0; attempt < 30; ++attempt) {
    SimTrialResult healthy = RunSimulatedTrial(w, Good(), OnNodes({"n0"}, ""), attempt);
    SimTrialResult r = RunSimulatedTrial(w, Good(), OnNodes({"n0"}, "n0=flaky:0.3"), attempt);
    if (r.exit_code != 0) continue;
    ++survivors;
    std::vector<double> ratio = Ratios(r, healthy);
    EXPECT_NEAR(ratio[0], 1.0, 1e-12);  // never the warm-up interval
    int spikes = 0;
    for (double x : ratio) {
      if (std::fabs(x - 1.0) < 1e-12) continue;
      EXPECT_GE(x, 2.0);
      EXPECT_LE(x, 4.0);
      ++spikes;
    }
    EXPECT_GE(spikes, 1);
    EXPECT_LE(spikes, 3);
    EXPECT_LT(r.metrics.mfu, healthy.metrics.mfu);
  }
  EXPECT_GT(survivors, 10);
}

TEST(NodeFaultsTest, FlakyFailureNamesARankOnTheSickNode) {
  const Workload w = Llama8b(2);
  int seen = 0;
  for (int attempt = 0; attempt < 40 && seen < 5; ++attempt) {
    SimTrialResult r = RunSimulatedTrial(w, Good(), OnNodes({"n0", "n1"}, "n1=flaky:1"), attempt);
    ASSERT_EQ(r.exit_code, 1);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(r.log, m, std::regex(R"(\[rank(\d+)\])"))) << r.log;
    const int rank = std::stoi(m[1]);
    EXPECT_GE(rank, 8);  // node 1 holds ranks 8..15
    EXPECT_LT(rank, 16);
    ++seen;
  }
  // TPU: a chip's driver fails on the sick host and the runtime fails the slice, naming the host
  // (worker 1 of the 4 hosts of a v5e 4x4 slice, chips 4..7) and the chip.
  SimTrialResult tpu = RunSimulatedTrial(Llama7bV5e(), {{"remat", PV::Enum("full")}},
                                         OnNodes({"t0", "t1", "t2", "t3"}, "t1=flaky:1"), 0);
  EXPECT_EQ(tpu.true_failure_category, "NodeFault");
  EXPECT_NE(tpu.log.find("Detected failure SLICE_FAILURE_CHIP_DRIVER_ERROR"), std::string::npos);
  EXPECT_TRUE(std::regex_search(
      tpu.log,
      std::regex(R"(detected TPU session error from worker maxtext-1\.headless-svc:8471\. )"
                 R"(The reporting TPU chip locations are:tpu1:pe[01]:[01]\n)")))
      << tpu.log;
}

TEST(NodeFaultsTest, FaultedRunsAreDeterministicAndAttemptsDiffer) {
  const Workload w = Llama8b(2);
  const SimOptions o = OnNodes({"n0", "n1"}, "n0=throttle:0.6;n1=flaky:0.5;n1=slow-link:0.3");
  std::set<std::string> outcomes;
  for (int attempt = 0; attempt < 8; ++attempt) {
    SimTrialResult a = RunSimulatedTrial(w, Good(), o, attempt);
    SimTrialResult b = RunSimulatedTrial(w, Good(), o, attempt);
    EXPECT_EQ(a.log, b.log);
    EXPECT_EQ(a.step_times, b.step_times);
    EXPECT_EQ(a.fault_played, b.fault_played);
    EXPECT_NE(a.fault_played.find("n0=throttle:0.6"), std::string::npos);
    EXPECT_NE(a.fault_played.find("n1=slow-link:0.3"), std::string::npos);
    outcomes.insert(a.fault_played);
  }
  EXPECT_EQ(outcomes.size(), 2u);  // some attempts fail on the flaky node, some survive
}

}  // namespace
}  // namespace paratune
