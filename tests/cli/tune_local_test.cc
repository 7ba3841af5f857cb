// `paratune tune --local` (issue 37, contract section 14) as a user runs it: the sample
// campaigns end to end on trial-sim, Ctrl-C and resume, and a trial past its timeout ended
// with its whole process group. These run the built `paratune` binary.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>

namespace {

namespace fs = std::filesystem;

const std::string kBinary = std::string(PARATUNE_BINARY_DIR) + "/bin/paratune";
const std::string kSamples = std::string(PARATUNE_SOURCE_DIR) + "/manifests/samples/";

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout
};

Outcome RunParatune(const std::string& args) {
  const std::string cmd = "PARATUNE_SIM_SECONDS_PER_LINE=0 " + kBinary + " " + args;
  Outcome out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.output.append(buf.data(), n);
  const int status = pclose(pipe);
  out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path FreshDir(const std::string& name) {
  fs::path dir =
      fs::temp_directory_path() / ("paratune-tune-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// True once `pid` is gone or a zombie waiting for init (its process group was killed).
bool Dead(pid_t pid) {
  for (int i = 0; i < 40; ++i) {
    const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
    const size_t close = stat.rfind(')');
    if (stat.empty() || (close != std::string::npos && stat.substr(close + 2, 1) == "Z")) {
      return true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return false;
}

// The HF sample with trial-sim as its container (what hack/gpu/real-campaign.sh --mode sim runs).
fs::path SimulatedHfSample(const fs::path& dir) {
  std::string yaml = ReadFile(kSamples + "hf-trainer-qwen2.5-0.5b-h100x1.yaml");
  auto replace = [&yaml](const std::string& from, const std::string& to) {
    const size_t at = yaml.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) yaml.replace(at, from.size(), to);
  };
  replace("[python3, workloads/hf-llama/train.py]", "[paratune, trial-sim]");
  replace("args: [\"--steps\", \"4\"]", "args: []");
  replace("nvidia.com/gpu: \"1\"", "nvidia.com/gpu: \"0\"");
  const fs::path out = dir / "hf-sim.yaml";
  std::ofstream(out) << yaml;
  return out;
}

// A small campaign whose one container runs `script` under /bin/sh -c.
// `script` is a container arg: Kubernetes expands $(VAR) in it and turns $$ into $.
fs::path ShellCampaign(const fs::path& dir, const std::string& script, const std::string& budget,
                       const std::string& collector = "json", int gpus = 0) {
  std::ofstream out(dir / "shell.yaml");
  out << "apiVersion: tuning.paratune.dev/v1alpha1\nkind: TuningCampaign\n"
         "metadata: {name: shell}\nspec:\n"
         "  model: {preset: llama3-8b}\n"
         "  training: {framework: megatron-lm, seqLength: 8192, globalBatchSize: 512}\n"
         "  hardware: {accelerator: nvidia-h100-80gb, nodes: 1, devicesPerNode: 8}\n"
         "  searchSpace:\n    parameters:\n"
         "    - {name: tp, values: [1, 2, 4, 8]}\n    - {name: mbs, values: [1, 2]}\n"
         "  objective: {metric: mfu}\n"
         "  budget: "
      << budget
      << "\n"
         "  metrics: {collector: "
      << collector
      << "}\n"
         "  trialTemplate:\n    spec:\n      template:\n        spec:\n          containers:\n"
         "          - name: c\n            command: [/bin/sh, -c]\n"
         "            args: ['"
      << script
      << "']\n"
         "            resources: {limits: {nvidia.com/gpu: \""
      << gpus << "\"}}\n";
  return dir / "shell.yaml";
}

TEST(TuneLocalTest, RunsTheSimulatedSampleEndToEnd) {
  const fs::path dir = FreshDir("sample");
  Outcome r = RunParatune("tune -f " + kSamples + "simulated-llama3-8b-anywhere.yaml --local " +
                          "--devices none --max-trials 4 --out " + dir.string() + " -o json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["trials"].size(), 4u) << r.output;
  EXPECT_EQ(j["stopReason"], "BudgetExhausted");
  EXPECT_TRUE(j["best"].is_object()) << "no trial's log gave metrics through the collector";
  EXPECT_EQ(j["local"]["parallelTrials"], 2);  // spec.budget.parallelTrials, no GPU needed
  for (const auto& t : j["trials"]) {
    const fs::path log = dir / "trials" / (t["name"].get<std::string>() + ".log");
    EXPECT_TRUE(fs::exists(log)) << log;
    EXPECT_FALSE(ReadFile(log).empty()) << log;
  }
  EXPECT_TRUE(fs::exists(dir / "pool.json"));

  // Run again: everything is finished, nothing runs again.
  const auto before =
      fs::last_write_time(dir / "trials" / (j["trials"][0]["name"].get<std::string>() + ".log"));
  Outcome again = RunParatune("tune -f " + kSamples + "simulated-llama3-8b-anywhere.yaml --local " +
                              "--devices none --max-trials 4 --out " + dir.string() + " -o json");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  const auto k = nlohmann::json::parse(again.output);
  EXPECT_EQ(k["trials"].size(), 4u);
  EXPECT_EQ(k["local"]["resumedFinishedTrials"], 4);
  EXPECT_EQ(k["best"]["trialName"], j["best"]["trialName"]);
  EXPECT_EQ(before, fs::last_write_time(dir / "trials" /
                                        (j["trials"][0]["name"].get<std::string>() + ".log")));
}

TEST(TuneLocalTest, RunsTheHuggingFaceSampleOnTrialSim) {
  const fs::path dir = FreshDir("hf");
  Outcome r = RunParatune("tune -f " + SimulatedHfSample(dir).string() +
                          " --local --devices none --out " + (dir / "out").string() + " -o json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_GE(j["trials"].size(), 1u);
  EXPECT_LE(j["trials"].size(), 4u);  // spec.budget.maxTrials
  ASSERT_TRUE(j["best"].is_object()) << r.output;
  EXPECT_GT(j["best"]["metrics"]["tokensPerSecondPerDevice"].get<double>(), 0);
  EXPECT_EQ(j["baseline"]["config"], nlohmann::json({{"mbs", 1}, {"recompute", "full"}}));
}

// A campaign that trains for real: workloads/hf-llama/train.py (the HF sample's script) under
// Debian's python3-torch on this machine's CPU, with the campaign's model at the script's CPU
// size, so every trial is a real PyTorch training run whose log the hf-trainer collector reads.
// python3-torch is installed by `make deps` (hack/install-deps.sh); without it this fails.
TEST(TuneLocalTest, TrainsARealModelOnTheCpuWithTorch) {
  const std::string python = "/usr/bin/python3";
  ASSERT_EQ(std::system((python + " -c 'import torch' 2>/dev/null").c_str()), 0)
      << python << " cannot import torch: Debian's python3-torch is missing (make deps installs "
      << "it; this test trains with it)";
  const fs::path dir = FreshDir("torch");
  std::string yaml = ReadFile(kSamples + "hf-trainer-qwen2.5-0.5b-h100x1.yaml");
  auto replace = [&yaml](const std::string& from, const std::string& to) {
    const size_t at = yaml.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    yaml.replace(at, from.size(), to);
  };
  // train.py's CPU size (its --tiny shape), given as the campaign's model so that the derived
  // metrics use the FLOPs of the model that really runs.
  replace("numLayers: 24", "numLayers: 2");
  replace("hiddenSize: 896", "hiddenSize: 64");
  replace("ffnHiddenSize: 4864", "ffnHiddenSize: 128");
  replace("numAttentionHeads: 14", "numAttentionHeads: 4");
  replace("numQueryGroups: 2", "numQueryGroups: 2");
  replace("vocabSize: 151936", "vocabSize: 512");
  replace("seqLength: 4096", "seqLength: 128");
  replace("globalBatchSize: 16", "globalBatchSize: 8");
  replace("maxTrials: 4", "maxTrials: 2");  // the baseline and one proposal: each imports torch
  // One intra-op thread: the model is too small for more to help, and the suite runs two tests
  // at a time on two cores.
  replace("[python3, workloads/hf-llama/train.py]", "[env, OMP_NUM_THREADS=1, " + python + ", " +
                                                        PARATUNE_SOURCE_DIR +
                                                        "/workloads/hf-llama/train.py]");
  replace("args: [\"--steps\", \"4\"]", "args: [\"--steps\", \"2\"]");  // one warm-up, one measured
  replace("nvidia.com/gpu: \"1\"", "nvidia.com/gpu: \"0\"");
  std::ofstream(dir / "hf-cpu.yaml") << yaml;
  Outcome r = RunParatune("tune -f " + (dir / "hf-cpu.yaml").string() +
                          " --local --devices none --out " + (dir / "out").string() + " -o json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["trials"].size(), 2u) << r.output;
  ASSERT_TRUE(j["best"].is_object()) << r.output;
  const auto& m = j["best"]["metrics"];
  EXPECT_GT(m["stepTimeSeconds"].get<double>(), 0);
  EXPECT_GT(m["tokensPerSecondPerDevice"].get<double>(), 0);
  EXPECT_GT(m["peakMemoryGiB"].get<double>(), 0);
  // tokens/s is global batch x sequence / step time (the script's own timer, read from its log),
  // both from the one measured step: their product is 8 x 128 up to the log's rounding.
  EXPECT_NEAR(m["tokensPerSecondPerDevice"].get<double>() * m["stepTimeSeconds"].get<double>(),
              8 * 128, 8 * 128 * 0.02);
  for (const auto& t : j["trials"]) {
    const std::string log =
        ReadFile(dir / "out" / "trials" / (t["name"].get<std::string>() + ".log"));
    // A real PyTorch run: the script names the model it built and prints the Trainer's losses.
    EXPECT_NE(log.find("parameters"), std::string::npos) << log;
    EXPECT_NE(log.find("torch"), std::string::npos) << log;
    EXPECT_NE(log.find("'loss': "), std::string::npos) << log;
    EXPECT_NE(log.find("train_runtime"), std::string::npos) << log;
  }
}

TEST(TuneLocalTest, RefusesWhatCannotRunHere) {
  Outcome r = RunParatune("tune -f " + kSamples + "simulated-llama3-8b-anywhere.yaml -o json 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--local"), std::string::npos) << r.output;
  const fs::path dir = FreshDir("refuse");
  r = RunParatune("tune -f " + kSamples +
                  "hf-trainer-qwen2.5-0.5b-h100x1.yaml --local --devices none " + "--out " +
                  dir.string() + " 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("needs 1 GPU(s); this machine has 0"), std::string::npos) << r.output;
  r = RunParatune("tune -f " + kSamples +
                  "gpu-megatron-llama3-8b-h100x16.yaml --local --devices 8 " + "--out " +
                  dir.string() + " 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("spec.hardware.nodes"), std::string::npos) << r.output;
  std::string yaml = ReadFile(ShellCampaign(dir, "true", "{maxTrials: 1}"));
  yaml.replace(yaml.find("/bin/sh"), 7, "no-such-trainer");
  std::ofstream(dir / "missing.yaml") << yaml;
  r = RunParatune("tune -f " + (dir / "missing.yaml").string() + " --local --devices none " +
                  "--out " + (dir / "m").string() + " 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("\"no-such-trainer\" is not an executable here"), std::string::npos)
      << r.output;
  r = RunParatune("tune --bogus 3 2>&1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--bogus"), std::string::npos) << r.output;
}

TEST(TuneLocalTest, GivesEachTrialItsEnvironment) {
  const fs::path dir = FreshDir("env");
  const fs::path campaign = ShellCampaign(
      dir,
      "echo tp=$(PARATUNE_TP) trial=$PARATUNE_TRIAL master=$MASTER_ADDR:$MASTER_PORT "
      "nnodes=$NNODES rank=$NODE_RANK cuda=[$CUDA_VISIBLE_DEVICES]; "
      "echo {\\\"step\\\": 1, \\\"mfu\\\": 0.3}; echo {\\\"step\\\": 2, \\\"mfu\\\": 0.3}",
      "{maxTrials: 1, parallelTrials: 1}");
  Outcome r = RunParatune("tune -f " + campaign.string() + " --local --devices none --out " +
                          (dir / "out").string() + " -o json 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["trials"].size(), 1u);
  const auto& t = j["trials"][0];
  const std::string log =
      ReadFile(dir / "out" / "trials" / (t["name"].get<std::string>() + ".log"));
  EXPECT_NE(log.find("tp=" + std::to_string(t["config"]["tp"].get<int>()) +
                     " trial=" + t["name"].get<std::string>() + " master=127.0.0.1:"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("nnodes=1 rank=0 cuda=[]"), std::string::npos) << log;
}

TEST(TuneLocalTest, GpuRequestsBecomeDisjointSlicesRunningSideBySide) {
  const fs::path dir = FreshDir("gpus");
  // Two GPUs per trial on four: two trials at once, on 0,1 and 2,3. Each trial notes its start
  // and end in a shared file.
  const std::string ledger = (dir / "ledger.txt").string();
  const fs::path campaign = ShellCampaign(
      dir,
      "echo start $PARATUNE_TRIAL $CUDA_VISIBLE_DEVICES >> " + ledger +
          "; echo cuda=[$CUDA_VISIBLE_DEVICES] nproc=$NPROC_PER_NODE; sleep 1; "
          "echo {\\\"step\\\": 1, \\\"mfu\\\": 0.3}; echo {\\\"step\\\": 2, \\\"mfu\\\": 0.3}; "
          "echo end $PARATUNE_TRIAL >> " +
          ledger,
      "{maxTrials: 4, parallelTrials: 3}", "json", 2);
  Outcome r = RunParatune("tune -f " + campaign.string() + " --local --devices 4 --out " +
                          (dir / "out").string() + " -o json 2>&1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["local"]["parallelTrials"], 2);  // min(parallelTrials 3, 4 GPUs / 2)
  EXPECT_EQ(j["local"]["gpusPerTrial"], 2);
  ASSERT_EQ(j["trials"].size(), 4u);
  for (const auto& t : j["trials"]) {
    const std::string log =
        ReadFile(dir / "out" / "trials" / (t["name"].get<std::string>() + ".log"));
    EXPECT_TRUE(log.find("cuda=[0,1] nproc=2") != std::string::npos ||
                log.find("cuda=[2,3] nproc=2") != std::string::npos)
        << log;
  }
  // Replaying the ledger: never more than two trials at once, never one slice twice.
  std::istringstream in(ReadFile(ledger));
  std::map<std::string, std::string> running;  // trial -> slice
  size_t most = 0;
  for (std::string what, trial, slice; in >> what >> trial;) {
    if (what == "start") {
      in >> slice;
      for (const auto& [other, used] : running) EXPECT_NE(used, slice) << trial << " " << other;
      running[trial] = slice;
      most = std::max(most, running.size());
    } else {
      running.erase(trial);
    }
  }
  EXPECT_EQ(most, 2u) << ReadFile(ledger);
}

TEST(TuneLocalTest, ATrialPastItsTimeoutIsKilledWithItsProcessGroup) {
  const fs::path dir = FreshDir("timeout");
  const fs::path pids = dir / "child.pid";
  const fs::path campaign =
      ShellCampaign(dir, "sleep 300 & echo $! > " + pids.string() + "; sleep 300",
                    "{maxTrials: 1, parallelTrials: 1, trialTimeout: 2s}");
  const auto start = std::chrono::steady_clock::now();
  Outcome r = RunParatune("tune -f " + campaign.string() + " --local --devices none --out " +
                          (dir / "out").string() + " -o json 2>&1");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_LT(seconds, 30) << "the trial ran past its 2 s timeout";
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_GE(j["trials"].size(), 1u);
  EXPECT_EQ(j["trials"][0]["phase"], "Failed") << r.output;
  const std::string pid_text = ReadFile(pids);
  ASSERT_FALSE(pid_text.empty());
  EXPECT_TRUE(Dead(std::stoi(pid_text))) << "the trial's background child survived";
}

TEST(TuneLocalTest, ALosingTrialIsStoppedEarly) {
  const fs::path dir = FreshDir("early");
  // The first trial logs mfu 0.5 and ends; every later one logs mfu 0.1, one step per 0.3 s,
  // for 30 s unless it is stopped.
  const fs::path campaign =
      ShellCampaign(dir,
                    "case $PARATUNE_TRIAL in *-t001) m=0.5; n=3;; *) m=0.1; n=100;; esac; i=1; "
                    "while [ $$i -le $$n ]; do echo {\\\"step\\\": $$i, \\\"mfu\\\": $$m, "
                    "\\\"stepTimeSeconds\\\": 1.0}; i=$$((i+1)); sleep 0.3; done",
                    "{maxTrials: 2, parallelTrials: 1}");
  const auto start = std::chrono::steady_clock::now();
  Outcome r = RunParatune("tune -f " + campaign.string() + " --local --devices none --out " +
                          (dir / "out").string() + " -o json 2>&1");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["trials"].size(), 2u) << r.output;
  EXPECT_LT(seconds, 20) << "the losing trial ran to its end";
  ASSERT_EQ(j["local"]["earlyStopped"].size(), 1u) << r.output;
  EXPECT_EQ(j["local"]["earlyStopped"][0]["trial"], j["trials"][1]["name"]);
  EXPECT_EQ(j["local"]["earlyStopped"][0]["bestTrial"], j["trials"][0]["name"]);
  // Learned from as a measured, losing trial (the operator's EarlyStopped).
  EXPECT_EQ(j["trials"][1]["phase"], "Succeeded");
  EXPECT_NEAR(j["trials"][1]["metrics"]["mfu"].get<double>(), 0.1, 1e-9);
  EXPECT_EQ(j["best"]["trialName"], j["trials"][0]["name"]);
}

TEST(TuneLocalTest, InterruptStopsCleanlyAndTheNextRunResumes) {
  const fs::path dir = FreshDir("interrupt");
  const fs::path out = dir / "out";
  // Each trial records its shell's pid, then runs trial-sim slowly (about 3 s).
  const fs::path campaign = ShellCampaign(
      dir,
      "mkdir -p " + (dir / "pids").string() + "; echo $$$$ > " + (dir / "pids").string() +
          "/$PARATUNE_TRIAL; PARATUNE_SIM_SECONDS_PER_LINE=${PACE:-0} exec paratune trial-sim",
      "{maxTrials: 4, parallelTrials: 1}", "megatron-lm");
  std::vector<std::string> argv = {kBinary,      "tune",      "-f",   campaign.string(),
                                   "--local",    "--devices", "none", "--out",
                                   out.string(), "-o",        "json"};
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  std::vector<std::string> env = {"PACE=0.3", "PATH=" + std::string(getenv("PATH"))};
  std::vector<char*> cenv;
  for (auto& e : env) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, 1, (dir / "first.json").c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t tuner = -1;
  ASSERT_EQ(posix_spawn(&tuner, kBinary.c_str(), &files, nullptr, cargv.data(), cenv.data()), 0);
  posix_spawn_file_actions_destroy(&files);
  // Wait until the first trial finished and the second one runs, then Ctrl-C.
  bool second_running = false;
  for (int i = 0; i < 300 && !second_running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    second_running = fs::exists(dir / "pids") && std::distance(fs::directory_iterator(dir / "pids"),
                                                               fs::directory_iterator()) >= 2;
  }
  ASSERT_TRUE(second_running) << "the second trial never started";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(tuner, SIGINT);
  int status = 0;
  waitpid(tuner, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  const auto first = nlohmann::json::parse(ReadFile(dir / "first.json"));
  EXPECT_TRUE(first["local"]["interrupted"].get<bool>());
  int64_t finished = 0;
  for (const auto& t : first["trials"]) {
    finished += t["phase"] == "Succeeded" || t["phase"] == "Failed";
  }
  EXPECT_GE(finished, 1);
  EXPECT_LT(finished, 4);
  for (const auto& p : fs::directory_iterator(dir / "pids")) {
    EXPECT_TRUE(Dead(std::stoi(ReadFile(p.path())))) << p.path() << " survived Ctrl-C";
  }
  // Finished trials are not run again; the interrupted one and the rest are.
  std::map<std::string, fs::file_time_type> logs;
  for (const auto& t : first["trials"]) {
    if (t["phase"] == "Succeeded" || t["phase"] == "Failed") {
      logs[t["name"]] =
          fs::last_write_time(out / "trials" / (t["name"].get<std::string>() + ".log"));
    }
  }
  Outcome r = RunParatune("tune -f " + campaign.string() + " --local --devices none --out " +
                          out.string() + " -o json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto second = nlohmann::json::parse(r.output);
  EXPECT_EQ(second["local"]["resumedFinishedTrials"], finished);
  EXPECT_EQ(second["trials"].size(), 4u);
  EXPECT_FALSE(second["local"]["interrupted"].get<bool>());
  for (const auto& [name, when] : logs) {
    EXPECT_EQ(when, fs::last_write_time(out / "trials" / (name + ".log"))) << name << " ran again";
  }
}

}  // namespace
