#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>

#include "operator/controller.h"
#include "operator/informer.h"
#include "testing/fakes/fake_kube_client.h"

namespace paratune::kube {
namespace {

using namespace std::chrono_literals;

Json Obj(const std::string& name, const std::string& ns = "ns") {
  return Json{{"metadata", {{"name", name}, {"namespace", ns}}}, {"spec", {{"x", 1}}}};
}

template <typename F>
bool Eventually(F f) {
  for (int i = 0; i < 400; ++i) {
    if (f()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return f();
}

class InformerTest : public ::testing::Test {
 protected:
  FakeKubeClient client_;
  FakeTimeSource clock_;
  MetricsRegistry metrics_;
  std::stop_source stop_;
};

TEST_F(InformerTest, ListsThenFollowsWatchAndIndexes) {
  Json owner = *client_.Create(resources::kTrialRuns, "ns", Obj("tr"));
  Json child = Obj("job-1");
  child["metadata"]["ownerReferences"] = Json::array({MakeControllerRef(owner)});
  ASSERT_TRUE(client_.Create(resources::kJobs, "ns", child).ok());
  ASSERT_TRUE(client_.Create(resources::kJobs, "other", Obj("job-2", "other")).ok());
  ReflectorOptions ro;
  ro.page_size = 1;  // exercise pagination.
  Informer inf(&client_, resources::kJobs, ro, &clock_, &metrics_);
  std::jthread t([&](std::stop_token st) { inf.Run(st); });
  ASSERT_TRUE(inf.WaitForSync(stop_.get_token(), 2000ms));
  EXPECT_EQ(inf.Size(), 2u);
  EXPECT_EQ(inf.List("other").size(), 1u);
  ASSERT_EQ(inf.ByOwner(UidOf(owner)).size(), 1u);
  EXPECT_EQ(NameOf(*inf.ByOwner(UidOf(owner))[0]), "job-1");
  ASSERT_TRUE(client_.Create(resources::kJobs, "ns", Obj("job-3")).ok());
  EXPECT_TRUE(Eventually([&] { return inf.Get({"ns", "job-3"}) != nullptr; }));
  ASSERT_TRUE(client_.Delete(resources::kTrialRuns, "ns", "tr").ok());  // GC removes job-1.
  EXPECT_TRUE(Eventually([&] { return inf.ByOwner(UidOf(owner)).empty(); }));
  EXPECT_EQ(inf.Get({"ns", "job-1"}), nullptr);
}

// A label selector keeps other objects out of the cache (the operator's pods, not the cluster's),
// and a label index finds a trial's pods without scanning the namespace.
TEST_F(InformerTest, SelectsByLabelAndIndexesByLabelValue) {
  auto pod = [](const std::string& name, const Json& labels) {
    Json p = Obj(name);
    p["metadata"]["labels"] = labels;
    return p;
  };
  const Json own = {{"tuning.paratune.dev/campaign", "c"}, {"tuning.paratune.dev/trial", "c-t1"}};
  ASSERT_TRUE(client_.Create(resources::kPods, "ns", pod("p1", own)).ok());
  ASSERT_TRUE(client_.Create(resources::kPods, "ns", pod("other", {{"app", "web"}})).ok());
  ReflectorOptions ro;
  ro.label_selector = "tuning.paratune.dev/campaign";
  Informer inf(&client_, resources::kPods, ro, &clock_, &metrics_);
  inf.AddIndex("by-trial", LabelIndex("tuning.paratune.dev/trial"));
  std::jthread t([&](std::stop_token st) { inf.Run(st); });
  ASSERT_TRUE(inf.WaitForSync(stop_.get_token(), 2000ms));
  EXPECT_EQ(inf.Size(), 1u);
  ASSERT_TRUE(client_.Create(resources::kPods, "ns", pod("p2", own)).ok());
  ASSERT_TRUE(client_.Create(resources::kPods, "ns", pod("web-2", {{"app", "web"}})).ok());
  EXPECT_TRUE(Eventually([&] { return inf.ByIndex("by-trial", "ns/c-t1").size() == 2; }));
  EXPECT_EQ(inf.Get({"ns", "web-2"}), nullptr);
  EXPECT_TRUE(inf.ByIndex("by-trial", "ns/c-t9").empty());
  EXPECT_TRUE(inf.ByIndex("no-such-index", "ns/c-t1").empty());
  ASSERT_TRUE(client_.Delete(resources::kPods, "ns", "p1").ok());
  EXPECT_TRUE(Eventually([&] { return inf.ByIndex("by-trial", "ns/c-t1").size() == 1; }));
}

TEST_F(InformerTest, RelistsAfterGoneAndRewatchesAfterServerTimeout) {
  Informer inf(&client_, resources::kPods, {}, &clock_, &metrics_);
  std::atomic<int> adds{0}, deletes{0};
  inf.AddEventHandler({[&](const Json&) { adds++; }, nullptr, [&](const Json&) { deletes++; }});
  std::jthread t([&](std::stop_token st) { inf.Run(st); });
  ASSERT_TRUE(inf.WaitForSync(stop_.get_token(), 2000ms));
  ASSERT_TRUE(client_.Create(resources::kPods, "ns", Obj("a")).ok());
  ASSERT_TRUE(Eventually([&] { return adds.load() == 1; }));
  client_.CloseWatches();  // the server ends the watch: re-watch from the last version.
  ASSERT_TRUE(Eventually([&] { return client_.OpenWatches() == 1; }));
  ASSERT_TRUE(client_.Create(resources::kPods, "ns", Obj("b")).ok());
  ASSERT_TRUE(Eventually([&] { return adds.load() == 2; }));
  EXPECT_EQ(inf.reflector().lists(), 1);
  // Changes made while the watch is down and then compacted away: only a relist finds them.
  client_.InjectError("watch", "pods", Status::Unavailable("apiserver restarting"), 1);
  client_.CloseWatches();
  ASSERT_TRUE(client_.Delete(resources::kPods, "ns", "a").ok());
  ASSERT_TRUE(client_.Create(resources::kPods, "ns", Obj("c")).ok());
  client_.Compact();
  ASSERT_TRUE(Eventually([&] {
    clock_.Advance(100ms);  // through the backoff.
    return inf.reflector().lists() == 2;
  }));
  EXPECT_TRUE(Eventually([&] { return adds.load() == 3 && deletes.load() == 1; }));
  EXPECT_NE(inf.Get({"ns", "c"}), nullptr);
  EXPECT_EQ(inf.Get({"ns", "a"}), nullptr);
  EXPECT_GE(metrics_.Value(kWatchRestarts, {{"resource", "pods"}}), 2);
}

// Issue 17: a reconcile that runs before the watch delivers its own write reads that write
// (client-go's MutationCache), so it neither writes the same status again nor creates twice;
// an older copy, or one whose version is not a number, never hides the cache's, and a written
// copy never brings back an object the watch saw deleted.
TEST_F(InformerTest, GetReadsWhatThisProcessWroteUntilTheWatchCatchesUp) {
  Informer inf(&client_, resources::kJobs, {}, &clock_, &metrics_);
  std::jthread t([&](std::stop_token st) { inf.Run(st); });
  ASSERT_TRUE(inf.WaitForSync(stop_.get_token(), 2000ms));
  Json a = *client_.Create(resources::kJobs, "ns", Obj("a"));
  ASSERT_TRUE(Eventually([&] { return inf.Get({"ns", "a"}) != nullptr; }));
  // The watch goes down (a busy server): nothing the server does reaches the cache meanwhile.
  client_.InjectError("watch", "jobs", Status::Unavailable("apiserver busy"), 1);
  client_.CloseWatches();
  Json b = *client_.Create(resources::kJobs, "ns", Obj("b"));
  EXPECT_EQ(inf.Get({"ns", "b"}), nullptr);
  Json b_written = b;
  b_written["metadata"]["managedFields"] = Json::array({{{"manager", "kubectl"}}});
  inf.Wrote(b_written);
  ASSERT_NE(inf.Get({"ns", "b"}), nullptr);
  EXPECT_EQ(ResourceVersionOf(*inf.Get({"ns", "b"})), ResourceVersionOf(b));
  EXPECT_FALSE((*inf.Get({"ns", "b"}))["metadata"].contains("managedFields"));
  EXPECT_TRUE(inf.List("ns").size() == 1u) << "lists stay the watch's";
  Json a2 = a;
  a2["spec"]["x"] = 2;
  a2 = *client_.Update(resources::kJobs, a2);
  inf.Wrote(a2);
  EXPECT_EQ((*inf.Get({"ns", "a"}))["spec"]["x"], 2);
  inf.Wrote(a);  // older than the copy written before it
  EXPECT_EQ((*inf.Get({"ns", "a"}))["spec"]["x"], 2);
  Json odd = a;
  odd["metadata"]["resourceVersion"] = "not-a-number";
  odd["spec"]["x"] = 3;
  inf.Wrote(odd);
  EXPECT_EQ((*inf.Get({"ns", "a"}))["spec"]["x"], 2);
  ASSERT_TRUE(client_.Delete(resources::kJobs, "ns", "b").ok());
  // The watch comes back and delivers: the cache's copies are the server's again.
  ASSERT_TRUE(Eventually([&] {
    clock_.Advance(100ms);  // through the backoff
    return inf.Get({"ns", "b"}) == nullptr && inf.List("ns").size() == 1u &&
           (*inf.List("ns")[0])["spec"]["x"] == 2;
  }));
  EXPECT_EQ((*inf.Get({"ns", "a"}))["spec"]["x"], 2);
}

class CountingReconciler : public Reconciler {
 public:
  Result<ReconcileResult> Reconcile(const ObjectKey& key) override {
    int now = ++in_flight;
    int prev = max_in_flight.load();
    while (now > prev && !max_in_flight.compare_exchange_weak(prev, now)) {
    }
    std::this_thread::sleep_for(2ms);
    calls++;
    {
      std::lock_guard lock(mu);
      keys.push_back(key.String());
    }
    --in_flight;
    if (fail_times > 0) {
      --fail_times;
      return Status::Unavailable("transient");
    }
    return ReconcileResult{};
  }
  std::atomic<int> in_flight{0}, max_in_flight{0}, calls{0}, fail_times{0};
  std::mutex mu;
  std::vector<std::string> keys;
};

TEST_F(InformerTest, ControllerReconcilesOwnersOfChangedChildren) {
  Json owner = *client_.Create(resources::kTrialRuns, "ns", Obj("tr"));
  Informer owners(&client_, resources::kTrialRuns, {}, &clock_, &metrics_);
  Informer jobs(&client_, resources::kJobs, {}, &clock_, &metrics_);
  CountingReconciler rec;
  Controller ctrl({"trialrun", 1, {}}, &rec, &clock_, &metrics_);
  ctrl.For(&owners);
  ctrl.Owns(&jobs, "TrialRun");
  std::jthread t1([&](std::stop_token st) { owners.Run(st); });
  std::jthread t2([&](std::stop_token st) { jobs.Run(st); });
  ASSERT_TRUE(owners.WaitForSync(stop_.get_token(), 2000ms));
  ASSERT_TRUE(jobs.WaitForSync(stop_.get_token(), 2000ms));
  while (ctrl.ProcessNextReadyItem()) {
  }
  EXPECT_EQ(rec.keys, std::vector<std::string>{"ns/tr"});
  Json child = Obj("job");
  child["metadata"]["ownerReferences"] = Json::array({MakeControllerRef(owner)});
  ASSERT_TRUE(client_.Create(resources::kJobs, "ns", child).ok());
  ASSERT_TRUE(Eventually([&] { return ctrl.queue().Len() == 1; }));
  ASSERT_TRUE(ctrl.ProcessNextReadyItem());
  EXPECT_EQ(rec.keys.back(), "ns/tr");
  EXPECT_EQ(metrics_.Value(kReconcileTotal, {{"controller", "trialrun"}, {"result", "success"}}),
            2);
}

TEST_F(InformerTest, ControllerRetriesErrorsWithBackoff) {
  CountingReconciler rec;
  rec.fail_times = 2;
  Controller ctrl({"c", 1, {}}, &rec, &clock_, &metrics_);
  ctrl.queue().Add("ns/a");
  ASSERT_TRUE(ctrl.ProcessNextReadyItem());
  EXPECT_FALSE(ctrl.ProcessNextReadyItem()) << "retry waits 5 ms";
  clock_.Advance(5ms);
  ASSERT_TRUE(ctrl.ProcessNextReadyItem());
  clock_.Advance(9ms);
  EXPECT_FALSE(ctrl.ProcessNextReadyItem()) << "second retry waits 10 ms";
  clock_.Advance(1ms);
  ASSERT_TRUE(ctrl.ProcessNextReadyItem());
  EXPECT_EQ(ctrl.queue().NumRequeues("ns/a"), 0) << "success forgets the backoff";
  EXPECT_EQ(metrics_.Value(kReconcileErrors, {{"controller", "c"}}), 2);
  EXPECT_EQ(metrics_.HistogramCount(kReconcileTime, {{"controller", "c"}}), 3);
}

// Returns `error` on every reconcile.
class ErroringReconciler : public Reconciler {
 public:
  explicit ErroringReconciler(Status error) : error_(std::move(error)) {}
  Result<ReconcileResult> Reconcile(const ObjectKey&) override {
    ++calls;
    return error_;
  }
  int calls = 0;

 private:
  Status error_;
};

TEST_F(InformerTest, OnlyAnErrorMarkedTerminalIsNotRetried) {
  ErroringReconciler terminal(Status::Invalid("message pool is malformed").AsTerminal());
  Controller ctrl({"c", 1, {}}, &terminal, &clock_, &metrics_);
  ctrl.queue().Add("ns/a");
  ASSERT_TRUE(ctrl.ProcessNextReadyItem());
  clock_.Advance(std::chrono::seconds(2000));
  EXPECT_FALSE(ctrl.ProcessNextReadyItem()) << "a terminal error is not retried";
  EXPECT_EQ(terminal.calls, 1);
  EXPECT_EQ(metrics_.Value(kReconcileErrors, {{"controller", "c"}}), 1);

  // An API server's 422 is kInvalidArgument too, but not marked: it is retried with backoff.
  ErroringReconciler invalid(Status::Invalid("422 from the API server"));
  Controller ctrl2({"d", 1, {}}, &invalid, &clock_, &metrics_);
  ctrl2.queue().Add("ns/a");
  ASSERT_TRUE(ctrl2.ProcessNextReadyItem());
  clock_.Advance(5ms);
  ASSERT_TRUE(ctrl2.ProcessNextReadyItem()) << "retried after 5 ms";
  EXPECT_EQ(invalid.calls, 2);
}

class ThrowingReconciler : public Reconciler {
 public:
  Result<ReconcileResult> Reconcile(const ObjectKey&) override {
    if (throws-- > 0) throw std::runtime_error("cannot use value() with null");
    return ReconcileResult{};
  }
  int throws = 1;
};

TEST_F(InformerTest, ReconcilerExceptionIsAnErrorRetriedNotACrash) {
  ThrowingReconciler rec;
  Controller ctrl({"c", 1, {}}, &rec, &clock_, &metrics_);
  ctrl.queue().Add("ns/a");
  ASSERT_TRUE(ctrl.ProcessNextReadyItem());  // would std::terminate without the recovery
  EXPECT_EQ(metrics_.Value(kReconcileErrors, {{"controller", "c"}}), 1);
  clock_.Advance(5ms);
  ASSERT_TRUE(ctrl.ProcessNextReadyItem()) << "retried with backoff";
  EXPECT_EQ(metrics_.Value(kReconcileTotal, {{"controller", "c"}, {"result", "success"}}), 1);
}

TEST_F(InformerTest, WorkersNeverReconcileOneKeyConcurrently) {
  CountingReconciler rec;
  Controller ctrl({"c", 8, {}}, &rec, RealTimeSource::Get(), nullptr);
  ctrl.Start();
  for (int i = 0; i < 200; ++i) {
    ctrl.queue().Add("ns/same");
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  ASSERT_TRUE(Eventually([&] { return ctrl.queue().Len() == 0 && rec.in_flight == 0; }));
  ctrl.Stop();
  EXPECT_EQ(rec.max_in_flight.load(), 1);
  EXPECT_GE(rec.calls.load(), 2);
}

TEST_F(InformerTest, RequeueAfterSchedulesTheKey) {
  struct Later : Reconciler {
    Result<ReconcileResult> Reconcile(const ObjectKey&) override {
      return ReconcileResult{false, std::chrono::milliseconds(30000)};
    }
  } rec;
  Controller ctrl({"c", 1, {}}, &rec, &clock_, nullptr);
  ctrl.queue().Add("ns/a");
  ASSERT_TRUE(ctrl.ProcessNextReadyItem());
  clock_.Advance(29999ms);
  EXPECT_FALSE(ctrl.ProcessNextReadyItem());
  clock_.Advance(1ms);
  EXPECT_TRUE(ctrl.ProcessNextReadyItem());
}

}  // namespace
}  // namespace paratune::kube
