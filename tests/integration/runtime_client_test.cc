// RestKubeClient against a real kube-apiserver: CRUD, conflicts, patches, selectors, pagination,
// RBAC denial, rate limiting and watches.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "operator/metrics.h"
#include "operator/rest_client.h"
#include "tests/integration/cluster_fixture.h"

namespace paratune::kube {
namespace {

Json ConfigMap(const std::string& name, const Json& data, const Json& labels = Json::object()) {
  return Json{{"apiVersion", "v1"},
              {"kind", "ConfigMap"},
              {"metadata", {{"name", name}, {"labels", labels}}},
              {"data", data}};
}

TEST(RuntimeClientTest, CreateGetUpdateDelete) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  KubeClient* c = cluster->Admin();
  std::string ns = cluster->NewNamespace("crud");
  auto created = c->Create(resources::kConfigMaps, ns, ConfigMap("a", {{"k", "1"}}));
  ASSERT_TRUE(created.ok()) << StatusText(created.status());
  EXPECT_FALSE(UidOf(*created).empty());
  EXPECT_EQ(c->Create(resources::kConfigMaps, ns, ConfigMap("a", {})).status().code(),
            StatusCode::kAlreadyExists);
  Json obj = *c->Get(resources::kConfigMaps, ns, "a");
  obj["data"]["k"] = "2";
  auto updated = c->Update(resources::kConfigMaps, obj);
  ASSERT_TRUE(updated.ok()) << StatusText(updated.status());
  EXPECT_EQ((*c->Get(resources::kConfigMaps, ns, "a"))["data"]["k"], "2");
  ASSERT_TRUE(c->Delete(resources::kConfigMaps, ns, "a").ok());
  EXPECT_EQ(c->Get(resources::kConfigMaps, ns, "a").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(c->Delete(resources::kConfigMaps, ns, "a").code(), StatusCode::kNotFound);
}

TEST(RuntimeClientTest, StaleResourceVersionIsAConflict) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  KubeClient* c = cluster->Admin();
  std::string ns = cluster->NewNamespace("conflict");
  Json v1 = *c->Create(resources::kConfigMaps, ns, ConfigMap("a", {{"k", "1"}}));
  Json v2 = v1;
  v2["data"]["k"] = "2";
  ASSERT_TRUE(c->Update(resources::kConfigMaps, v2).ok());
  v1["data"]["k"] = "3";
  auto stale = c->Update(resources::kConfigMaps, v1);
  EXPECT_EQ(stale.status().code(), StatusCode::kConflict) << StatusText(stale.status());
  DeleteOptions pre;
  pre.precondition_resource_version = ResourceVersionOf(v1);
  EXPECT_EQ(c->Delete(resources::kConfigMaps, ns, "a", pre).code(), StatusCode::kConflict);
}

TEST(RuntimeClientTest, PatchesAndServerSideApply) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  KubeClient* c = cluster->Admin();
  std::string ns = cluster->NewNamespace("patch");
  ASSERT_TRUE(c->Create(resources::kConfigMaps, ns, ConfigMap("a", {{"x", "1"}})).ok());
  auto merged =
      c->Patch(resources::kConfigMaps, ns, "a", PatchType::kMerge, Json{{"data", {{"y", "2"}}}});
  ASSERT_TRUE(merged.ok()) << StatusText(merged.status());
  EXPECT_EQ((*merged)["data"], (Json{{"x", "1"}, {"y", "2"}}));
  auto jp = c->Patch(resources::kConfigMaps, ns, "a", PatchType::kJson,
                     Json::array({{{"op", "replace"}, {"path", "/data/x"}, {"value", "9"}}}));
  ASSERT_TRUE(jp.ok()) << StatusText(jp.status());
  EXPECT_EQ((*jp)["data"]["x"], "9");
  WriteOptions wo;
  wo.field_manager = "paratune-test";
  auto applied = c->Patch(resources::kConfigMaps, ns, "b", PatchType::kApply,
                          ConfigMap("b", {{"z", "3"}}), wo);
  ASSERT_TRUE(applied.ok()) << StatusText(applied.status());
  EXPECT_EQ((*applied)["data"]["z"], "3");
  auto bad = c->Patch(resources::kConfigMaps, ns, "a", PatchType::kJson,
                      Json::array({{{"op", "remove"}, {"path", "/nope/x"}}}));
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument) << StatusText(bad.status());
}

TEST(RuntimeClientTest, SelectorsAndPagination) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  KubeClient* c = cluster->Admin();
  std::string ns = cluster->NewNamespace("list");
  for (int i = 0; i < 7; ++i) {
    ASSERT_TRUE(
        c->Create(resources::kConfigMaps, ns,
                  ConfigMap("cm" + std::to_string(i), {}, {{"parity", i % 2 ? "odd" : "even"}}))
            .ok());
  }
  ListOptions lo;
  lo.label_selector = "parity=odd";
  EXPECT_EQ(c->List(resources::kConfigMaps, ns, lo)->items.size(), 3u);
  lo = {};
  lo.field_selector = "metadata.name=cm4";
  EXPECT_EQ(c->List(resources::kConfigMaps, ns, lo)->items.size(), 1u);
  lo = {};
  lo.label_selector = "parity";
  lo.limit = 3;
  size_t total = 0;
  int pages = 0;
  do {
    auto page = c->List(resources::kConfigMaps, ns, lo);
    ASSERT_TRUE(page.ok()) << StatusText(page.status());
    total += page->items.size();
    lo.continue_token = page->continue_token;
    ++pages;
  } while (!lo.continue_token.empty());
  EXPECT_EQ(total, 7u);
  EXPECT_EQ(pages, 3);
}

TEST(RuntimeClientTest, RbacDenialIsPermissionDenied) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  auto nobody = RestKubeClient::Create(cluster->NobodyConfig(), RealTimeSource::Get(), nullptr);
  ASSERT_TRUE(nobody.ok());
  auto r = (*nobody)->List(resources::kPods, "default", {});
  EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << StatusText(r.status());
  EXPECT_NE(r.status().message().find("forbidden"), std::string::npos);
  RestConfig bad = cluster->AdminConfig();
  bad.token = "not-a-token";
  auto anon = RestKubeClient::Create(bad, RealTimeSource::Get(), nullptr);
  EXPECT_EQ((*anon)->List(resources::kPods, "default", {}).status().code(),
            StatusCode::kUnauthenticated);
}

// The real 1.20 kube-apiserver, whose priority-and-fairness filter is on (hack/local-cluster.sh):
// its answers carry X-Kubernetes-PF-FlowSchema-UID, so the client drops its token bucket.
TEST(RuntimeClientTest, TheServersPriorityAndFairnessIsSeenInItsAnswers) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  RestConfig cfg = cluster->AdminConfig();
  cfg.qps = 1;
  cfg.burst = 1;
  MetricsRegistry metrics;
  auto c = RestKubeClient::Create(cfg, RealTimeSource::Get(), &metrics);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE((*c)->server_flow_control()) << "nothing answered yet";
  ASSERT_TRUE((*c)->List(resources::kNamespaces, "", {}).ok());
  EXPECT_TRUE((*c)->server_flow_control());
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*c)->List(resources::kNamespaces, "", {}).ok());
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(secs, 3.0) << "5 requests at 1 qps: the client-side bucket still applied";
  EXPECT_EQ(metrics.Value(kRestServerFlowControl, {}), 1);
}

TEST(RuntimeClientTest, ClientSideRateLimit) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  RestConfig cfg = cluster->AdminConfig();
  cfg.qps = 10;
  cfg.burst = 2;
  // As --kube-api-qps/--kube-api-burst do: without it, a server with API Priority and Fairness
  // (the local 1.20 one has it on) is trusted to push back with 429 and no client-side bucket
  // applies.
  cfg.rate_limit_always = true;
  MetricsRegistry metrics;
  auto c = RestKubeClient::Create(cfg, RealTimeSource::Get(), &metrics);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 12; ++i) ASSERT_TRUE((*c)->List(resources::kNamespaces, "", {}).ok());
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(secs, 0.9) << "12 requests at 10 qps with burst 2 need about 1 s";
  EXPECT_EQ(metrics.HistogramCount(kRestLatency,
                                   {{"verb", "LIST"}, {"resource", "namespaces"}, {"code", "200"}}),
            12);
}

TEST(RuntimeClientTest, WatchSeesChangesAndStopsOnRequest) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  KubeClient* c = cluster->Admin();
  std::string ns = cluster->NewNamespace("watch");
  auto list = c->List(resources::kConfigMaps, ns, {});
  std::vector<std::string> seen;
  std::mutex mu;
  std::stop_source stop;
  Status result;
  std::thread watcher([&] {
    WatchOptions wo;
    wo.resource_version = list->resource_version;
    wo.label_selector = "paratune-test";  // not the controller-manager's kube-root-ca.crt.
    result = c->Watch(
        resources::kConfigMaps, ns, wo,
        [&](const WatchEvent& ev) {
          std::lock_guard lock(mu);
          if (ev.type != WatchEvent::Type::kBookmark) {
            seen.push_back(std::string(WatchEventTypeName(ev.type)) + " " + NameOf(ev.object));
          }
          return true;
        },
        stop.get_token());
  });
  ASSERT_TRUE(
      c->Create(resources::kConfigMaps, ns, ConfigMap("w", {}, {{"paratune-test", "yes"}})).ok());
  ASSERT_TRUE(
      c->Patch(resources::kConfigMaps, ns, "w", PatchType::kMerge, Json{{"data", {{"a", "b"}}}})
          .ok());
  ASSERT_TRUE(c->Delete(resources::kConfigMaps, ns, "w").ok());
  for (int i = 0; i < 100; ++i) {
    {
      std::lock_guard lock(mu);
      if (seen.size() >= 3) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto t0 = std::chrono::steady_clock::now();
  stop.request_stop();
  watcher.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  EXPECT_TRUE(result.ok()) << StatusText(result);
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED w", "MODIFIED w", "DELETED w"}));
}

TEST(RuntimeClientTest, PodLogOfMissingPodIsNotFound) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  auto r = cluster->Admin()->GetPodLog("default", "no-such-pod");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << StatusText(r.status());
}

}  // namespace
}  // namespace paratune::kube
