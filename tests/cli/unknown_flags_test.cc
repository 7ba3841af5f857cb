// The command line refuses what it does not understand (issue 18): an unknown flag or a flag
// without its value exits 2 naming the flag, with the command's usage, and does nothing else.
// These run the built `paratune` binary as a user would.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace {

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

Outcome RunCli(const std::string& args) {
  std::string cmd = std::string(PARATUNE_BINARY_DIR) + "/bin/paratune " + args + " 2>&1";
  Outcome out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.output.append(buf.data(), n);
  int status = pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

const std::string kCampaign =
    std::string(PARATUNE_SOURCE_DIR) + "/manifests/samples/llama3-8b-h100x8.yaml";

TEST(UnknownFlagsTest, EstimateRefusesAFlagThatLooksLikeAConfigKey) {
  // `--tp 4` is not how a key is set (`--set tp=4` is); it used to be ignored silently.
  Outcome r = RunCli("estimate -f " + kCampaign + " --tp 4");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("unknown flag --tp"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("usage: paratune estimate"), std::string::npos) << r.output;
}

TEST(UnknownFlagsTest, EveryCommandRefusesAnUnknownFlag) {
  for (const char* command : {"estimate", "simulate", "calibrate", "propose", "diagnose", "report",
                              "trial-sim", "node-check"}) {
    Outcome r = RunCli(std::string(command) + " --bogus 3");
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.output;
    EXPECT_NE(r.output.find("--bogus"), std::string::npos) << command << ": " << r.output;
  }
}

TEST(UnknownFlagsTest, AMissingValueNamesTheFlag) {
  Outcome r = RunCli("simulate -f " + kCampaign + " --seed");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--seed: needs a value"), std::string::npos) << r.output;
}

TEST(UnknownFlagsTest, DeclaredFlagsStillWork) {
  Outcome r = RunCli("estimate -f " + kCampaign + " --set mbs=1 -o json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"peakMemoryGiB\""), std::string::npos) << r.output;
}

}  // namespace
