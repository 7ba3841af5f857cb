// Informers, leader election and the kubelet stand-in against a real control plane: watches that
// survive an apiserver restart, relist on 410 Gone, leader handover between two managers.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "operator/leader_election.h"
#include "operator/manager.h"
#include "operator/rest_client.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/support/loopback.h"

namespace paratune::kube {
namespace {

using namespace std::chrono_literals;

template <typename F>
bool Eventually(F f, std::chrono::milliseconds timeout = 30000ms) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return f();
}

Json ConfigMap(const std::string& name) {
  // Labelled: namespaces also hold the controller-manager's kube-root-ca.crt ConfigMap.
  return Json{{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", name}, {"labels", {{"paratune-test", "yes"}}}}}};
}

TEST(RuntimeInformerTest, WatchSurvivesApiserverRestart) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  std::string ns = cluster->NewNamespace("restart");
  MetricsRegistry metrics;
  RestConfig cfg = cluster->AdminConfig();
  auto client = std::move(RestKubeClient::Create(cfg, RealTimeSource::Get(), &metrics)).value();
  ReflectorOptions ro;
  ro.ns = ns;
  ro.label_selector = "paratune-test";
  ro.min_backoff = 200ms;
  ro.max_backoff = 1000ms;
  Informer inf(client.get(), resources::kConfigMaps, ro, RealTimeSource::Get(), &metrics);
  std::jthread t([&](std::stop_token st) { inf.Run(st); });
  ASSERT_TRUE(inf.WaitForSync({}, 10000ms));
  ASSERT_TRUE(cluster->Admin()->Create(resources::kConfigMaps, ns, ConfigMap("before")).ok());
  ASSERT_TRUE(Eventually([&] { return inf.Get({ns, "before"}) != nullptr; }));
  ASSERT_TRUE(cluster->RestartApiserver().ok());
  ASSERT_TRUE(Eventually([&] {
    return cluster->Admin()->Create(resources::kConfigMaps, ns, ConfigMap("after")).ok();
  }));
  EXPECT_TRUE(Eventually([&] {
    return inf.Get({ns, "after"}) != nullptr;
  })) << "the informer must resume watching after the restart";
  EXPECT_GE(inf.reflector().watch_restarts(), 1);
  EXPECT_GE(metrics.Value(kWatchRestarts, {{"resource", "configmaps"}}), 1);
  EXPECT_EQ(inf.Size(), 2u);
}

TEST(RuntimeInformerTest, TooOldResourceVersionIsGone) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  std::string ns = cluster->NewNamespace("gone");
  KubeClient* c = cluster->Admin();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c->Create(resources::kConfigMaps, ns, ConfigMap("c" + std::to_string(i))).ok());
  }
  // Watching from a version older than the watch cache window answers 410 Gone.
  WatchOptions wo;
  wo.resource_version = "1";
  std::stop_source stop;
  Status s = c->Watch(
      resources::kConfigMaps, ns, wo, [](const WatchEvent&) { return true; }, stop.get_token());
  EXPECT_EQ(s.code(), StatusCode::kGone) << StatusText(s);
  // The reflector's answer to Gone is a relist; an informer started now lists everything.
  ReflectorOptions ro;
  ro.ns = ns;
  ro.label_selector = "paratune-test";
  Informer inf(c, resources::kConfigMaps, ro, RealTimeSource::Get(), nullptr);
  std::jthread t([&](std::stop_token st) { inf.Run(st); });
  ASSERT_TRUE(inf.WaitForSync({}, 10000ms));
  EXPECT_EQ(inf.Size(), 3u);
}

TEST(RuntimeInformerTest, LeaderHandoverBetweenTwoManagers) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  std::string ns = cluster->NewNamespace("leader");
  auto make = [&](const std::string& id) {
    ManagerOptions mo;
    mo.probe_address = "";
    mo.leader_election = true;
    mo.leader.lease_namespace = ns;
    mo.leader.lease_name = "paratune-operator";
    mo.leader.identity = id;
    return std::move(Manager::Create(mo, cluster->Admin(), RealTimeSource::Get(), nullptr)).value();
  };
  auto a = make("manager-a");
  auto b = make("manager-b");
  std::stop_source sa, sb;
  std::thread ta([&] { (void)a->Run(sa.get_token()); });
  ASSERT_TRUE(Eventually([&] { return a->leading(); }, 20000ms));
  std::thread tb([&] { (void)b->Run(sb.get_token()); });
  std::this_thread::sleep_for(3000ms);  // more than a retry period.
  EXPECT_FALSE(b->leading()) << "only one leader at a time";
  auto lease = cluster->Admin()->Get(resources::kLeases, ns, "paratune-operator");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "manager-a");
  EXPECT_EQ((*lease)["spec"]["leaseDurationSeconds"], 15);
  sa.request_stop();  // graceful: a releases the Lease.
  ta.join();
  EXPECT_TRUE(Eventually([&] { return b->leading(); }, 10000ms)) << "b takes over";
  lease = cluster->Admin()->Get(resources::kLeases, ns, "paratune-operator");
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "manager-b");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);
  sb.request_stop();
  tb.join();
}

TEST(RuntimeInformerTest, CrashedLeaderIsReplacedAfterLeaseExpiry) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  std::string ns = cluster->NewNamespace("expiry");
  LeaderElectionOptions o;
  o.lease_namespace = ns;
  o.lease_name = "paratune-operator";
  o.identity = "crashed";
  LeaderElector crashed(cluster->Admin(), o, RealTimeSource::Get(), nullptr);
  ASSERT_TRUE(crashed.TryAcquireOrRenew());  // then never renews again.
  o.identity = "successor";
  LeaderElector successor(cluster->Admin(), o, RealTimeSource::Get(), nullptr);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(successor.TryAcquireOrRenew());
  ASSERT_TRUE(Eventually([&] { return successor.TryAcquireOrRenew(); }, 25000ms));
  auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 14s) << "must wait out the 15 s lease";
  EXPECT_LE(waited, 20s);
}

// A fresh namespace for pods on the simulated nodes, or "" when paratune-kubelet-sim runs no
// nodes (not built).
std::string KubeletNamespace(testing::LocalCluster* cluster, const std::string& prefix) {
  KubeClient* c = cluster->Admin();
  if (!Eventually([&] { return c->Get(resources::kNodes, "", "paratune-gpu-0").ok(); }, 5000ms)) {
    return "";
  }
  return cluster->NewNamespace(prefix);
}

// Pod admission needs the namespace's default ServiceAccount (its token): true once it exists.
bool DefaultServiceAccountExists(KubeClient* c, const std::string& ns) {
  return Eventually([&] { return c->Get(resources::kServiceAccounts, ns, "default").ok(); });
}

TEST(RuntimeInformerTest, KubeletSimRunsPodsAndRefusesOtherImages) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  KubeClient* c = cluster->Admin();
  const std::string ns = KubeletNamespace(cluster, "kubelet");
  if (ns.empty())
    GTEST_FAIL() << "no simulated node: is paratune-kubelet-sim running (built in "
                 << PARATUNE_BINARY_DIR << ")?";
  ASSERT_TRUE(DefaultServiceAccountExists(c, ns));
  auto pod = [&](const std::string& name, const Json& container) {
    Json c2 = container;
    c2["name"] = "main";
    return Json{{"apiVersion", "v1"},
                {"kind", "Pod"},
                {"metadata", {{"name", name}}},
                {"spec",
                 {{"restartPolicy", "Never"},
                  {"nodeSelector", {{"cloud.google.com/gke-accelerator", "nvidia-h100-80gb"}}},
                  {"containers", Json::array({c2})}}}};
  };
  // Pod admission needs the namespace's default ServiceAccount token: retry until it exists.
  auto create = [&](const Json& p) {
    return Eventually([&] { return c->Create(resources::kPods, ns, p).ok(); });
  };
  ASSERT_TRUE(create(pod("runs", {{"image", "paratune:dev"},
                                  {"command", Json::array({"paratune", "$(ARG)"})},
                                  {"env", Json::array({{{"name", "ARG"}, {"value", "--help"}}})},
                                  {"terminationMessagePolicy", "FallbackToLogsOnError"}})));
  ASSERT_TRUE(create(pod("other", {{"image", "nginx:1.25"}})));
  auto phase = [&](const std::string& name) {
    auto p = c->Get(resources::kPods, ns, name);
    return p.ok() ? (*p).value("status", Json::object()).value("phase", "") : "";
  };
  EXPECT_TRUE(
      Eventually([&] { return phase("runs") == "Succeeded" || phase("runs") == "Failed"; }));
  Json runs = *c->Get(resources::kPods, ns, "runs");
  EXPECT_TRUE(runs["status"]["containerStatuses"][0]["state"]["terminated"].contains("exitCode"));
  auto log = c->GetPodLog(ns, "runs");  // proxied by the API server to the stand-in.
  ASSERT_TRUE(log.ok()) << StatusText(log.status());
  EXPECT_FALSE(log->empty());
  EXPECT_TRUE(Eventually([&] {
    auto p = c->Get(resources::kPods, ns, "other");
    return p.ok() && (*p)["status"].value("containerStatuses", Json::array()).size() == 1;
  }));
  Json other = *c->Get(resources::kPods, ns, "other");
  Json waiting = other["status"]["containerStatuses"][0]["state"]["waiting"];
  EXPECT_EQ(waiting["reason"], "ErrImagePull");
  EXPECT_NE(waiting["message"].get<std::string>().find("nginx:1.25"), std::string::npos);
  ASSERT_TRUE(c->Delete(resources::kPods, ns, "other").ok());
  EXPECT_TRUE(Eventually([&] {
    return c->Get(resources::kPods, ns, "other").status().code() == StatusCode::kNotFound;
  })) << "the kubelet stand-in finishes graceful deletion";
}

// The stand-in gives a completion index only to the pods of a Job of several pods (what the
// 1.20 server lets it tell of an Indexed Job), as the 1.21+ Job controller does: a single-pod
// Job's pod gets no annotation and costs no extra write.
TEST(RuntimeInformerTest, KubeletSimIndexesOnlyThePodsOfAJobOfSeveral) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  KubeClient* c = cluster->Admin();
  const std::string ns = KubeletNamespace(cluster, "indexed");
  if (ns.empty())
    GTEST_FAIL() << "no simulated node: is paratune-kubelet-sim running (built in "
                 << PARATUNE_BINARY_DIR << ")?";
  ASSERT_TRUE(DefaultServiceAccountExists(c, ns));
  auto job = [](const std::string& name, int pods) {
    Json container{{"name", "main"},
                   {"image", "paratune:dev"},
                   {"command", Json::array({"paratune", "--help"})}};
    Json spec{{"restartPolicy", "Never"},
              {"nodeSelector", {{"cloud.google.com/gke-accelerator", "nvidia-h100-80gb"}}},
              {"containers", Json::array({container})}};
    return Json{{"apiVersion", "batch/v1"},
                {"kind", "Job"},
                {"metadata", {{"name", name}}},
                {"spec",
                 {{"completions", pods},
                  {"parallelism", pods},
                  {"completionMode", "Indexed"},  // dropped by 1.20; kept by 1.21+
                  {"backoffLimit", 0},
                  {"template", {{"spec", spec}}}}}};
  };
  ASSERT_TRUE(c->Create(resources::kJobs, ns, job("one", 1)).ok());
  ASSERT_TRUE(c->Create(resources::kJobs, ns, job("two", 2)).ok());
  // The pods of `name` once all `n` have finished: their index annotations ("" when none).
  auto indices = [&](const std::string& name, size_t n) {
    std::vector<std::string> out;
    ListOptions lo;
    lo.label_selector = "job-name=" + name;
    auto list = c->List(resources::kPods, ns, lo);
    if (!list.ok()) return out;
    for (const Json& p : list->items) {
      const std::string phase = p["status"].value("phase", "");
      if (phase != "Succeeded" && phase != "Failed") return std::vector<std::string>{};
      out.push_back(p["metadata"]
                        .value("annotations", Json::object())
                        .value("batch.kubernetes.io/job-completion-index", ""));
    }
    std::sort(out.begin(), out.end());
    return out.size() == n ? out : std::vector<std::string>{};
  };
  std::vector<std::string> one, two;
  EXPECT_TRUE(Eventually([&] { return !(one = indices("one", 1)).empty(); }, 60000ms));
  EXPECT_TRUE(Eventually([&] { return !(two = indices("two", 2)).empty(); }, 60000ms));
  EXPECT_EQ(one, std::vector<std::string>{""}) << "a single-pod Job's pod has no index";
  EXPECT_EQ(two, (std::vector<std::string>{"0", "1"}));
}

// One TLS request to the kubelet stand-in's log port. With `hang_up`, the request is cut short
// and the connection reset before the answer is read (what the API server does to a proxied
// pod-log read whose client, an operator being killed, went away); otherwise the status line of
// the answer.
std::string KubeletRequest(int port, bool hang_up) {
  const int fd = paratune::testing::ConnectLoopback(port);
  if (fd < 0) return "connection refused";
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  SSL_set_fd(ssl, fd);
  std::string answer = "no TLS";
  if (SSL_connect(ssl) == 1) {
    const std::string req = hang_up ? "GET /containerLogs/a/b/c HTTP/1.1\r\nHost: x\r\n"
                                    : "GET /containerLogs/a/b/c HTTP/1.1\r\nHost: x\r\n\r\n";
    SSL_write(ssl, req.data(), static_cast<int>(req.size()));
    answer.clear();
    if (hang_up) {
      linger reset{1, 0};
      setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
    } else {
      char buf[256];
      int n = SSL_read(ssl, buf, sizeof(buf));
      if (n > 0) answer.assign(buf, static_cast<size_t>(n));
      answer = answer.substr(0, answer.find("\r\n"));
    }
  }
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  close(fd);
  return answer;
}

TEST(RuntimeInformerTest, KubeletSimSurvivesLogReadersThatHangUp) {
  // Regression: SIGPIPE from writing the answer to a reset connection killed the stand-in
  // silently, and every later trial of the run stayed Pending or Running.
  PARATUNE_REQUIRE_CLUSTER(cluster);
  KubeClient* c = cluster->Admin();
  Result<Json> node = Status::NotFound("not tried");
  if (!Eventually([&] { return (node = c->Get(resources::kNodes, "", "paratune-gpu-0")).ok(); },
                  5000ms)) {
    GTEST_FAIL() << "node paratune-gpu-0 never appeared: is paratune-kubelet-sim running (built in "
                 << PARATUNE_BINARY_DIR << ")?";
  }
  const int port = (*node)["status"]["daemonEndpoints"]["kubeletEndpoint"].value("Port", 0);
  ASSERT_GT(port, 0);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(KubeletRequest(port, /*hang_up=*/true), "") << i;
    std::this_thread::sleep_for(200ms);  // the stand-in answers into the reset connection.
  }
  EXPECT_EQ(KubeletRequest(port, /*hang_up=*/false), "HTTP/1.1 404 Not Found");
}

}  // namespace
}  // namespace paratune::kube
