// ObjectReader implementations: the synchronous ClientReader the reconciler tests read through,
// and NamespacedReader, which serves several watched namespaces from one reader each (an
// operator with per-namespace RBAC lists nothing cluster-wide).
#include "operator/object_reader.h"

#include <gtest/gtest.h>

#include "base/time_source.h"
#include "operator/informer.h"
#include "testing/fakes/client_reader.h"
#include "testing/fakes/fake_kube_client.h"

namespace paratune::kube {
namespace {

Json Obj(const std::string& name, const std::string& ns, const std::string& trial = "") {
  Json o = {{"metadata", {{"name", name}, {"namespace", ns}}}, {"spec", {{"x", 1}}}};
  if (!trial.empty()) o["metadata"]["labels"]["tuning.paratune.dev/trial"] = trial;
  return o;
}

std::vector<std::string> Names(const std::vector<ObjectPtr>& objs) {
  std::vector<std::string> out;
  for (const auto& o : objs) out.push_back(ObjectKey::Of(*o).String());
  return out;
}

TEST(ClientReaderTest, ReadsWhatWasLastWrittenWithItsSelectorAndIndexes) {
  FakeKubeClient client;
  testing::ClientReader pods(&client, resources::kPods, "tuning.paratune.dev/trial");
  pods.AddIndex("by-trial", LabelIndex("tuning.paratune.dev/trial"));
  Json owner = *client.Create(resources::kTrialRuns, "a", Obj("t1", "a"));
  Json mine = Obj("p2", "a", "t1");
  mine["metadata"]["ownerReferences"] = Json::array({MakeControllerRef(owner)});
  ASSERT_TRUE(client.Create(resources::kPods, "a", mine).ok());
  ASSERT_TRUE(client.Create(resources::kPods, "a", Obj("p1", "a", "t1")).ok());
  ASSERT_TRUE(client.Create(resources::kPods, "a", Obj("unlabelled", "a")).ok());
  // No cache to wait for: the write is there at once; the selector leaves the rest out.
  EXPECT_EQ(Names(pods.List()), (std::vector<std::string>{"a/p1", "a/p2"}));
  EXPECT_NE(pods.Get({"a", "p1"}), nullptr);
  EXPECT_EQ(pods.Get({"a", "unlabelled"}), nullptr);
  EXPECT_EQ(Names(pods.ByOwner(UidOf(owner))), (std::vector<std::string>{"a/p2"}));
  EXPECT_EQ(pods.ByIndex("by-trial", "a/t1").size(), 2u);
  EXPECT_TRUE(pods.ByIndex("unknown", "a/t1").empty());
  ASSERT_TRUE(client.Delete(resources::kPods, "a", "p1", {}).ok());
  EXPECT_EQ(pods.Get({"a", "p1"}), nullptr);
}

TEST(NamespacedReaderTest, ServesEachWatchedNamespaceFromItsOwnReaderAndNothingElse) {
  FakeKubeClient client;
  testing::ClientReader a(&client, resources::kJobs), b(&client, resources::kJobs);
  NamespacedReader jobs({&a, &b}, {"team-a", "team-b"});
  jobs.AddIndex("by-trial", LabelIndex("tuning.paratune.dev/trial"));
  ASSERT_TRUE(client.Create(resources::kJobs, "team-b", Obj("j2", "team-b", "t")).ok());
  ASSERT_TRUE(client.Create(resources::kJobs, "team-a", Obj("j1", "team-a", "t")).ok());
  ASSERT_TRUE(client.Create(resources::kJobs, "elsewhere", Obj("j3", "elsewhere", "t")).ok());
  EXPECT_NE(jobs.Get({"team-a", "j1"}), nullptr);
  EXPECT_NE(jobs.Get({"team-b", "j2"}), nullptr);
  EXPECT_EQ(jobs.Get({"elsewhere", "j3"}), nullptr);  // not watched
  EXPECT_EQ(Names(jobs.List()), (std::vector<std::string>{"team-a/j1", "team-b/j2"}));
  EXPECT_EQ(Names(jobs.List("team-b")), (std::vector<std::string>{"team-b/j2"}));
  EXPECT_TRUE(jobs.List("elsewhere").empty());
  EXPECT_EQ(Names(jobs.ByIndex("by-trial", "team-a/t")), (std::vector<std::string>{"team-a/j1"}));
  EXPECT_TRUE(jobs.ByIndex("by-trial", "elsewhere/t").empty());
}

// Issue 17: a write handed to the NamespacedReader reaches the informer of its namespace only
// (an informer serves no object of a namespace it does not watch).
TEST(NamespacedReaderTest, WhatThisProcessWroteGoesToTheInformerOfItsNamespace) {
  FakeKubeClient client;
  FakeTimeSource clock;
  ReflectorOptions in_a, in_b;
  in_a.ns = "team-a";
  in_b.ns = "team-b";
  Informer a(&client, resources::kJobs, in_a, &clock, nullptr);
  Informer b(&client, resources::kJobs, in_b, &clock, nullptr);
  NamespacedReader jobs({&a, &b}, {"team-a", "team-b"});
  Json written = *client.Create(resources::kJobs, "team-a", Obj("j1", "team-a"));
  jobs.Wrote(written);  // the informers are not running: only the written copy can answer
  ASSERT_NE(jobs.Get({"team-a", "j1"}), nullptr);
  EXPECT_EQ(ResourceVersionOf(*jobs.Get({"team-a", "j1"})), ResourceVersionOf(written));
  EXPECT_EQ(b.Get({"team-a", "j1"}), nullptr);
  b.Wrote(written);  // handed to the wrong informer directly: refused
  EXPECT_EQ(b.Get({"team-a", "j1"}), nullptr);
  jobs.Wrote(*client.Create(resources::kJobs, "elsewhere", Obj("j3", "elsewhere")));
  EXPECT_EQ(jobs.Get({"elsewhere", "j3"}), nullptr);
}

}  // namespace
}  // namespace paratune::kube
