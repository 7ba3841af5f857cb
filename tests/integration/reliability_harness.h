// Helpers of the reliability tests (tests/integration/reliability_*_test.cc): the operator as a
// subprocess started exactly as `hack/local-cluster.sh deploy` starts it (build/bin/
// paratune-operator with the operator ServiceAccount's kubeconfig, so RBAC is real), a small
// simulated campaign, polling with deadlines, and the "nothing lost, nothing duplicated" audit.
// Not thread-safe unless stated; each test owns its objects.
#ifndef PARATUNE_TESTS_INTEGRATION_RELIABILITY_HARNESS_H_
#define PARATUNE_TESTS_INTEGRATION_RELIABILITY_HARNESS_H_

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "operator/kube_client.h"
#include "tests/integration/cluster_fixture.h"

namespace paratune::kube::testing {

// One paratune-operator process. The destructor SIGKILLs it if it still runs.
class OperatorProcess {
 public:
  // `extra` flags are appended to --kubeconfig <operator.kubeconfig>
  // --health-probe-bind-address 127.0.0.1:<free port>. The log goes to `log_path` (appended).
  OperatorProcess(LocalCluster* cluster, std::vector<std::string> extra, std::string log_path);
  ~OperatorProcess();
  OperatorProcess(const OperatorProcess&) = delete;
  OperatorProcess& operator=(const OperatorProcess&) = delete;

  // Starts (or restarts) the process on a fresh probe port. False when fork/exec failed.
  bool Start();
  // Sends `sig` and reaps the process (SIGKILL: at once; others: up to 30 s, then SIGKILL).
  void Stop(int sig);
  // True while the process runs (reaps it when it has exited).
  bool Alive();
  pid_t pid() const { return pid_; }
  // The exit status after Alive() turned false (-1 unknown).
  int exit_status() const { return exit_status_; }
  // GET path from the probe server; "" when unreachable.
  std::string Http(const std::string& path) const;
  // Sum of every series of `family` whose label text contains each of `label_parts`
  // (e.g. {"controller=\"tuningcampaign\""}); -1 when /metrics is unreachable.
  double Metric(const std::string& family, const std::vector<std::string>& label_parts = {}) const;
  // Resident set size in KiB from /proc (0 when not running).
  long RssKiB() const;
  // The whole log so far.
  std::string Log() const;
  const std::string& log_path() const { return log_path_; }

 private:
  LocalCluster* cluster_;
  std::vector<std::string> extra_;
  std::string log_path_;
  pid_t pid_ = -1;
  int port_ = 0;
  int exit_status_ = -1;
};

// Polls `done` every `every` until it returns true (true) or `timeout` passes (false).
bool WaitFor(const std::function<bool()>& done, std::chrono::milliseconds timeout,
             std::chrono::milliseconds every = std::chrono::milliseconds(250));

// A simulated GPU campaign (contract section 8: trials are `paratune trial-sim` on the
// kubelet-sim nodes) like manifests/samples/llama3-8b-h100x8.yaml with the given budget.
Json SimCampaign(const std::string& name, int max_trials, int parallel_trials);

// The campaign's TrialRuns and Jobs (by the tuning.paratune.dev/campaign label).
std::vector<Json> TrialRunsOf(KubeClient* c, const std::string& ns, const std::string& campaign);
std::vector<Json> JobsOf(KubeClient* c, const std::string& ns, const std::string& campaign);
// status.phase of the campaign ("" when missing).
std::string PhaseOf(KubeClient* c, const std::string& ns, const std::string& campaign);
bool Finished(KubeClient* c, const std::string& ns, const std::string& campaign);

// The audit of a finished campaign: every pool trial (ConfigMap <campaign>-pool, pool.json) has
// exactly one TrialRun and each TrialRun one Job (owned by it), names and iterations are unique,
// the count equals status.trials.total and `expected_trials` (-1: skip). Returns "" when all
// hold, else a description of every violation.
std::string AuditCampaign(KubeClient* c, const std::string& ns, const std::string& campaign,
                          int expected_trials);

// A one-line description of the campaign for failure messages (phase, counts, message).
std::string Describe(KubeClient* c, const std::string& ns, const std::string& campaign);

}  // namespace paratune::kube::testing

#endif  // PARATUNE_TESTS_INTEGRATION_RELIABILITY_HARNESS_H_
