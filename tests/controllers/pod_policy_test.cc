// The trial pod policy: each escape a campaign could ask for is refused by default with the
// field named, and the administrator's settings admit exactly what they name.
#include "controllers/pod_policy.h"

#include <gtest/gtest.h>

#include <string>

namespace paratune::controllers {
namespace {

using nlohmann::json;

CampaignSpec WithPod(const json& pod_spec) {
  CampaignSpec spec;
  spec.trial_template = {{"spec", {{"template", {{"spec", pod_spec}}}}}};
  return spec;
}

json Trainer(const json& security_context = json()) {
  json c = {{"name", "trainer"}, {"image", "megatron:24.05"}};
  if (!security_context.is_null()) c["securityContext"] = security_context;
  return c;
}

// The message of the refusal, or "" when admitted.
std::string Refusal(const json& pod_spec, const TrialPodPolicy& policy = {}) {
  Status s = CheckTrialPodPolicy(WithPod(pod_spec), policy);
  if (s.ok()) return "";
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  return s.message();
}

bool StartsWith(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

constexpr const char* kPod = "spec.trialTemplate.spec.template.spec";

TEST(TrialPodPolicyTest, AnOrdinaryTrainingPodIsAdmitted) {
  json pod = {{"containers", json::array({Trainer({{"runAsNonRoot", true}})})},
              {"serviceAccountName", "default"},
              {"volumes", json::array({{{"name", "shm"}, {"emptyDir", {{"medium", "Memory"}}}}})},
              {"tolerations", json::array({{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}}})}};
  EXPECT_EQ(Refusal(pod), "");
  EXPECT_TRUE(CheckTrialPodPolicy(CampaignSpec(), {}).ok()) << "the default template";
}

TEST(TrialPodPolicyTest, EachEscapeIsRefusedNamingTheField) {
  const std::string p = kPod;
  struct Case {
    json pod;
    std::string field;
  } cases[] = {
      {{{"containers", json::array({Trainer({{"privileged", true}})})}},
       p + ".containers[0].securityContext.privileged"},
      {{{"containers", json::array({Trainer(), Trainer({{"allowPrivilegeEscalation", true}})})}},
       p + ".containers[1].securityContext.allowPrivilegeEscalation"},
      {{{"initContainers", json::array({Trainer({{"privileged", true}})})},
        {"containers", json::array({Trainer()})}},
       p + ".initContainers[0].securityContext.privileged"},
      {{{"hostNetwork", true}, {"containers", json::array({Trainer()})}}, p + ".hostNetwork"},
      {{{"hostPID", true}, {"containers", json::array({Trainer()})}}, p + ".hostPID"},
      {{{"hostIPC", true}, {"containers", json::array({Trainer()})}}, p + ".hostIPC"},
      {{{"containers", json::array({Trainer()})},
        {"volumes", json::array({{{"name", "a"}, {"emptyDir", json::object()}},
                                 {{"name", "root"}, {"hostPath", {{"path", "/"}}}}})}},
       p + ".volumes[1].hostPath"},
      {{{"containers",
         json::array({Trainer({{"capabilities", {{"add", json::array({"SYS_ADMIN"})}}}})})}},
       p + ".containers[0].securityContext.capabilities.add[0]"},
      {{{"serviceAccountName", "paratune-operator"}, {"containers", json::array({Trainer()})}},
       p + ".serviceAccountName"},
      {{{"serviceAccount", "builder"}, {"containers", json::array({Trainer()})}},
       p + ".serviceAccount"},
      {{{"containers", json::array({Trainer()})},
        {"tolerations", json::array({{{"key", "node-role.kubernetes.io/control-plane"},
                                      {"operator", "Exists"}}})}},
       p + ".tolerations[0]"},
      {{{"containers", json::array({Trainer()})},
        {"tolerations", json::array({{{"key", "x"}, {"operator", "Exists"}},
                                     {{"key", "node-role.kubernetes.io/master"}}})}},
       p + ".tolerations[1]"},
      {{{"containers", json::array({Trainer()})},
        {"tolerations", json::array({{{"operator", "Exists"}}})}},
       p + ".tolerations[0]"},
  };
  for (const auto& c : cases) {
    const std::string why = Refusal(c.pod);
    EXPECT_TRUE(StartsWith(why, c.field + ": ")) << "want " << c.field << ", got: " << why;
  }
}

TEST(TrialPodPolicyTest, HardwareTolerationsAreCheckedToo) {
  CampaignSpec spec;
  spec.hardware.tolerations =
      json::array({{{"key", "node-role.kubernetes.io/control-plane"}, {"effect", "NoSchedule"}}});
  Status s = CheckTrialPodPolicy(spec, {});
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(StartsWith(s.message(), "spec.hardware.tolerations[0]: ")) << s.message();
  TrialPodPolicy wide;
  wide.allow_control_plane_tolerations = true;
  EXPECT_TRUE(CheckTrialPodPolicy(spec, wide).ok());
}

TEST(TrialPodPolicyTest, TheAdministratorWidensOnlyWhatTheyName) {
  json rdma = {{"containers",
                json::array({Trainer({{"capabilities", {{"add", json::array({"IPC_LOCK"})}}}})})},
               {"serviceAccountName", "trainer"}};
  TrialPodPolicy policy;
  policy.allowed_capabilities = {"IPC_LOCK"};
  EXPECT_TRUE(StartsWith(Refusal(rdma, policy), std::string(kPod) + ".serviceAccountName"));
  policy.allowed_service_accounts = {"trainer"};
  EXPECT_EQ(Refusal(rdma, policy), "");
  rdma["containers"][0]["securityContext"]["capabilities"]["add"].push_back("NET_ADMIN");
  EXPECT_TRUE(StartsWith(Refusal(rdma, policy),
                         std::string(kPod) + ".containers[0].securityContext.capabilities.add[1]"));
  json host = {{"hostNetwork", true},
               {"containers", json::array({Trainer({{"privileged", true}})})},
               {"volumes", json::array({{{"name", "dev"}, {"hostPath", {{"path", "/dev"}}}}})}};
  policy.allow_host_namespaces = true;
  policy.allow_privileged = true;
  EXPECT_TRUE(StartsWith(Refusal(host, policy), std::string(kPod) + ".volumes[0].hostPath"));
  policy.allow_host_path = true;
  EXPECT_EQ(Refusal(host, policy), "");
}

}  // namespace
}  // namespace paratune::controllers
