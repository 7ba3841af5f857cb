// `paratune collect` (issue 35, contract section 13), run as a user would: it accepts every
// excerpt of the real-output corpus (exit 0, or exit 1 with the documented NoMetrics JSON), it
// finds every sample campaign's objective in what trial-sim prints for the framework's default
// logging, and it refuses bad input naming the flag.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;

struct Outcome {
  int exit_code = -1;
  std::string output;
};

Outcome Shell(const std::string& cmd) {
  Outcome out;
  FILE* pipe = popen((cmd + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.output.append(buf.data(), n);
  const int status = pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

const std::string kBin = std::string(PARATUNE_BINARY_DIR) + "/bin/paratune";
const std::string kCampaign =
    std::string(PARATUNE_SOURCE_DIR) + "/manifests/samples/llama3-8b-h100x8.yaml";

std::string CollectorOf(const fs::path& yaml) {
  std::ifstream in(yaml);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("collector:", 0) == 0) {
      std::string v = line.substr(10);
      v.erase(0, v.find_first_not_of(" \""));
      v.erase(v.find_last_not_of(" \"\r") + 1);
      return v;
    }
  }
  return "";
}

TEST(CollectCommandTest, AcceptsEveryCorpusExcerpt) {
  const fs::path root = fs::path(PARATUNE_SOURCE_DIR) / "tests/collectors/corpus";
  int seen = 0;
  for (const char* half : {"dev", "heldout"}) {
    if (!fs::is_directory(root / half)) continue;
    for (const auto& e : fs::directory_iterator(root / half)) {
      if (e.path().extension() != ".log") continue;
      fs::path yaml = e.path();
      yaml.replace_extension(".yaml");
      const std::string collector = CollectorOf(yaml);
      ASSERT_FALSE(collector.empty()) << yaml;
      Outcome r = Shell(kBin + " collect -o json --log '" + e.path().string() + "' -f " +
                        kCampaign + " --collector " + collector);
      ++seen;
      if (r.exit_code == 1) {
        EXPECT_NE(r.output.find("\"NoMetrics\""), std::string::npos) << e.path() << r.output;
      } else {
        EXPECT_EQ(r.exit_code, 0) << e.path() << "\n" << r.output;
        EXPECT_NE(r.output.find("\"metrics\""), std::string::npos) << e.path() << r.output;
      }
    }
  }
  if (seen == 0) GTEST_SKIP() << "no corpus under " << root;
}

// Every sample campaign through trial-sim (the framework's default logging: Megatron-LM without
// --log-throughput, torchtitan on every rank, MaxText's dispatch step): the objective is present,
// read or derived, and no anomaly is raised on the healthy run.
TEST(CollectCommandTest, EverySampleCampaignsObjectiveFromDefaultLogging) {
  const fs::path samples = fs::path(PARATUNE_SOURCE_DIR) / "manifests/samples";
  const fs::path tmp = fs::temp_directory_path() / ("collect_test_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  int seen = 0;
  for (const auto& e : fs::directory_iterator(samples)) {
    std::ifstream in(e.path());
    std::stringstream text;
    text << in.rdbuf();
    if (text.str().find("kind: TuningCampaign") == std::string::npos) continue;
    const std::string log = (tmp / (e.path().stem().string() + ".log")).string();
    // The baseline (or defaults); a sample without a baseline may not fit at tp 1.
    Outcome sim;
    for (const char* sets : {"", " --set tp=4", " --set tp=8"}) {
      sim = Shell(kBin + " trial-sim --fast --seed 1 --fault-rate 0 -f " + e.path().string() +
                  sets + " > " + log);
      if (sim.exit_code == 0) break;
    }
    ASSERT_EQ(sim.exit_code, 0) << e.path() << "\n" << sim.output;
    Outcome r = Shell(kBin + " collect -o json --log " + log + " -f " + e.path().string());
    ++seen;
    EXPECT_EQ(r.exit_code, 0) << e.path() << "\n" << r.output;
    EXPECT_EQ(r.output.find("ObjectiveMissing"), std::string::npos) << e.path() << r.output;
    EXPECT_NE(r.output.find("\"mfu\""), std::string::npos) << e.path() << r.output;
    EXPECT_NE(r.output.find("\"anomalies\": []"), std::string::npos) << e.path() << r.output;
  }
  fs::remove_all(tmp);
  EXPECT_GE(seen, 5);
}

TEST(CollectCommandTest, BadInputNamesTheFlag) {
  Outcome r = Shell(kBin + " collect --log /dev/null -f " + kCampaign + " --collector nemo");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--collector"), std::string::npos) << r.output;
  r = Shell(kBin + " collect -f " + kCampaign);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--log"), std::string::npos) << r.output;
  r = Shell(kBin + " collect --log /nonexistent/x.log -f " + kCampaign);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = Shell(kBin + " collect -o json --log /dev/null -f " + kCampaign);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("\"error\": \"NoMetrics\""), std::string::npos) << r.output;
}

}  // namespace
