#include "testing/fakes/fake_kube_client.h"

#include <gtest/gtest.h>

#include <thread>

namespace paratune::kube {
namespace {

Json Pod(const std::string& name, const Json& labels = Json::object()) {
  return Json{{"metadata", {{"name", name}, {"namespace", "ns"}, {"labels", labels}}},
              {"spec", {{"nodeName", "node-1"}}}};
}

TEST(FakeKubeClientTest, CreateGetAndAlreadyExists) {
  FakeKubeClient c;
  auto created = c.Create(resources::kPods, "ns", Pod("a"));
  ASSERT_TRUE(created.ok());
  EXPECT_FALSE(UidOf(*created).empty());
  EXPECT_EQ((*created)["kind"], "Pod");
  auto again = c.Create(resources::kPods, "ns", Pod("a"));
  EXPECT_EQ(again.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(c.Get(resources::kPods, "ns", "b").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(NameOf(*c.Get(resources::kPods, "ns", "a")), "a");
}

TEST(FakeKubeClientTest, StaleResourceVersionConflicts) {
  FakeKubeClient c;
  Json v1 = *c.Create(resources::kJobs, "ns", Pod("j"));
  Json v2 = v1;
  v2["spec"]["parallelism"] = 2;
  auto updated = c.Update(resources::kJobs, v2);
  ASSERT_TRUE(updated.ok());
  EXPECT_EQ((*updated)["metadata"]["generation"], 2);
  v1["spec"]["parallelism"] = 3;
  EXPECT_EQ(c.Update(resources::kJobs, v1).status().code(), StatusCode::kConflict);
}

TEST(FakeKubeClientTest, StatusSubresourceIsSeparate) {
  FakeKubeClient c;
  Json tr = *c.Create(resources::kTrialRuns, "ns", Pod("t"));
  Json with_status = tr;
  with_status["status"] = {{"phase", "Running"}};
  Json after_update = *c.Update(resources::kTrialRuns, with_status);
  EXPECT_FALSE(after_update.contains("status"));
  Json after_status = *c.UpdateStatus(resources::kTrialRuns, with_status);
  EXPECT_EQ(after_status["status"]["phase"], "Running");
  EXPECT_EQ(after_status["metadata"]["generation"], 1);
}

TEST(FakeKubeClientTest, SelectorsAndPagination) {
  FakeKubeClient c;
  for (int i = 0; i < 5; ++i) {
    (void)c.Create(resources::kPods, "ns",
                   Pod("p" + std::to_string(i), {{"app", i % 2 ? "odd" : "even"}}));
  }
  ListOptions lo;
  lo.label_selector = "app=even";
  EXPECT_EQ(c.List(resources::kPods, "ns", lo)->items.size(), 3u);
  lo.label_selector = "app in (odd, x),!missing";
  EXPECT_EQ(c.List(resources::kPods, "ns", lo)->items.size(), 2u);
  lo = {};
  lo.field_selector = "metadata.name=p3";
  EXPECT_EQ(c.List(resources::kPods, "", lo)->items.size(), 1u);
  lo = {};
  lo.limit = 2;
  size_t total = 0;
  int pages = 0;
  do {
    auto page = c.List(resources::kPods, "ns", lo);
    total += page->items.size();
    lo.continue_token = page->continue_token;
    ++pages;
  } while (!lo.continue_token.empty());
  EXPECT_EQ(total, 5u);
  EXPECT_EQ(pages, 3);
}

TEST(FakeKubeClientTest, PatchesMergeJsonAndApply) {
  FakeKubeClient c;
  (void)c.Create(resources::kConfigMaps, "ns",
                 Json{{"metadata", {{"name", "cm"}}}, {"data", {{"a", "1"}}}});
  auto merged =
      c.Patch(resources::kConfigMaps, "ns", "cm", PatchType::kMerge, Json{{"data", {{"b", "2"}}}});
  EXPECT_EQ((*merged)["data"], (Json{{"a", "1"}, {"b", "2"}}));
  auto jp = c.Patch(resources::kConfigMaps, "ns", "cm", PatchType::kJson,
                    Json::array({{{"op", "remove"}, {"path", "/data/a"}}}));
  EXPECT_EQ((*jp)["data"], (Json{{"b", "2"}}));
  Json intent{{"metadata", {{"name", "new"}, {"namespace", "ns"}}}, {"data", {{"x", "y"}}}};
  EXPECT_EQ(c.Patch(resources::kConfigMaps, "ns", "new", PatchType::kApply, intent).status().code(),
            StatusCode::kInvalidArgument);
  WriteOptions wo;
  wo.field_manager = "test";
  EXPECT_TRUE(c.Patch(resources::kConfigMaps, "ns", "new", PatchType::kApply, intent, wo).ok());
}

TEST(FakeKubeClientTest, DeleteCascadesToOwnedObjects) {
  FakeKubeClient c;
  Json owner = *c.Create(resources::kTrialRuns, "ns", Pod("t"));
  Json job = Pod("job");
  job["metadata"]["ownerReferences"] = Json::array({MakeControllerRef(owner)});
  Json stored_job = *c.Create(resources::kJobs, "ns", job);
  Json pod = Pod("pod");
  pod["metadata"]["ownerReferences"] = Json::array({MakeControllerRef(stored_job)});
  (void)c.Create(resources::kPods, "ns", pod);
  ASSERT_TRUE(c.Delete(resources::kTrialRuns, "ns", "t").ok());
  EXPECT_EQ(c.Get(resources::kJobs, "ns", "job").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(c.Get(resources::kPods, "ns", "pod").status().code(), StatusCode::kNotFound);
}

TEST(FakeKubeClientTest, FinalizersDelayDeletion) {
  FakeKubeClient c;
  Json obj = Pod("f");
  obj["metadata"]["finalizers"] = Json::array({"paratune.dev/cleanup"});
  (void)c.Create(resources::kTrialRuns, "ns", obj);
  ASSERT_TRUE(c.Delete(resources::kTrialRuns, "ns", "f").ok());
  Json marked = *c.Get(resources::kTrialRuns, "ns", "f");
  EXPECT_TRUE(marked["metadata"].contains("deletionTimestamp"));
  marked["metadata"]["finalizers"] = Json::array();
  ASSERT_TRUE(c.Update(resources::kTrialRuns, marked).ok());
  EXPECT_EQ(c.Get(resources::kTrialRuns, "ns", "f").status().code(), StatusCode::kNotFound);
}

TEST(FakeKubeClientTest, WatchReplaysFromResourceVersionAndGoneAfterCompact) {
  FakeKubeClient c;
  (void)c.Create(resources::kPods, "ns", Pod("a"));
  std::string rv = std::to_string(c.resource_version());
  (void)c.Create(resources::kPods, "ns", Pod("b"));
  (void)c.Delete(resources::kPods, "ns", "a");
  std::vector<std::string> seen;
  WatchOptions wo;
  wo.resource_version = rv;
  std::stop_source stop;
  Status s = c.Watch(
      resources::kPods, "ns", wo,
      [&](const WatchEvent& ev) {
        seen.push_back(std::string(WatchEventTypeName(ev.type)) + " " + NameOf(ev.object));
        return seen.size() < 2;
      },
      stop.get_token());
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED b", "DELETED a"}));
  c.Compact();
  EXPECT_EQ(
      c.Watch(
           resources::kPods, "ns", wo, [](const WatchEvent&) { return true; }, stop.get_token())
          .code(),
      StatusCode::kGone);
}

TEST(FakeKubeClientTest, WatchStreamsLiveEventsUntilStopped) {
  FakeKubeClient c;
  std::stop_source stop;
  std::atomic<int> events{0};
  std::thread watcher([&] {
    WatchOptions wo;
    wo.resource_version = std::to_string(c.resource_version());
    (void)c.Watch(
        resources::kPods, "", wo, [&](const WatchEvent&) { return ++events, true; },
        stop.get_token());
  });
  while (c.OpenWatches() == 0) std::this_thread::yield();
  (void)c.Create(resources::kPods, "ns", Pod("live"));
  while (events.load() == 0) std::this_thread::yield();
  stop.request_stop();
  watcher.join();
  EXPECT_EQ(events.load(), 1);
  EXPECT_EQ(c.OpenWatches(), 0);
}

TEST(FakeKubeClientTest, InjectedErrorsAndCallCounts) {
  FakeKubeClient c;
  c.InjectError("get", "pods", Status::Unavailable("etcd down"), 1);
  EXPECT_EQ(c.Get(resources::kPods, "ns", "x").status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(c.Get(resources::kPods, "ns", "x").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(c.Calls("get"), 2);
}

TEST(FakeKubeClientTest, PodLogTail) {
  FakeKubeClient c;
  c.SetPodLog("ns", "p", "one\ntwo\nthree\n");
  PodLogOptions o;
  o.tail_lines = 2;
  EXPECT_EQ(*c.GetPodLog("ns", "p", o), "two\nthree\n");
}

}  // namespace
}  // namespace paratune::kube
