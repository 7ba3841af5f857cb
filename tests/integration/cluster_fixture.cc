#include "tests/integration/cluster_fixture.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "base/time_source.h"
#include "operator/rest_client.h"
#include "tests/support/loopback.h"

namespace paratune::kube::testing {

namespace {

std::string KubeBinDir() {
  if (const char* env = std::getenv("PARATUNE_KUBE_BIN"); env != nullptr && *env) return env;
  const char* home = std::getenv("HOME");
  std::string cached = std::string(home ? home : "/root") + "/.cache/paratune/kube-1.20.2/bin";
  if (std::filesystem::exists(cached + "/kube-apiserver")) return cached;
  std::string out = std::filesystem::temp_directory_path() / "paratune-kube-bin.txt";
  std::string cmd =
      std::string(PARATUNE_SOURCE_DIR) + "/hack/build-kube.sh 2>/dev/null | tail -1 > " + out;
  if (std::system(cmd.c_str()) != 0) return "";
  std::string dir;
  if (FILE* f = fopen(out.c_str(), "r")) {
    char buf[4096];
    if (fgets(buf, sizeof(buf), f)) dir = buf;
    fclose(f);
  }
  while (!dir.empty() && dir.back() == '\n') dir.pop_back();
  return dir;
}

LocalCluster* g_cluster = nullptr;
LocalCluster* g_cluster_shared = nullptr;
std::string g_why;

void StopAtExit() {
  if (g_cluster == nullptr) return;
  (void)g_cluster->Script("down");
  std::error_code ec;
  std::filesystem::remove_all(g_cluster->dir(), ec);
}

}  // namespace

LocalCluster* LocalCluster::Get(std::string* why) {
  static std::once_flag once;
  std::call_once(once, [] {
    if (const char* shared = std::getenv("PARATUNE_IT_CLUSTER_ENV"); shared && *shared) {
      // hack/test.sh started one cluster for every test process; reuse it, never stop it.
      auto* c = new LocalCluster();
      c->env_ = shared;
      std::string env = shared;
      size_t at = env.find("PARATUNE_CLUSTER_DIR=");
      c->dir_ = env.substr(at + 21, env.find(' ', at) - at - 21);
      auto admin = RestKubeClient::Create(c->AdminConfig(), RealTimeSource::Get(), nullptr);
      if (!admin.ok()) {
        g_why = StatusText(admin.status());
        return;
      }
      c->admin_ = std::move(admin).value();
      g_cluster_shared = c;
      return;
    }
    std::string bin = KubeBinDir();
    if (bin.empty() || !std::filesystem::exists(bin + "/kube-apiserver")) {
      g_why = "kube binaries not found and hack/build-kube.sh could not build them";
      return;
    }
    auto* c = new LocalCluster();
    char tmpl[] = "/tmp/paratune-it-XXXXXX";
    c->dir_ = mkdtemp(tmpl);
    using paratune::testing::FreePort;
    int api = FreePort(), etcd = FreePort(), kubelet = FreePort();
    while (etcd + 1 == api) etcd = FreePort();
    c->env_ = "PARATUNE_CLUSTER_DIR=" + c->dir_ + " PARATUNE_API_PORT=" + std::to_string(api) +
              " PARATUNE_ETCD_PORT=" + std::to_string(etcd) +
              " PARATUNE_KUBELET_PORT=" + std::to_string(kubelet) + " PARATUNE_KUBE_BIN=" + bin +
              " PARATUNE_NO_KUBELET=" +
              std::string(std::filesystem::exists(std::string(PARATUNE_BINARY_DIR) +
                                                  "/bin/paratune-kubelet-sim")
                              ? "0"
                              : "1");
    g_cluster = c;
    std::atexit(StopAtExit);
    if (c->Script("up") != 0) {
      g_why = "hack/local-cluster.sh up failed; see " + c->dir_ + "/kube-apiserver.log";
      g_cluster = nullptr;
      return;
    }
    auto admin = RestKubeClient::Create(c->AdminConfig(), RealTimeSource::Get(), nullptr);
    if (!admin.ok()) {
      g_why = StatusText(admin.status());
      return;
    }
    c->admin_ = std::move(admin).value();
  });
  if (g_cluster_shared != nullptr) return g_cluster_shared;
  if (g_cluster == nullptr || g_cluster->admin_ == nullptr) {
    *why = g_why;
    return nullptr;
  }
  return g_cluster;
}

int LocalCluster::Script(const std::string& args) const {
  std::string cmd = env_ + " " + PARATUNE_SOURCE_DIR + "/hack/local-cluster.sh " + args + " " +
                    PARATUNE_BINARY_DIR + " >>" + dir_ + "/script.log 2>&1";
  return std::system(cmd.c_str());
}

int LocalCluster::Kubectl(const std::string& args, std::string* out) const {
  std::string cmd =
      "KUBECONFIG=" + dir_ + "/kubeconfig kubectl " + args + " 2>>" + dir_ + "/script.log";
  if (out == nullptr) return std::system((cmd + " >/dev/null").c_str());
  out->clear();
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return -1;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out->append(buf, n);
  int rc = pclose(p);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

Status LocalCluster::InstallCrdsAndRbac() {
  static std::once_flag once;
  static Status result;
  std::call_once(once, [this] {
    const std::string src = PARATUNE_SOURCE_DIR;
    if (Kubectl("apply -f " + src + "/crds/") != 0 ||
        Kubectl("wait --for condition=established --timeout=60s -f " + src + "/crds/") != 0 ||
        Kubectl("apply -f " + src + "/manifests/00-namespace.yaml -f " + src +
                "/manifests/rbac.yaml") != 0) {
      result = Status::Unavailable("kubectl apply of crds/ and manifests/ failed; see " + dir_ +
                                   "/script.log");
    }
  });
  return result;
}

RestConfig LocalCluster::ConfigFor(const std::string& kubeconfig) const {
  auto cfg = LoadKubeconfig(dir_ + "/" + kubeconfig);
  return cfg.ok() ? *cfg : RestConfig{};
}

RestConfig LocalCluster::AdminConfig() const { return ConfigFor("kubeconfig"); }
RestConfig LocalCluster::OperatorConfig() const { return ConfigFor("operator.kubeconfig"); }

RestConfig LocalCluster::NobodyConfig() const {
  RestConfig cfg = AdminConfig();
  std::string line;
  if (FILE* f = fopen((dir_ + "/tokens.csv").c_str(), "r")) {
    char buf[512];
    while (fgets(buf, sizeof(buf), f)) {
      line = buf;
      if (line.find(",paratune-test-nobody,") != std::string::npos) break;
    }
    fclose(f);
  }
  cfg.token = line.substr(0, line.find(','));
  return cfg;
}

KubeClient* LocalCluster::Admin() { return admin_.get(); }

std::string LocalCluster::NewNamespace(const std::string& prefix) {
  std::string name = prefix + "-" + std::to_string(++namespaces_) + "-" + std::to_string(getpid());
  (void)admin_->Create(resources::kNamespaces, "", Json{{"metadata", {{"name", name}}}});
  return name;
}

Status LocalCluster::RestartApiserver() {
  if (Script("restart-apiserver") != 0) return Status::Unavailable("apiserver restart failed");
  return Status::Ok();
}

}  // namespace paratune::kube::testing
