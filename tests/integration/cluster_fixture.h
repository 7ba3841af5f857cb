// LocalCluster: a private control plane (etcd + kube-apiserver + controller-manager + scheduler,
// optionally paratune-kubelet-sim) for integration tests, started once per test binary through
// hack/local-cluster.sh on free ports in a temporary directory, stopped at exit. Tests that need
// it call PARATUNE_REQUIRE_CLUSTER(), which skips with a clear message only when the kube
// binaries cannot be found or built. Thread-safe after Get().
#ifndef PARATUNE_TESTS_INTEGRATION_CLUSTER_FIXTURE_H_
#define PARATUNE_TESTS_INTEGRATION_CLUSTER_FIXTURE_H_

#include <memory>
#include <string>

#include "operator/kube_client.h"
#include "operator/rest_config.h"

namespace paratune::kube::testing {

class LocalCluster {
 public:
  // The process-wide cluster, starting it on first use; nullptr with *why when it cannot run.
  static LocalCluster* Get(std::string* why);

  // Credentials: admin (system:masters), the operator ServiceAccount (RBAC-bound only to what
  // manifests grant it; nothing unless a test binds roles), and an authenticated user with no
  // permissions at all.
  RestConfig AdminConfig() const;
  RestConfig OperatorConfig() const;
  RestConfig NobodyConfig() const;
  // An admin client (shared, real time, no metrics).
  KubeClient* Admin();
  // Creates a fresh namespace "<prefix>-<n>" and returns its name.
  std::string NewNamespace(const std::string& prefix);
  // Stops and restarts kube-apiserver (etcd keeps the data).
  Status RestartApiserver();
  // Runs hack/local-cluster.sh with this cluster's environment.
  int Script(const std::string& args) const;
  // Runs kubectl with the admin kubeconfig; returns its exit status. When `out` is given it
  // receives stdout (stderr goes to script.log either way).
  int Kubectl(const std::string& args, std::string* out = nullptr) const;
  // Applies crds/ (waiting until established), manifests/00-namespace.yaml and
  // manifests/rbac.yaml as `hack/local-cluster.sh deploy` does, without starting an operator.
  // Done once per process; later calls return the first result. Thread-safe.
  Status InstallCrdsAndRbac();
  const std::string& dir() const { return dir_; }

 private:
  LocalCluster() = default;
  RestConfig ConfigFor(const std::string& kubeconfig) const;

  std::string dir_;
  std::string env_;
  std::unique_ptr<KubeClient> admin_;
  int namespaces_ = 0;
};

}  // namespace paratune::kube::testing

#define PARATUNE_REQUIRE_CLUSTER(var)                           \
  std::string var##_why;                                        \
  ::paratune::kube::testing::LocalCluster* var =                \
      ::paratune::kube::testing::LocalCluster::Get(&var##_why); \
  if (var == nullptr) GTEST_FAIL() << "no local control plane: " << var##_why

#endif  // PARATUNE_TESTS_INTEGRATION_CLUSTER_FIXTURE_H_
