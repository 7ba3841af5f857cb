// RestConfig: where the API server is and how to authenticate, from a kubeconfig (current or named
// context; bearer token, token file, client certificate/key, CA, insecure-skip-tls-verify, exec
// credential plugins) or from the in-cluster service account (token re-read when it rotates).
// Pure data plus loaders (thread-compatible) and the token source a client reads per request.
#ifndef PARATUNE_OPERATOR_REST_CONFIG_H_
#define PARATUNE_OPERATOR_REST_CONFIG_H_

#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/time_source.h"

namespace paratune::kube {

struct ExecCredential {
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
};

struct RestConfig {
  std::string server;  // https://127.0.0.1:6443
  std::string token;
  std::string token_file;  // re-read on every request when set (rotation).
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
  bool insecure_skip_tls_verify = false;
  ExecCredential exec;  // command empty: none.
  std::string user_agent = "paratune/0.1";
  // Client-side token bucket (client-go's flowcontrol). By default it applies only until the
  // server shows API Priority and Fairness (every response of such a server carries
  // X-Kubernetes-PF-FlowSchema-UID): the server then does the limiting, per flow, and the
  // client sends as fast as its workers go. rate_limit_always keeps the bucket regardless
  // (--kube-api-qps/--kube-api-burst given explicitly). qps <= 0: no bucket at all.
  double qps = 20;
  int burst = 30;
  bool rate_limit_always = false;
  // 429, and 5xx that carry Retry-After, are retried this many times, waiting Retry-After
  // (capped at 30 s) or an exponential backoff from 250 ms.
  int max_retries = 5;
  int timeout_seconds = 30;  // per non-watch request.
};

// Loads a kubeconfig file (YAML or JSON). context "" : current-context. Errors name the field.
Result<RestConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");
// What the program found in its environment that says where the API server is (client-go's
// clientcmd reads the same variables). Filled by the program's main; the library never reads
// the environment itself.
struct ConfigEnvironment {
  std::string kubeconfig;    // $KUBECONFIG (the first path of a ':'-separated list is used)
  std::string home;          // $HOME: ~/.kube/config
  std::string service_host;  // $KUBERNETES_SERVICE_HOST (in a pod)
  std::string service_port;  // $KUBERNETES_SERVICE_PORT
};
// In-cluster: the service host and port and /var/run/secrets/kubernetes.io/serviceaccount
// (root overridable for tests).
Result<RestConfig> InClusterConfig(
    const ConfigEnvironment& env,
    const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");
// env.kubeconfig, then env.home's ~/.kube/config, then in-cluster.
Result<RestConfig> DefaultConfig(const ConfigEnvironment& env);

// The bearer token for each request of one client: an exec plugin's token (run again once
// kExecTokenLifetime has passed on `clock`), else the token file's (re-read every time: the
// service account's rotates), else cfg.token. `clock` is borrowed. Thread-safe.
class TokenSource {
 public:
  static constexpr Millis kExecTokenLifetime{5 * 60 * 1000};
  TokenSource(const RestConfig& cfg, TimeSource* clock) : cfg_(cfg), clock_(clock) {}
  Result<std::string> Current();

 private:
  const RestConfig cfg_;
  TimeSource* const clock_;
  std::mutex mu_;
  std::string exec_token_;  // guarded by mu_
  SteadyTime exec_expiry_;  // guarded by mu_
};

}  // namespace paratune::kube

#endif  // PARATUNE_OPERATOR_REST_CONFIG_H_
