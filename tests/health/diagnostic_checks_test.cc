#include "agents/health/diagnostic_checks.h"

#include <gtest/gtest.h>

#include <set>

#include "agents/sim/node_checks.h"
#include "agents/sim/node_faults.h"

namespace paratune::health {
namespace {

const nlohmann::json& H100() {
  static const nlohmann::json e = ExpectationsFor("nvidia-h100-80gb");
  return e;
}

CheckResult Judge(const std::string& check, const std::string& output,
                  const nlohmann::json& expected = H100()) {
  auto r = InterpretCheckOutput(check, "paratune-gpu-2", output, expected);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? *r : CheckResult{};
}

TEST(DiagnosticWhitelist, HoldsTheFiveChecksWithFixedCommands) {
  std::vector<std::string> names;
  for (const auto& c : DiagnosticWhitelist()) {
    names.push_back(c.name);
    EXPECT_FALSE(c.command.empty()) << c.name;
    EXPECT_FALSE(c.image.empty()) << c.name;
    EXPECT_TRUE(
        std::set<std::string>({"compute", "memory", "fabric", "hardware"}).count(c.evidence))
        << c.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"gpu-clocks", "ecc-xid", "gemm", "hbm-bandwidth",
                                             "nccl-allreduce"}));
  EXPECT_EQ((*FindCheck("nccl-allreduce"))->pods, 2);
  EXPECT_EQ((*FindCheck("gpu-clocks"))->command[0], "nvidia-smi");
}

TEST(DiagnosticWhitelist, RefusesAnythingElseNamingTheWhitelist) {
  for (const std::string bad : {"gpu-clocks; rm -rf /", "gpu-clocks && curl x|sh", "$(reboot)",
                                "GPU-CLOCKS", " gpu-clocks", "", "nvidia-smi -r"}) {
    auto r = FindCheck(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
    EXPECT_NE(r.status().message().find("gpu-clocks, ecc-xid, gemm"), std::string::npos);
    EXPECT_FALSE(InterpretCheckOutput(bad, "n", "0, 1980 MHz", H100()).ok());
  }
}

TEST(GpuClocks, IdleHealthyGpusPass) {
  const auto r = Judge("gpu-clocks",
                       "0, 345 MHz, 1980 MHz, 0x0000000000000001, Not Active, Not Active, 31, "
                       "69.85 W\n"
                       "1, 1980 MHz, 1980 MHz, 0x0000000000000000, Not Active, Not Active, 44, "
                       "301.20 W\n"
                       "2, 1755 MHz, 1980 MHz, 0x0000000000000004, Not Active, Not Active, 61, "
                       "699.10 W\n");
  EXPECT_TRUE(r.passed) << r.summary;
  EXPECT_EQ(r.measurements["gpus"].size(), 3u);
  EXPECT_EQ(r.measurements["gpus"][2]["powerW"].get<double>(), 699.10);
}

TEST(GpuClocks, HwSlowdownFailsNamingTheGpuAndClock) {
  const auto r = Judge("gpu-clocks",
                       "0, 345 MHz, 1980 MHz, 0x0000000000000001, Not Active, Not Active, 31, "
                       "69.85 W\n"
                       "3, 990 MHz, 1980 MHz, 0x0000000000000008, Active, Not Active, 40, "
                       "112.00 W\n");
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.summary, "GPU 3 SM clock 990 MHz of 1980 MHz; throttle reasons HW Slowdown");
  EXPECT_EQ(r.check, "gpu-clocks");
  EXPECT_EQ(r.node, "paratune-gpu-2");
}

TEST(GpuClocks, LowClockUnderLoadOrThermalBitsFail) {
  // No HW flag, but a busy GPU far below its max clock.
  EXPECT_FALSE(Judge("gpu-clocks",
                     "5, 1200 MHz, 1980 MHz, 0x0000000000000000, Not Active, Not Active, 50, "
                     "400.00 W")
                   .passed);
  // HW thermal slowdown only in the bitmask (its own column is not queried).
  const auto r = Judge("gpu-clocks",
                       "1, 1410 MHz, 1410 MHz, 0x0000000000000040, Not Active, Not Active, 91, "
                       "350.00 W");
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.summary.find("HW Thermal Slowdown"), std::string::npos);
  EXPECT_TRUE(Judge("gpu-clocks", "0, [N/A], [N/A], [N/A], [N/A], [N/A], [N/A], [N/A]").passed);
}

TEST(GpuClocks, DriverFailureIsAFindingNotAParseError) {
  const auto r = Judge("gpu-clocks",
                       "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                       "driver. Make sure that the latest NVIDIA driver is installed and running.");
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.summary.find("NVIDIA-SMI has failed"), std::string::npos);
}

TEST(EccXid, CleanCountersPassAndUnreadableLogIsSaid) {
  const auto r =
      Judge("ecc-xid", "0, 0, No, [N/A]\n1, 0, No, [N/A]\n# kernel log\n# kernel log unreadable\n");
  EXPECT_TRUE(r.passed) << r.summary;
  EXPECT_FALSE(r.measurements["kernelLogReadable"].get<bool>());
  EXPECT_NE(r.summary.find("Xid events unchecked"), std::string::npos);
}

TEST(EccXid, FallenOffTheBusAndEccCountsFail) {
  const auto r = Judge("ecc-xid",
                       "0, 0, No, No\n"
                       "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n"
                       "2, 3, Yes, No\n"
                       "# kernel log\n"
                       "[ 8123.456789] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
                       "name=<unknown>, GPU has fallen off the bus.\n"
                       "[ 8200.000001] NVRM: Xid (PCI:0000:5d:00): 13, pid=991, Graphics "
                       "Exception\n");
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.summary.find("GPU 2 3 uncorrected ECC errors"), std::string::npos) << r.summary;
  EXPECT_NE(r.summary.find("Xid 79 on PCI 0000:3b:00"), std::string::npos) << r.summary;
  EXPECT_EQ(r.measurements["xids"].size(), 2u);
  // Xid 13 alone (an application's exception) is no hardware fault.
  EXPECT_TRUE(Judge("ecc-xid",
                    "0, 0, No, No\n# kernel log\nNVRM: Xid (PCI:0000:5d:00): 13, pid=991, "
                    "Graphics Exception\n")
                  .passed);
}

TEST(Gemm, OneSlowGpuFailsAgainstPeakAndPeers) {
  std::string out = "Using bf16\n";
  for (int g = 0; g < 8; ++g) {
    out += "gpu " + std::to_string(g) + ": gemm bf16 8192x8192x8192 " +
           (g == 3 ? "371.0" : "741.5") + " TFLOPS\n";
  }
  const auto r = Judge("gemm", out);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.summary.rfind("GPU 3 371.0 TFLOPS (38% of 989)", 0), 0u) << r.summary;
  EXPECT_EQ(r.measurements["gpus"].size(), 8u);
  out.replace(out.find("371.0"), 5, "738.2");
  EXPECT_TRUE(Judge("gemm", out).passed);
  // Without a catalog peak the GPUs are compared with each other only.
  EXPECT_TRUE(Judge("gemm", "gpu 0: gemm bf16 8192x8192x8192 200.0 TFLOPS", {}).passed);
}

TEST(HbmBandwidth, JudgedAgainstTheCatalogBandwidth) {
  EXPECT_TRUE(Judge("hbm-bandwidth", "gpu 0: hbm copy 4096 MiB 2950.1 GB/s\n").passed);
  const auto r = Judge("hbm-bandwidth", "gpu 0: hbm copy 4096 MiB 1500.0 GB/s\n");
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.summary.find("of 3350"), std::string::npos) << r.summary;
}

TEST(Gemm, ACrashedScriptIsAFailedCheck) {
  const auto r = Judge("gemm",
                       "Traceback (most recent call last):\n  File \"<string>\", line 5\n"
                       "RuntimeError: CUDA error: uncorrectable ECC error encountered\n");
  EXPECT_FALSE(r.passed);
  EXPECT_NE(r.summary.find("uncorrectable ECC"), std::string::npos);
}

const char* kNcclTwoNodes =
    R"(# nThread 1 nGpus 1 minBytes 536870912 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  41020 on paratune-gpu-2 device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  8 Group  0 Pid  39117 on paratune-gpu-0 device  0 [0x18] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
   536870912     134217728     float     sum      -1   3001.2  178.89  335.41      0   2998.7  179.03  335.69      0
  1073741824     268435456     float     sum      -1   5874.3  182.79  342.73      0   5869.9  182.92  342.98      0
  8589934592    2147483648     float     sum      -1    46120  186.25  349.22      0    46101  186.33  349.36      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 342.57
#
)";

TEST(NcclAllReduce, HealthyLinkPassesAndHostsAreRecorded) {
  const auto r = Judge("nccl-allreduce", kNcclTwoNodes);
  EXPECT_TRUE(r.passed) << r.summary;
  EXPECT_DOUBLE_EQ(r.measurements["busBandwidthGBps"].get<double>(), 349.22);
  EXPECT_DOUBLE_EQ(r.measurements["avgBusBandwidthGBps"].get<double>(), 342.57);
  EXPECT_EQ(r.measurements["hosts"], nlohmann::json({"paratune-gpu-0", "paratune-gpu-2"}));
}

TEST(NcclAllReduce, SlowLinkAndWrongValuesFail) {
  std::string slow = kNcclTwoNodes;
  slow.replace(slow.find("349.22"), 6, "104.80");
  const auto r = Judge("nccl-allreduce", slow);
  EXPECT_FALSE(r.passed);
  EXPECT_EQ(r.summary.rfind("all-reduce bus bandwidth 104.8 GB/s (29% of the expected 360)", 0), 0u)
      << r.summary;
  std::string wrong = kNcclTwoNodes;
  wrong.replace(wrong.find("349.22      0"), 13, "349.22     12");
  EXPECT_FALSE(Judge("nccl-allreduce", wrong).passed);
  // The Avg line alone (a trimmed log) is still judged.
  EXPECT_FALSE(Judge("nccl-allreduce", "# Avg bus bandwidth    : 61.20 \n").passed);
  const auto failed = Judge("nccl-allreduce",
                            "paratune-gpu-2: Test NCCL failure all_reduce.cu:1005 'remote process "
                            "exited or there was a network error'\n");
  EXPECT_FALSE(failed.passed);
}

TEST(InterpretCheckOutput, GarbageGivesAClearErrorNamingCheckAndLine) {
  for (const auto& c : DiagnosticWhitelist()) {
    auto r = InterpretCheckOutput(c.name, "n", "hello world\n\x01\x02 garbage", H100());
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(r.status().message().rfind(c.name + ":", 0), 0u) << r.status().message();
    EXPECT_FALSE(InterpretCheckOutput(c.name, "n", "", H100()).ok()) << c.name;
  }
  auto bad = InterpretCheckOutput("gpu-clocks", "n", "0, 1980 MHz, 1980 MHz\n", H100());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("output line 1"), std::string::npos);
  EXPECT_NE(bad.status().message().find("got 3"), std::string::npos);
  bad = InterpretCheckOutput("gemm", "n", "gpu 0: gemm bf16 lots TFLOPS\n", H100());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("expected \"gpu N: gemm"), std::string::npos);
  bad = InterpretCheckOutput("nccl-allreduce", "n", "1024 x y\n", H100());
  EXPECT_FALSE(bad.ok());
}

// ---- the simulated node's output, judged by the same parsers --------------------------------

CheckResult JudgeSimulated(const std::string& check, const std::string& faults_text,
                           uint64_t seed = 7) {
  auto faults = ParseNodeFaults(faults_text);
  EXPECT_TRUE(faults.ok());
  const std::string out =
      SimulatedCheckOutput(check, "paratune-gpu-2", *faults, {"paratune-gpu-2", "paratune-gpu-0"},
                           "nvidia-h100-80gb", seed);
  return Judge(check, out);
}

TEST(SimulatedChecks, HealthyNodesPassEveryCheckAcrossSeeds) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    for (const auto& c : DiagnosticWhitelist()) {
      const auto r = JudgeSimulated(c.name, "paratune-gpu-5=throttle:0.5", seed);
      EXPECT_TRUE(r.passed) << c.name << " seed " << seed << ": " << r.summary;
    }
  }
}

TEST(SimulatedChecks, ThrottleIsFoundByClocksAndGemmOnly) {
  const std::string f = "paratune-gpu-2=throttle:0.5";
  const auto clocks = JudgeSimulated("gpu-clocks", f);
  EXPECT_FALSE(clocks.passed);
  EXPECT_NE(clocks.summary.find("SM clock 990 MHz of 1980 MHz; throttle reasons HW Slowdown"),
            std::string::npos)
      << clocks.summary;
  EXPECT_FALSE(JudgeSimulated("gemm", f).passed);
  EXPECT_TRUE(JudgeSimulated("nccl-allreduce", f).passed);
  EXPECT_TRUE(JudgeSimulated("ecc-xid", f).passed);
}

TEST(SimulatedChecks, SlowLinkIsFoundByTheAllReduceFromEitherSide) {
  const auto r = JudgeSimulated("nccl-allreduce", "paratune-gpu-2=slow-link:0.3");
  EXPECT_FALSE(r.passed);
  EXPECT_NEAR(r.measurements["busBandwidthGBps"].get<double>(), 0.3 * 342, 10);
  EXPECT_FALSE(JudgeSimulated("nccl-allreduce", "paratune-gpu-0=slow-link:0.3").passed);
  EXPECT_TRUE(JudgeSimulated("gpu-clocks", "paratune-gpu-2=slow-link:0.3").passed);
}

TEST(SimulatedChecks, FlakyNodeShowsAHardwareXid) {
  int xid79 = 0;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    const auto r = JudgeSimulated("ecc-xid", "paratune-gpu-2=flaky:0.4", seed);
    EXPECT_FALSE(r.passed) << r.summary;
    xid79 += r.summary.find("Xid 79") != std::string::npos;
  }
  EXPECT_GT(xid79, 0);
  EXPECT_LT(xid79, 10);
}

TEST(ChecksFor, MapsEvidenceToTheChecksThatTestIt) {
  EXPECT_EQ(ChecksFor({"CollectiveTimeout"}),
            (std::vector<std::string>{"ecc-xid", "nccl-allreduce"}));
  EXPECT_EQ(ChecksFor({"StepTimeDrift", "NodeFault"}),
            (std::vector<std::string>{"gpu-clocks", "ecc-xid", "gemm"}));
  EXPECT_EQ(ChecksFor({}), (std::vector<std::string>{"gpu-clocks", "ecc-xid"}));
  EXPECT_TRUE(ChecksFor({"Nonsense"}).empty());
}

TEST(ExpectationsFor, ComesFromTheCatalog) {
  const auto e = ExpectationsFor("nvidia-h100-mega-80gb");
  EXPECT_EQ(e["peakTflops"].get<double>(), 989);
  EXPECT_EQ(e["hbmGBps"].get<double>(), 3350);
  EXPECT_EQ(e["busBandwidthGBps"].get<double>(), 360);
  EXPECT_FALSE(ExpectationsFor("tpu-v5e").contains("peakTflops"));
  EXPECT_TRUE(ExpectationsFor("unknown").contains("minGemmFraction"));
}

}  // namespace
}  // namespace paratune::health
