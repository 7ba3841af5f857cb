// AdmitCampaign: the administrator's policy in front of every campaign (docs/security.md).
#include <gtest/gtest.h>

#include "controllers/setup.h"
#include "testing/fakes/fake_kube_client.h"

namespace paratune::controllers {
namespace {

TEST(AdmitCampaignTest, TheOperatorsNamespaceIsRefusedAndThePolicyApplies) {
  kube::FakeKubeClient client;
  ControllerSetupOptions opts;
  opts.operator_namespace = "paratune-system";
  CampaignSpec spec;
  Status own = AdmitCampaign(&client, opts, "paratune-system", spec, true);
  EXPECT_EQ(own.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(own.message().rfind("metadata.namespace: ", 0), 0u) << own.message();
  EXPECT_TRUE(AdmitCampaign(&client, opts, "team-a", spec, true).ok());
  spec.trial_template = {
      {"spec", {{"template", {{"spec", {{"hostPID", true}, {"containers", {{{"name", "x"}}}}}}}}}}};
  Status host = AdmitCampaign(&client, opts, "team-a", spec, false);
  EXPECT_EQ(host.message().rfind("spec.trialTemplate.spec.template.spec.hostPID: ", 0), 0u)
      << host.message();
  opts.pod_policy.allow_host_namespaces = true;
  EXPECT_TRUE(AdmitCampaign(&client, opts, "team-a", spec, false).ok());
  // LLM access is checked for campaigns that use a model.
  spec.agents.engine = "llm";
  spec.agents.llm_endpoint = "http://metadata.google.internal/computeMetadata/v1";
  Status llm = AdmitCampaign(&client, opts, "team-a", spec, true);
  EXPECT_EQ(llm.message().rfind("spec.agents.llm.endpoint: ", 0), 0u) << llm.message();
}

}  // namespace
}  // namespace paratune::controllers
