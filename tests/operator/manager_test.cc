#include "operator/manager.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "testing/fakes/fake_kube_client.h"
#include "tests/support/loopback.h"

namespace paratune::kube {
namespace {

using namespace std::chrono_literals;

std::string HttpGet(int port, const std::string& path) {
  const int fd = paratune::testing::ConnectLoopback(port);
  if (fd < 0) return "";
  std::string req = "GET " + path + " HTTP/1.0\r\n\r\n";
  (void)!write(fd, req.data(), req.size());
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  close(fd);
  return out;
}

struct Recorder : Reconciler {
  Result<ReconcileResult> Reconcile(const ObjectKey& key) override {
    std::lock_guard lock(mu);
    keys.push_back(key.String());
    return ReconcileResult{};
  }
  std::mutex mu;
  std::vector<std::string> keys;
};

TEST(ManagerTest, ServesProbesAndMetricsAndReconciles) {
  FakeKubeClient client;
  MetricsRegistry metrics;
  ASSERT_TRUE(client
                  .Create(resources::kTrialRuns, "ns",
                          Json{{"metadata", {{"name", "t1"}, {"namespace", "ns"}}}})
                  .ok());
  ManagerOptions mo;
  mo.probe_address = "127.0.0.1:0";
  mo.metrics_address = "127.0.0.1:0";
  auto mgr = Manager::Create(mo, &client, RealTimeSource::Get(), &metrics);
  ASSERT_TRUE(mgr.ok());
  Recorder rec;
  (*mgr)->NewController({"trialrun", 2, {}}, &rec)->For((*mgr)->GetInformer(resources::kTrialRuns));
  std::stop_source stop;
  std::thread run([&] { EXPECT_TRUE((*mgr)->Run(stop.get_token()).ok()); });
  for (int i = 0; i < 200 && !(*mgr)->ready(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE((*mgr)->ready());
  int port = (*mgr)->probe_port();
  EXPECT_NE(HttpGet(port, "/healthz").find("200 OK"), std::string::npos);
  EXPECT_NE(HttpGet(port, "/readyz").find("200 OK"), std::string::npos);
  for (int i = 0; i < 200; ++i) {
    std::lock_guard lock(rec.mu);
    if (!rec.keys.empty()) break;
    std::this_thread::sleep_for(5ms);
  }
  std::string metrics_text = HttpGet(port, "/metrics");
  EXPECT_NE(metrics_text.find("controller_runtime_reconcile_total{controller=\"trialrun\","
                              "result=\"success\"} 1"),
            std::string::npos)
      << metrics_text;
  EXPECT_NE(metrics_text.find("workqueue_depth{name=\"trialrun\"}"), std::string::npos);
  EXPECT_NE(metrics_text.find("controller_runtime_reconcile_time_seconds_bucket"),
            std::string::npos);
  // The separate metrics listener (what the Deployment's metrics Service targets) serves the
  // same text and nothing else.
  ASSERT_NE((*mgr)->metrics_port(), 0);
  EXPECT_NE(HttpGet((*mgr)->metrics_port(), "/metrics").find("workqueue_depth"), std::string::npos);
  EXPECT_EQ(HttpGet((*mgr)->metrics_port(), "/healthz").find("200 OK"), std::string::npos);
  auto t0 = std::chrono::steady_clock::now();
  stop.request_stop();
  run.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
  EXPECT_EQ(rec.keys, std::vector<std::string>{"ns/t1"});
}

TEST(ManagerTest, OnlyTheLeaderRunsControllers) {
  FakeKubeClient client;
  ASSERT_TRUE(client
                  .Create(resources::kTrialRuns, "ns",
                          Json{{"metadata", {{"name", "t1"}, {"namespace", "ns"}}}})
                  .ok());
  auto make = [&](const std::string& id, Recorder* rec) {
    ManagerOptions mo;
    mo.probe_address = "";
    mo.leader_election = true;
    mo.leader.lease_namespace = "paratune-system";
    mo.leader.identity = id;
    mo.leader.retry_period = 50ms;
    auto m = std::move(Manager::Create(mo, &client, RealTimeSource::Get(), nullptr)).value();
    m->NewController({"trialrun", 1, {}}, rec)->For(m->GetInformer(resources::kTrialRuns));
    return m;
  };
  Recorder ra, rb;
  auto a = make("a", &ra);
  auto b = make("b", &rb);
  std::stop_source sa, sb;
  std::thread ta([&] { (void)a->Run(sa.get_token()); });
  for (int i = 0; i < 200 && !a->leading(); ++i) std::this_thread::sleep_for(10ms);
  ASSERT_TRUE(a->leading());
  std::thread tb([&] { (void)b->Run(sb.get_token()); });
  for (int i = 0; i < 50 && !b->ready(); ++i) std::this_thread::sleep_for(10ms);
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(b->leading());
  EXPECT_TRUE(rb.keys.empty()) << "a standby must not reconcile";
  sa.request_stop();  // a releases the lease on shutdown; b takes over.
  ta.join();
  for (int i = 0; i < 300 && !b->leading(); ++i) std::this_thread::sleep_for(10ms);
  EXPECT_TRUE(b->leading());
  for (int i = 0; i < 200; ++i) {
    std::lock_guard lock(rb.mu);
    if (!rb.keys.empty()) break;
    std::this_thread::sleep_for(5ms);
  }
  sb.request_stop();
  tb.join();
  EXPECT_EQ(rb.keys, std::vector<std::string>{"ns/t1"});
}

}  // namespace
}  // namespace paratune::kube
