#include "operator/rest_config.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "base/time_source.h"
#include "operator/rest_request.h"

namespace paratune::kube {
namespace {

constexpr char kKubeconfig[] = R"(apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: aGVsbG8=   # "hello"
    server: https://127.0.0.1:6443
  name: local
- cluster:
    server: "https://other:443"
    insecure-skip-tls-verify: true
  name: other
contexts:
- context:
    cluster: local
    user: admin
  name: local
- context: {cluster: other, user: exec-user}
  name: other
current-context: local
users:
- name: admin
  user:
    token: 's3cr''et'
- name: exec-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      command: /bin/echo
      args:
      - '{"status": {"token": "from-exec"}}'
)";

std::string WriteTemp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(RestConfigTest, LoadsCurrentContextTokenAndCa) {
  auto cfg = LoadKubeconfig(WriteTemp("kc1", kKubeconfig));
  ASSERT_TRUE(cfg.ok()) << StatusText(cfg.status());
  EXPECT_EQ(cfg->server, "https://127.0.0.1:6443");
  EXPECT_EQ(cfg->token, "s3cr'et");
  EXPECT_EQ(cfg->ca_pem, "hello");
  EXPECT_FALSE(cfg->insecure_skip_tls_verify);
}

TEST(RestConfigTest, NamedContextWithExecPluginAndInsecure) {
  auto cfg = LoadKubeconfig(WriteTemp("kc2", kKubeconfig), "other");
  ASSERT_TRUE(cfg.ok()) << StatusText(cfg.status());
  EXPECT_TRUE(cfg->insecure_skip_tls_verify);
  EXPECT_EQ(cfg->exec.command, "/bin/echo");
  FakeTimeSource clock;
  EXPECT_EQ(*TokenSource(*cfg, &clock).Current(), "from-exec");
}

TEST(RestConfigTest, ErrorsNameTheField) {
  auto missing = LoadKubeconfig(WriteTemp("kc3", kKubeconfig), "nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("contexts"), std::string::npos);
  auto bad = LoadKubeconfig(WriteTemp("kc4", "clusters:\n  - a: b\n   c: d\n"));
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line"), std::string::npos);
}

TEST(RestConfigTest, TokenFileIsReReadOnRotation) {
  RestConfig cfg;
  cfg.token_file = WriteTemp("token", "first\n");
  FakeTimeSource clock;
  TokenSource tokens(cfg, &clock);
  EXPECT_EQ(*tokens.Current(), "first");
  WriteTemp("token", "second");
  EXPECT_EQ(*tokens.Current(), "second");
}

// The exec plugin's token is kept for its lifetime on the clock the client is given, and the
// plugin runs again once that has passed; each client keeps its own.
TEST(RestConfigTest, ExecTokenExpiresOnTheInjectedClock) {
  // Per process: another checkout's suite may run this test at the same time.
  const std::string tag = std::to_string(getpid());
  const std::string count = ::testing::TempDir() + "/exec_count_" + tag;
  std::remove(count.c_str());
  const std::string script =
      WriteTemp("exec_plugin_" + tag + ".sh",
                "#!/bin/sh\nn=$(cat " + count + " 2>/dev/null || echo 0)\nn=$((n+1))\necho $n > " +
                    count + "\nprintf '{\"status\":{\"token\":\"t%s\"}}' $n\n");
  ASSERT_EQ(chmod(script.c_str(), 0755), 0);
  RestConfig cfg;
  cfg.exec.command = script;
  FakeTimeSource clock;
  TokenSource tokens(cfg, &clock);
  EXPECT_EQ(*tokens.Current(), "t1");
  clock.Advance(TokenSource::kExecTokenLifetime);
  EXPECT_EQ(*tokens.Current(), "t1") << "still within its lifetime: no second run";
  clock.Advance(Millis(1));
  EXPECT_EQ(*tokens.Current(), "t2") << "expired on the injected clock: the plugin runs again";
  EXPECT_EQ(*tokens.Current(), "t2");
  FakeTimeSource other_clock;
  EXPECT_EQ(*TokenSource(cfg, &other_clock).Current(), "t3") << "no cache shared between clients";
}

TEST(RestConfigTest, InClusterConfigFromServiceAccountDir) {
  std::string dir = ::testing::TempDir();
  WriteTemp("token", "sa-token");
  WriteTemp("ca.crt", "CA");
  EXPECT_EQ(InClusterConfig(ConfigEnvironment{}, dir).status().code(), StatusCode::kNotFound)
      << "outside a pod there is no service host";
  ConfigEnvironment env;
  env.service_host = "10.0.0.1";
  env.service_port = "443";
  auto cfg = InClusterConfig(env, dir);
  ASSERT_TRUE(cfg.ok()) << StatusText(cfg.status());
  EXPECT_EQ(cfg->server, "https://10.0.0.1:443");
  EXPECT_EQ(cfg->ca_pem, "CA");
  FakeTimeSource clock;
  EXPECT_EQ(*TokenSource(*cfg, &clock).Current(), "sa-token");
}

TEST(RestRequestTest, PathsForCoreGroupsAndSubresources) {
  EXPECT_EQ(ResourcePath(resources::kPods, "ns", "p", "log"), "/api/v1/namespaces/ns/pods/p/log");
  EXPECT_EQ(ResourcePath(resources::kNodes, "ignored", "n"), "/api/v1/nodes/n");
  EXPECT_EQ(ResourcePath(resources::kTrialRuns, "", ""),
            "/apis/tuning.paratune.dev/v1alpha1/trialruns");
}

TEST(RestRequestTest, HttpCodesMapToStatuses) {
  EXPECT_EQ(StatusFromResponse(404, R"({"message":"x not found"})", false).message(),
            "x not found");
  EXPECT_EQ(StatusFromResponse(409, "{}", true).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(StatusFromResponse(409, "{}", false).code(), StatusCode::kConflict);
  EXPECT_EQ(StatusFromResponse(410, "{}", false).code(), StatusCode::kGone);
  EXPECT_EQ(StatusFromResponse(422, "{}", false).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusFromResponse(429, "{}", false).code(), StatusCode::kUnavailable);
  EXPECT_EQ(StatusFromResponse(503, "oops", false).code(), StatusCode::kUnavailable);
  EXPECT_EQ(StatusFromResponse(403, "{}", false).code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(StatusFromResponse(401, "{}", false).code(), StatusCode::kUnauthenticated);
}

TEST(RestRequestTest, WatchLinesSplitAcrossChunks) {
  LineSplitter lines;
  std::vector<std::string> names;
  WatchHandler h = [&](const WatchEvent& ev) {
    names.push_back(NameOf(ev.object));
    return true;
  };
  auto feed = [&](const std::string& chunk) {
    return lines.Feed(chunk, [&](const std::string& l) { return DispatchWatchLine(l, h); });
  };
  std::string e1 = R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})";
  std::string e2 = R"({"type":"MODIFIED","object":{"metadata":{"name":"b"}}})";
  ASSERT_TRUE(feed(e1.substr(0, 10)).ok());
  EXPECT_TRUE(names.empty());
  ASSERT_TRUE(feed(e1.substr(10) + "\n" + e2.substr(0, 5)).ok());
  EXPECT_EQ(names, std::vector<std::string>{"a"});
  ASSERT_TRUE(feed(e2.substr(5) + "\n").ok());
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
  Status gone = feed(R"({"type":"ERROR","object":{"kind":"Status","code":410,"message":"too old"}})"
                     "\n");
  EXPECT_EQ(gone.code(), StatusCode::kGone);
}

}  // namespace
}  // namespace paratune::kube
