// RestKubeClient against a scripted HTTP server on loopback: flow-control detection (the client
// drops its token bucket once the server shows API Priority and Fairness), 429 + Retry-After
// retries, and request counts by verb and resource on /metrics.
#include "operator/rest_client.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/time_source.h"

namespace paratune::kube {
namespace {

struct Scripted {
  int code = 200;
  std::string headers;  // extra header lines, each ending in \r\n
  std::string body = R"({"kind":"TrialRun","metadata":{"name":"t"}})";
};

// Answers each connection with the next scripted response (the last one repeats).
class ScriptedServer {
 public:
  explicit ScriptedServer(std::deque<Scripted> script) : script_(std::move(script)) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    socklen_t len = sizeof(addr);
    getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    listen(fd_, 16);
    thread_ = std::thread([this] { Serve(); });
  }
  ~ScriptedServer() {
    stopping_ = true;
    shutdown(fd_, SHUT_RDWR);
    close(fd_);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int served() const { return served_.load(); }

 private:
  void Serve() {
    while (!stopping_) {
      int c = accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string req;
      char buf[4096];
      while (req.find("\r\n\r\n") == std::string::npos) {
        ssize_t got = read(c, buf, sizeof(buf));
        if (got <= 0) break;
        req.append(buf, static_cast<size_t>(got));
      }
      Scripted r;
      {
        std::lock_guard lock(mu_);
        r = script_.front();
        if (script_.size() > 1) script_.pop_front();
      }
      std::string out = "HTTP/1.1 " + std::to_string(r.code) +
                        " X\r\nContent-Type: " + "application/json\r\nConnection: close\r\n" +
                        r.headers + "Content-Length: " + std::to_string(r.body.size()) +
                        "\r\n\r\n" + r.body;
      ++served_;  // before the answer: the client may check served() as soon as it has it.
      (void)!write(c, out.data(), out.size());
      close(c);
    }
  }
  std::mutex mu_;
  std::deque<Scripted> script_;
  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> served_{0};
  std::thread thread_;
};

const char kApf[] =
    "X-Kubernetes-PF-FlowSchema-UID: 1234\r\nX-Kubernetes-PF-PriorityLevel-UID: 5\r\n";

std::unique_ptr<RestKubeClient> Client(const std::string& url, MetricsRegistry* metrics,
                                       double qps = 50, int burst = 1, int retries = 5,
                                       TimeSource* time = RealTimeSource::Get()) {
  RestConfig cfg;
  cfg.server = url;
  cfg.qps = qps;
  cfg.burst = burst;
  cfg.max_retries = retries;
  auto c = RestKubeClient::Create(cfg, time, metrics);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(*c);
}

// A 1.20 server started with --enable-priority-and-fairness=false still serves the
// flowcontrol.apiserver.k8s.io group; only the filter's response header says it limits.
TEST(RestClientTest, ServingTheFlowcontrolGroupIsNotPriorityAndFairness) {
  ScriptedServer server({{200, "", R"({"kind":"APIGroup","versions":[{"version":"v1beta1"}]})"}});
  MetricsRegistry metrics;
  auto c = Client(server.url(), &metrics);
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(c->Get(resources::kTrialRuns, "ns", "t").ok());
  }
  EXPECT_FALSE(c->server_flow_control());
  EXPECT_EQ(server.served(), 6) << "no discovery request of its own";
  EXPECT_GT(metrics.Value(kRestThrottleSeconds, {}), 0) << "no APF: 50 qps must apply";
}

TEST(RestClientTest, NoClientSideLimitOnceTheServerHasPriorityAndFairness) {
  ScriptedServer apf({{200, kApf}});
  MetricsRegistry with;
  auto c = Client(apf.url(), &with);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(c->Get(resources::kTrialRuns, "ns", "t").ok());
  EXPECT_TRUE(c->server_flow_control());
  EXPECT_EQ(with.Value(kRestServerFlowControl, {}), 1);
  EXPECT_EQ(with.Value(kRestThrottleSeconds, {}), 0) << "the bucket still throttled";

  ScriptedServer plain({{200, ""}});
  MetricsRegistry without;
  auto p = Client(plain.url(), &without);
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(p->Get(resources::kTrialRuns, "ns", "t").ok());
  EXPECT_FALSE(p->server_flow_control());
  EXPECT_GT(without.Value(kRestThrottleSeconds, {}), 0) << "no APF: 50 qps must apply";
}

TEST(RestClientTest, TooManyRequestsIsRetriedAfterRetryAfter) {
  ScriptedServer server(
      {{429, std::string(kApf) + "Retry-After: 1\r\n", R"({"code":429})"}, {200, kApf}});
  MetricsRegistry metrics;
  FakeTimeSource time(FakeSleep::kAdvancesClock);  // the client waits on its clock, not ours
  auto c = Client(server.url(), &metrics, /*qps=*/0, 1, 5, &time);
  auto got = c->Get(resources::kTrialRuns, "ns", "t");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(server.served(), 2);
  EXPECT_EQ(time.sleeps(), std::vector<Millis>{Millis(1000)}) << "Retry-After: 1";
  EXPECT_EQ(metrics.Value(kRestRetries, {{"verb", "GET"}}), 1);
  EXPECT_EQ(metrics.Value(
                kRestRequests,
                {{"verb", "GET"}, {"resource", "trialruns.tuning.paratune.dev"}, {"code", "429"}}),
            1);
}

TEST(RestClientTest, RetriesAreBoundedAndOtherErrorsAreNotRetried) {
  ScriptedServer busy({{429, "", R"({"message":"slow down"})"}});
  MetricsRegistry metrics;
  FakeTimeSource time(FakeSleep::kAdvancesClock);
  auto c = Client(busy.url(), &metrics, /*qps=*/0, 1, /*retries=*/2, &time);
  auto got = c->Get(resources::kTrialRuns, "ns", "t");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(busy.served(), 3);
  // No Retry-After: the backoff, doubling from 250 ms.
  EXPECT_EQ(time.sleeps(), (std::vector<Millis>{Millis(250), Millis(500)}));

  ScriptedServer broken({{500, "", R"({"message":"boom"})"}});
  auto b = Client(broken.url(), &metrics, /*qps=*/0);
  EXPECT_FALSE(b->Get(resources::kTrialRuns, "ns", "t").ok());
  EXPECT_EQ(broken.served(), 1) << "a 5xx without Retry-After is the caller's to retry";
}

TEST(RestClientTest, CountsRequestsByVerbAndResource) {
  ScriptedServer server({{200, kApf}});
  MetricsRegistry metrics;
  auto c = Client(server.url(), &metrics);
  ASSERT_TRUE(c->Patch(resources::kTrialRuns, "ns", "t", PatchType::kMerge,
                       Json{{"status", {{"phase", "Running"}}}}, {}, "status")
                  .ok());
  KubeClient* kc = c.get();  // RestKubeClient::Create (the factory) hides the verb
  ASSERT_TRUE(kc->Create(resources::kJobs, "ns", Json{{"metadata", {{"name", "t"}}}}).ok());
  EXPECT_EQ(metrics.Value(kRestRequests, {{"verb", "PATCH"},
                                          {"resource", "trialruns.tuning.paratune.dev/status"},
                                          {"code", "200"}}),
            1);
  EXPECT_EQ(
      metrics.Value(kRestRequests, {{"verb", "POST"}, {"resource", "jobs.batch"}, {"code", "200"}}),
      1);
  EXPECT_NE(metrics.Render().find("resource=\"jobs.batch\""), std::string::npos);
}

}  // namespace
}  // namespace paratune::kube
