// Every campaign of manifests/samples/ rendered through the real job renderer for one and two
// nodes: the trial renders, passes the default trial pod policy, runs one pod per node, carries
// its parameters, and every `--flag` (and MaxText `key=value` key) of its command line is one the
// framework version the sample names accepts. The flag lists are test data with their source:
// tests/core/data/flags/*.txt (written by tests/core/data/flags/extract_flags.py from the
// frameworks' repositories at the tags in each file's first line).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/core/framework_rules.h"
#include "controllers/job_renderer.h"
#include "controllers/pod_policy.h"

namespace paratune::controllers {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kSamples = std::string(PARATUNE_SOURCE_DIR) + "/manifests/samples";
const std::string kFlags = std::string(PARATUNE_SOURCE_DIR) + "/tests/core/data/flags/";

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// One flag (or config key) a line; '#' lines are comments (the source).
std::set<std::string> FlagList(const std::string& name) {
  std::ifstream f(kFlags + name);
  EXPECT_TRUE(f.good()) << "no flag list " << kFlags + name;
  std::set<std::string> out;
  std::string line;
  while (std::getline(f, line)) {
    if (!line.empty() && line[0] != '#') out.insert(line);
  }
  return out;
}

std::vector<std::string> CampaignSamples() {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(kSamples)) {
    if (e.path().extension() != ".yaml") continue;
    if (ReadFile(e.path().string()).find("kind: TuningCampaign") == std::string::npos) continue;
    out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The campaign resized to `nodes` (TPU v5e: 4 chips a host, 2x2 one host, 2x4 two).
CampaignSpec Resized(CampaignSpec c, int64_t nodes) {
  c.hardware.nodes = nodes;
  if (c.hardware.IsTpu()) c.hardware.tpu_topology = nodes == 1 ? "2x2" : "2x4";
  return c;
}

// The baseline, or each searched parameter's first value.
Config TrialConfig(const CampaignSpec& c) {
  if (c.baseline) return *c.baseline;
  Config out;
  for (const auto& p : c.search_space) out[p.name] = p.values.front();
  return out;
}

const json& JobSpec(const RenderedTrial& r) {
  return r.kind == "JobSet" ? r.workload["spec"]["replicatedJobs"][0]["template"]["spec"]
                            : r.workload["spec"];
}

std::string CommandLine(const json& container) {
  std::string s;
  for (const char* k : {"command", "args"}) {
    for (const auto& a : container.value(k, json::array())) s += a.get<std::string>() + "\n";
  }
  return s;
}

std::set<std::string> EnvNames(const json& container) {
  std::set<std::string> out;
  for (const auto& e : container.value("env", json::array())) out.insert(e["name"]);
  return out;
}

// `--name` tokens (not `${VAR:--1}` defaults: a flag starts with a letter), leaving out the
// setup lines of a script (`git clone ...`, `cd ... && pip install ...`): their flags are git's
// and pip's.
std::vector<std::string> Flags(const std::string& cmd) {
  static const std::regex kFlag(R"((?:^|[\s"'(])(--[A-Za-z][A-Za-z0-9_.-]*))");
  static const std::regex kSetup(R"(^\s*(git|cd|pip|pip3)\s)");
  std::vector<std::string> out;
  std::istringstream lines(cmd);
  std::string line;
  while (std::getline(lines, line)) {
    if (std::regex_search(line, kSetup)) continue;
    for (std::sregex_iterator it(line.begin(), line.end(), kFlag), end; it != end; ++it) {
      out.push_back((*it)[1]);
    }
  }
  return out;
}

// MaxText's `key=value` arguments after the entry point.
std::vector<std::string> ConfigKeys(const std::string& cmd, const std::string& entry) {
  static const std::regex kKey(R"((?:^|\s)([a-z_][a-z0-9_]*)=)");
  const size_t at = cmd.find(entry);
  std::vector<std::string> out;
  if (at == std::string::npos) return out;
  const std::string rest = cmd.substr(at + entry.size());
  for (std::sregex_iterator it(rest.begin(), rest.end(), kKey), end; it != end; ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

// The flag lists a sample's command line is checked against: the launcher's and the framework
// version's; empty for samples that run paratune's own trial-sim.
struct Lists {
  std::set<std::string> flags;
  std::set<std::string> keys;  // MaxText config keys
  std::string key_entry;
};

Lists ListsFor(const CampaignSpec& c, const std::string& cmd) {
  Lists l;
  const std::string& v = c.training.framework_version;
  auto add = [&](const std::string& file) {
    for (const auto& f : FlagList(file)) l.flags.insert(f);
  };
  if (cmd.find("torchrun") != std::string::npos) add("torchrun.txt");
  if (cmd.find("pretrain_gpt.py") != std::string::npos) add("megatron-lm-core-" + v + ".txt");
  // Megatron-Bridge 0.5.0 is the one in nvcr.io/nvidia/nemo:26.06 (Megatron-Bridge
  // docs/releases/software-versions.md); its parameters are key=value overrides.
  if (cmd.find("run_recipe.py") != std::string::npos) {
    EXPECT_EQ(TemplateImage(c.trial_template), "nvcr.io/nvidia/nemo:26.06");
    add("megatron-bridge-0.5.0.txt");
  }
  if (c.training.framework == "torchtitan") add("torchtitan-" + v + ".txt");
  if (c.training.framework == "maxtext" && cmd.find("paratune") == std::string::npos) {
    l.keys = FlagList("maxtext-" + v + ".txt");
    l.key_entry = "maxtext.trainers.pre_train.train";
  }
  return l;
}

TEST(SampleRenderTest, EverySampleRendersForOneAndTwoNodesWithTheFlagsItsVersionAccepts) {
  const auto samples = CampaignSamples();
  ASSERT_GE(samples.size(), 8u);
  int checked_flags = 0;
  for (const auto& path : samples) {
    auto loaded = LoadCampaignFile(path);
    ASSERT_TRUE(loaded.ok()) << path << ": " << loaded.status().ToString();
    for (int64_t nodes : {1, 2}) {
      SCOPED_TRACE(path + " on " + std::to_string(nodes) + " node(s)");
      const CampaignSpec c = Resized(*loaded, nodes);
      TrialJobInput in;
      in.campaign = &c;
      in.namespace_ = "team-a";
      in.trial_name = "sample-t001";
      in.trial_uid = "uid-1";
      in.iteration = 1;
      in.config = TrialConfig(c);
      for (bool jobset : {false, true}) {
        in.jobset_available = jobset;
        auto r = RenderTrial(in);
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        const json& job = JobSpec(*r);
        EXPECT_EQ(job.value("parallelism", 1), nodes);
        const json& pod = job["template"]["spec"];
        EXPECT_TRUE(CheckPodSpecPolicy(pod, "spec.trialTemplate.spec.template.spec", {}).ok())
            << CheckPodSpecPolicy(pod, "spec.trialTemplate.spec.template.spec", {}).ToString();
        const json& container = pod["containers"][0];
        const auto env = EnvNames(container);
        for (const auto& [key, value] : in.config) {
          EXPECT_EQ(env.count("PARATUNE_" + ParameterEnvName(key)), 1u) << key;
        }
        if (nodes == 2) {
          const std::string cmd = CommandLine(container);
          for (const char* var : {"NNODES", "NODE_RANK", "NPROC_PER_NODE", "MASTER_ADDR",
                                  "MASTER_PORT", "JAX_COORDINATOR_ADDRESS"}) {
            if (cmd.find(std::string("$") + var) != std::string::npos) {
              EXPECT_EQ(env.count(var), 1u) << var << " is used but not set";
            }
          }
        }
        const std::string cmd = CommandLine(container);
        const Lists lists = ListsFor(c, cmd);
        for (const auto& flag : Flags(cmd)) {
          if (lists.flags.empty()) break;
          EXPECT_EQ(lists.flags.count(flag), 1u) << flag << " is not a flag of the version named";
          ++checked_flags;
        }
        for (const auto& key : ConfigKeys(cmd, lists.key_entry)) {
          if (lists.key_entry.empty()) break;
          EXPECT_EQ(lists.keys.count(key), 1u)
              << key << " is not a MaxText " << c.training.framework_version << " config key";
          ++checked_flags;
        }
      }
    }
  }
  EXPECT_GT(checked_flags, 100);  // the real-framework samples were checked, not skipped
}

// vpp is "virtual pipeline chunks per stage" in the contract; a Megatron-LM sample that searches
// it passes the flag its version takes (framework_rules.h MegatronVirtualPipelineFlag).
TEST(SampleRenderTest, MegatronSamplesUseTheirVersionsVirtualPipelineFlag) {
  int checked = 0;
  for (const auto& path : CampaignSamples()) {
    auto c = LoadCampaignFile(path);
    ASSERT_TRUE(c.ok());
    const std::string cmd =
        CommandLine(c->trial_template["spec"]["template"]["spec"]["containers"][0]);
    if (cmd.find("pretrain_gpt.py") == std::string::npos || !c->FindSearchParameter("vpp")) {
      continue;
    }
    auto v = ParseFrameworkVersion(c->training.framework_version, "frameworkVersion");
    ASSERT_TRUE(v.ok()) << path << " names no frameworkVersion";
    EXPECT_THAT(cmd, ::testing::HasSubstr(MegatronVirtualPipelineFlag(*v, 2, 8).flag)) << path;
    ++checked;
  }
  EXPECT_GE(checked, 1);
}

// MaxText trains per_device_batch_size x chips x gradient_accumulation_steps sequences a step
// whatever the campaign says: a MaxText sample passes gradient_accumulation_steps and searches
// only perDeviceBatchSize values that give a whole number of steps of at least 1.
TEST(SampleRenderTest, MaxTextSamplesKeepTheCampaignsGlobalBatch) {
  int checked = 0;
  for (const auto& path : CampaignSamples()) {
    auto c = LoadCampaignFile(path);
    ASSERT_TRUE(c.ok());
    const std::string cmd =
        CommandLine(c->trial_template["spec"]["template"]["spec"]["containers"][0]);
    if (cmd.find("maxtext.trainers") == std::string::npos) continue;
    EXPECT_THAT(cmd, ::testing::HasSubstr("gradient_accumulation_steps=")) << path;
    const int64_t chips = c->hardware.TotalDevices();
    const SearchParameter* pdbs = c->FindSearchParameter("perDeviceBatchSize");
    ASSERT_NE(pdbs, nullptr) << path;
    for (const auto& v : pdbs->values) {
      const int64_t per_step = v.AsInt() * chips;
      EXPECT_TRUE(per_step <= c->training.global_batch_size &&
                  c->training.global_batch_size % per_step == 0)
          << path << ": perDeviceBatchSize " << v.AsInt();
      ++checked;
    }
  }
  EXPECT_GE(checked, 1);
}

// The real-framework samples name the version their flags are checked against.
TEST(SampleRenderTest, RealFrameworkSamplesNameTheirVersion) {
  for (const auto& path : CampaignSamples()) {
    auto c = LoadCampaignFile(path);
    ASSERT_TRUE(c.ok());
    if (TemplateImage(c->trial_template).rfind("paratune/", 0) == 0) continue;  // trial-sim
    // A transformers sample runs a script of this repository whose flags it owns; no rule of
    // agents/core/framework_rules.h depends on the transformers version.
    if (c->training.framework == "transformers") continue;
    EXPECT_FALSE(c->training.framework_version.empty()) << path;
  }
}

// A sample written for two nodes runs on one: the renderer sets the rendezvous variables its
// template reads on every trial (issue 35: `torchrun --nnodes ""` crashed).
TEST(SampleRenderTest, OneNodeTrialsGetTheRendezvousVariablesTheirTemplateUses) {
  for (const auto& path : CampaignSamples()) {
    auto loaded = LoadCampaignFile(path);
    ASSERT_TRUE(loaded.ok());
    const CampaignSpec c = Resized(*loaded, 1);
    TrialJobInput in;
    in.campaign = &c;
    in.namespace_ = "team-a";
    in.trial_name = "sample-t001";
    in.config = TrialConfig(c);
    auto r = RenderTrial(in);
    ASSERT_TRUE(r.ok());
    const json& container = JobSpec(*r)["template"]["spec"]["containers"][0];
    const auto env = EnvNames(container);
    const std::string cmd = CommandLine(container);
    for (const char* var :
         {"NNODES", "NODE_RANK", "NPROC_PER_NODE", "MASTER_ADDR", "MASTER_PORT"}) {
      if (cmd.find(std::string("$") + var) != std::string::npos) {
        EXPECT_EQ(env.count(var), 1u) << path << ": " << var;
      }
    }
  }
}

}  // namespace
}  // namespace paratune::controllers
