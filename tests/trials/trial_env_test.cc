// The environment a trial gets wherever it runs (contract section 4): the operator's Pods and
// `paratune tune --local`'s processes read the same variables.
#include "agents/trials/trial_env.h"

#include <gtest/gtest.h>

#include <map>

namespace paratune {
namespace {

std::map<std::string, std::string> AsMap(const std::vector<TrialEnvVar>& env) {
  std::map<std::string, std::string> m;
  for (const auto& v : env) m[v.name] = v.value;
  return m;
}

TEST(TrialEnvTest, EveryConfigKeyAndTheCampaignReachTheTrial) {
  CampaignSpec spec;
  spec.name = "demo";
  Config config;
  config["tp"] = ParamValue::Int(2);
  config["recompute"] = ParamValue::Enum("selective");
  config["sequenceParallel"] = ParamValue::Bool(true);
  const auto env = TrialEnvironment(spec, "demo-t003", 3, config);
  ASSERT_GE(env.size(), 4u);
  EXPECT_EQ(env[0].name, "PARATUNE_CAMPAIGN");
  const auto m = AsMap(env);
  EXPECT_EQ(m.at("PARATUNE_CAMPAIGN"), "demo");
  EXPECT_EQ(m.at("PARATUNE_TRIAL"), "demo-t003");
  EXPECT_EQ(m.at("PARATUNE_ITERATION"), "3");
  EXPECT_EQ(m.at("PARATUNE_TP"), "2");
  EXPECT_EQ(m.at("PARATUNE_RECOMPUTE"), "selective");
  EXPECT_EQ(m.at("PARATUNE_SEQUENCE_PARALLEL"), "true");
  EXPECT_EQ(m.at("PARATUNE_WORKLOAD"), WorkloadJson(spec).dump());
}

TEST(TrialEnvTest, OneNodeRendezvousPointsAtThisMachine) {
  const auto m = AsMap(LocalRendezvousEnvironment(40123, 40124, 4));
  EXPECT_EQ(m.at("MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(m.at("MASTER_PORT"), "40123");
  EXPECT_EQ(m.at("NNODES"), "1");
  EXPECT_EQ(m.at("NODE_RANK"), "0");
  EXPECT_EQ(m.at("NPROC_PER_NODE"), "4");
  EXPECT_EQ(m.at("JAX_COORDINATOR_ADDRESS"), "127.0.0.1:40124");
  EXPECT_EQ(m.at("JAX_COORDINATOR_IP"), "127.0.0.1");
  EXPECT_EQ(m.at("JAX_COORDINATOR_PORT"), "40124");
  EXPECT_EQ(m.at("WORLD_SIZE"), "4") << "processes, as torchrun counts them";
  EXPECT_EQ(AsMap(LocalRendezvousEnvironment(1, 2, 0)).at("NPROC_PER_NODE"), "1");
}

TEST(TrialEnvTest, ExpandsAsKubernetesDoes) {
  const std::map<std::string, std::string> env = {{"A", "x"}, {"EMPTY", ""}};
  EXPECT_EQ(ExpandKubernetesVars("--a=$(A)", env), "--a=x");
  EXPECT_EQ(ExpandKubernetesVars("$$(A) $$ $(A)$(A)", env), "$(A) $ xx");
  EXPECT_EQ(ExpandKubernetesVars("$(UNKNOWN) [$(EMPTY)]", env), "$(UNKNOWN) []");
  EXPECT_EQ(ExpandKubernetesVars("cost $5 and $(A", env), "cost $5 and $(A");
  EXPECT_EQ(ExpandKubernetesVars("$", env), "$");
}

}  // namespace
}  // namespace paratune
