#include "controllers/status_writer.h"

#include <gtest/gtest.h>

#include "operator/testing/fake_kube_client.h"

namespace paratune::controllers {
namespace {

using kube::Json;

Json Trial() {
  return {{"apiVersion", "tuning.paratune.dev/v1alpha1"},
          {"kind", "TrialRun"},
          {"metadata", {{"name", "c-t001"}, {"namespace", "ns"}}},
          {"spec", {{"iteration", 1}}}};
}

// Someone annotates the object after our cache read: the cached resourceVersion is stale. The
// status still lands (on the fresh copy), and the other writer's change is kept.
TEST(StatusWriterTest, StaleResourceVersionIsRereadAndTheStatusLands) {
  kube::FakeKubeClient client;
  client.SetHasStatus("trialruns", true);
  auto created = client.Create(kube::resources::kTrialRuns, "ns", Trial());
  ASSERT_TRUE(created.ok());
  Json cached = *created;
  Json annotated = cached;
  annotated["metadata"]["annotations"] = {{"team", "ml"}};
  ASSERT_TRUE(client.Update(kube::resources::kTrialRuns, annotated).ok());

  cached["status"] = {{"phase", "Succeeded"}};
  ASSERT_FALSE(client.UpdateStatus(kube::resources::kTrialRuns, cached).ok());  // plain: 409
  auto written = WriteStatus(&client, kube::resources::kTrialRuns, cached);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  auto now = client.Get(kube::resources::kTrialRuns, "ns", "c-t001");
  ASSERT_TRUE(now.ok());
  EXPECT_EQ((*now)["status"]["phase"], "Succeeded");
  EXPECT_EQ((*now)["metadata"]["annotations"]["team"], "ml");
}

TEST(StatusWriterTest, OtherErrorsAndDeletedObjectsAreReturned) {
  kube::FakeKubeClient client;
  client.SetHasStatus("trialruns", true);
  auto created = client.Create(kube::resources::kTrialRuns, "ns", Trial());
  ASSERT_TRUE(created.ok());
  Json obj = *created;
  obj["status"] = {{"phase", "Running"}};
  client.InjectError("updatestatus", "trialruns", Status::Unavailable("apiserver down"));
  auto down = WriteStatus(&client, kube::resources::kTrialRuns, obj);
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable);

  client.InjectError("updatestatus", "trialruns", Status::Conflict("stale"));
  ASSERT_TRUE(client.Delete(kube::resources::kTrialRuns, "ns", "c-t001").ok());
  auto gone = WriteStatus(&client, kube::resources::kTrialRuns, obj);
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace paratune::controllers
