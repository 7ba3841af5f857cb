#include "controllers/status_writer.h"

#include <gtest/gtest.h>

#include "testing/fakes/fake_kube_client.h"

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

// A status write is one merge patch of what changed: no request when nothing did, removed keys
// cleared, and a concurrent annotation neither conflicts nor is lost.
TEST(StatusWriterTest, PatchStatusSendsOnlyChangesAndNeverConflicts) {
  kube::FakeKubeClient client;
  client.SetHasStatus("trialruns", true);
  auto created = client.Create(kube::resources::kTrialRuns, "ns", Trial());
  ASSERT_TRUE(created.ok());
  Json cached = *created;
  cached["status"] = {{"phase", "Pending"}, {"message", "waiting"}};
  auto first = PatchStatus(&client, kube::resources::kTrialRuns, cached, Json::object());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  Json annotated = *first;
  annotated["metadata"]["annotations"] = {{"team", "ml"}};
  ASSERT_TRUE(client.Update(kube::resources::kTrialRuns, annotated).ok());
  client.ResetCalls();

  const Json previous = cached["status"];
  EXPECT_TRUE(PatchStatus(&client, kube::resources::kTrialRuns, cached, previous).ok());
  EXPECT_EQ(client.TotalCalls(), 0) << "an unchanged status must cost no request";

  cached["status"] = {{"phase", "Running"}};  // stale resourceVersion, "message" gone
  auto written = PatchStatus(&client, kube::resources::kTrialRuns, cached, previous);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  EXPECT_EQ(client.TotalCalls(), 1);
  auto now = client.Get(kube::resources::kTrialRuns, "ns", "c-t001");
  ASSERT_TRUE(now.ok());
  EXPECT_EQ((*now)["status"], Json({{"phase", "Running"}}));
  EXPECT_EQ((*now)["metadata"]["annotations"]["team"], "ml");
}

// The cache the caller reads from is handed what the server stored (so a reconcile before the
// watch catches up does not write the same status again); nothing when nothing was sent.
TEST(StatusWriterTest, PatchStatusHandsTheStoredObjectToTheCallersCache) {
  struct Recorder final : kube::ObjectReader {
    kube::ObjectPtr Get(const kube::ObjectKey&) const override { return nullptr; }
    std::vector<kube::ObjectPtr> List(const std::string&) const override { return {}; }
    std::vector<kube::ObjectPtr> ByOwner(const std::string&) const override { return {}; }
    void AddIndex(const std::string&, kube::IndexFunc) override {}
    std::vector<kube::ObjectPtr> ByIndex(const std::string&, const std::string&) const override {
      return {};
    }
    void Wrote(const Json& obj) override { wrote.push_back(obj); }
    std::vector<Json> wrote;
  } cache;
  kube::FakeKubeClient client;
  client.SetHasStatus("trialruns", true);
  Json cached = *client.Create(kube::resources::kTrialRuns, "ns", Trial());
  cached["status"] = {{"phase", "Running"}};
  auto written = PatchStatus(&client, kube::resources::kTrialRuns, cached, Json::object(), &cache);
  ASSERT_TRUE(written.ok()) << written.status().ToString();
  ASSERT_EQ(cache.wrote.size(), 1u);
  EXPECT_EQ(cache.wrote[0], *written);
  EXPECT_TRUE(
      PatchStatus(&client, kube::resources::kTrialRuns, cached, cached["status"], &cache).ok());
  EXPECT_EQ(cache.wrote.size(), 1u) << "no request, nothing new to read back";
}

TEST(StatusWriterTest, MergePatchBetweenRecursesIntoObjectsAndReplacesArrays) {
  const Json before = {{"best", {{"trial", "t1"}, {"objective", 1.0}}},
                       {"conditions", Json::array({{{"type", "A"}}})},
                       {"gone", 1}};
  const Json after = {{"best", {{"trial", "t2"}, {"objective", 1.0}}},
                      {"conditions", Json::array({{{"type", "A"}}, {{"type", "B"}}})}};
  const Json patch = MergePatchBetween(before, after);
  EXPECT_EQ(
      patch,
      Json({{"best", {{"trial", "t2"}}}, {"conditions", after["conditions"]}, {"gone", nullptr}}));
  Json applied = before;
  applied.merge_patch(patch);
  EXPECT_EQ(applied, after);
  EXPECT_TRUE(MergePatchBetween(after, after).empty());
}

}  // namespace
}  // namespace paratune::controllers
