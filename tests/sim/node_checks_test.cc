#include "agents/sim/node_checks.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <sstream>

namespace paratune {
namespace {

std::vector<std::string> LinesOf(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

const std::vector<NodeFault> kFaults = {{"gpu-a", NodeFaultKind::kThrottle, 0.5},
                                        {"gpu-b", NodeFaultKind::kSlowLink, 0.25},
                                        {"gpu-c", NodeFaultKind::kFlaky, 1.0}};

std::string Out(const std::string& check, const std::string& node, uint64_t seed = 1,
                std::vector<std::string> peers = {}) {
  return SimulatedCheckOutput(check, node, kFaults, peers, "nvidia-h100-80gb", seed);
}

TEST(SimulatedCheckOutput, GpuClocksIsNvidiaSmiCsvWithOneThrottledGpu) {
  const std::regex row(
      R"(^\d, \d+ MHz, 1980 MHz, 0x[0-9a-f]{16}, (Active|Not Active), (Active|Not Active), \d+, )"
      R"(\d+\.\d\d W$)");
  int throttled = 0;
  for (const auto& l : LinesOf(Out("gpu-clocks", "gpu-a"))) {
    EXPECT_TRUE(std::regex_match(l, row)) << l;
    if (l.find("990 MHz, 1980 MHz, 0x0000000000000008, Active") != std::string::npos) ++throttled;
  }
  EXPECT_EQ(throttled, 1);
  EXPECT_EQ(Out("gpu-clocks", "healthy").find(", Active,"), std::string::npos);
  EXPECT_EQ(LinesOf(Out("gpu-clocks", "healthy")).size(), 8u);
}

TEST(SimulatedCheckOutput, GemmSlowsOnlyTheThrottledGpu) {
  const std::regex row(R"(^gpu (\d): gemm bf16 8192x8192x8192 (\d+\.\d) TFLOPS$)");
  std::vector<double> tflops;
  for (const auto& l : LinesOf(Out("gemm", "gpu-a"))) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(l, m, row)) << l;
    tflops.push_back(std::stod(m[2]));
  }
  ASSERT_EQ(tflops.size(), 8u);
  std::sort(tflops.begin(), tflops.end());
  EXPECT_NEAR(tflops[0] / tflops[4], 0.5, 0.05);
  EXPECT_GT(tflops[1], 600);  // the healthy ones near 0.75 of 989
  EXPECT_LT(tflops[7], 800);
}

TEST(SimulatedCheckOutput, AllReduceIsAnNcclTestsTableScaledBySlowLinkOnEitherSide) {
  auto avg = [](const std::string& out) {
    std::smatch m;
    const std::regex line(R"(# Avg bus bandwidth    : (\d+\.\d+))");
    EXPECT_TRUE(std::regex_search(out, m, line)) << out;
    return m.empty() ? 0.0 : std::stod(m[1]);
  };
  const std::string healthy = Out("nccl-allreduce", "gpu-x", 1, {"gpu-x", "gpu-y"});
  EXPECT_NE(healthy.find("#  Rank 15 Group  0 Pid"), std::string::npos);
  EXPECT_NE(healthy.find("on      gpu-y device  7"), std::string::npos);
  const std::string slow = Out("nccl-allreduce", "gpu-x", 1, {"gpu-x", "gpu-b"});
  EXPECT_NEAR(avg(slow) / avg(healthy), 0.25, 0.02);
  EXPECT_NEAR(avg(healthy), 0.95 * 360 * 0.97, 15);
  const std::regex row(
      R"(^ +\d+ +\d+ +float +sum +-1 +\d+ +[\d.]+ +[\d.]+ +0 +\d+ +[\d.]+ +[\d.]+ +0$)");
  int rows = 0;
  for (const auto& l : LinesOf(healthy)) rows += std::regex_match(l, row);
  EXPECT_EQ(rows, 5);
  // A flaky node at severity 1 always breaks the collective.
  EXPECT_NE(Out("nccl-allreduce", "gpu-c", 1, {"gpu-c", "gpu-y"}).find("Test NCCL failure"),
            std::string::npos);
}

TEST(SimulatedCheckOutput, FlakyNodeLogsAnXidHealthyNodeNone) {
  const std::string flaky = Out("ecc-xid", "gpu-c");
  EXPECT_NE(flaky.find("NVRM: Xid (PCI:0000:"), std::string::npos) << flaky;
  EXPECT_EQ(Out("ecc-xid", "gpu-a").find("Xid"), std::string::npos);
  EXPECT_NE(Out("ecc-xid", "gpu-a").find("0, 0, No, [N/A]"), std::string::npos);
}

TEST(SimulatedCheckOutput, DeterministicPerSeedAndEmptyForUnknownChecks) {
  EXPECT_EQ(Out("hbm-bandwidth", "n", 5), Out("hbm-bandwidth", "n", 5));
  EXPECT_NE(Out("hbm-bandwidth", "n", 5), Out("hbm-bandwidth", "n", 6));
  EXPECT_EQ(Out("gpu-clocks; rm -rf /", "n"), "");
  EXPECT_NE(SimulatedCheckOutput("gpu-clocks", "n", {}, {}, "nvidia-a100-80gb", 1).find("1410 MHz"),
            std::string::npos);
}

// ---- the `paratune node-check` command ------------------------------------------------------

std::pair<int, std::string> Shell(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return {-1, ""};
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  const int status = ::pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string Binary() { return std::string(PARATUNE_BINARY_DIR) + "/bin/paratune"; }

TEST(NodeCheckCommand, PrintsTheNodesOutputFromTheEnvironment) {
  ASSERT_TRUE(std::filesystem::exists(Binary()))
      << Binary() << " is missing (sim_test depends on it)";
  const auto [rc, out] = Shell(
      "env PARATUNE_NODE_NAME=gpu-a PARATUNE_SIM_NODE_FAULTS='gpu-a=throttle:0.5' "
      "PARATUNE_SIM_SEED=4 " +
      Binary() + " node-check gpu-clocks");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out,
            SimulatedCheckOutput("gpu-clocks", "gpu-a", {{"gpu-a", NodeFaultKind::kThrottle, 0.5}},
                                 {}, "nvidia-h100-80gb", 4));
  const auto [rc2, out2] = Shell("env PARATUNE_SIM_JOB_NODES=gpu-x,gpu-b " + Binary() +
                                 " node-check nccl-allreduce --node gpu-x --node-faults "
                                 "'gpu-b=slow-link:0.25' --seed 1");
  EXPECT_EQ(rc2, 0);
  EXPECT_EQ(out2, Out("nccl-allreduce", "gpu-x", 1, {"gpu-x", "gpu-b"}));
}

TEST(NodeCheckCommand, UnknownCheckExitsTwoNamingTheWhitelist) {
  ASSERT_TRUE(std::filesystem::exists(Binary()))
      << Binary() << " is missing (sim_test depends on it)";
  const auto [rc, out] = Shell(Binary() + " node-check 'gpu-clocks; rm -rf /' --node n");
  EXPECT_EQ(rc, 2);
  EXPECT_NE(out.find("gpu-clocks, ecc-xid, gemm, hbm-bandwidth, nccl-allreduce"), std::string::npos)
      << out;
  EXPECT_EQ(Shell(Binary() + " node-check gemm").first, 2);  // no node
  EXPECT_EQ(Shell(Binary() + " node-check gemm --node n --node-faults 'n=hot:2'").first, 2);
}

}  // namespace
}  // namespace paratune
