// PodRunner: the kubelet part of paratune-kubelet-sim. Reconciles pods bound to the simulated
// nodes: a container whose command starts with `paratune` runs as a local process (the pod's env,
// $(VAR) expanded, PARATUNE_TERMINATION_LOG pointing at a per-pod file); its status goes Running,
// then Succeeded/Failed with exit code, reason and termination message (the log tail under
// FallbackToLogsOnError: last 80 lines, at most 4096 bytes, as the kubelet does). Any other
// container stays Waiting with reason ErrImagePull and a message naming the image. Every process
// also gets the simulated node's environment (node_env.h: the node faults, its node, its Job's
// nodes). The pods of a Job of several pods get the completion-index annotation (one PATCH each,
// as the 1.20 server has no Indexed Jobs); a single-pod Job's pod gets none, as with the 1.21+
// Job controller. Deleting a pod kills its process and removes the pod (grace period 0); a pod that
// vanishes without a graceful delete (force-deleted, or garbage-collected after its Node was
// deleted) has its process killed too. Thread-safe.
#ifndef PARATUNE_HACK_KUBELET_SIM_POD_RUNNER_H_
#define PARATUNE_HACK_KUBELET_SIM_POD_RUNNER_H_

#include <sys/types.h>

#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "hack/kubelet-sim/node_pool.h"
#include "operator/controller.h"
#include "operator/informer.h"

namespace paratune::kubelet {

struct RunnerOptions {
  std::string paratune_bin;  // what `paratune` in a command resolves to.
  std::string work_dir;      // per-pod logs and termination files.
  std::string node_faults;   // the simulated nodes' faults (node_faults.h text), "" for none.
};

// Expands $(VAR) from env ($$ escapes a dollar; unknown references stay as written).
std::string ExpandVars(const std::string& s, const std::map<std::string, std::string>& env);
// The kubelet's FallbackToLogsOnError tail: last 80 lines, at most 4096 bytes.
std::string LogTail(const std::string& log);

class PodRunner : public kube::Reconciler {
 public:
  // `jobs` tells a single-pod Job from an Indexed one: only the latter's pods get the
  // completion-index annotation, as the Job controller of 1.21+ gives them at creation.
  PodRunner(kube::KubeClient* client, const kube::Informer* pods, const kube::Informer* jobs,
            const NodePool* nodes, TimeSource* time, RunnerOptions opts);
  ~PodRunner() override;

  Result<kube::ReconcileResult> Reconcile(const kube::ObjectKey& key) override;
  // Pods started so far (for logs and tests).
  int started() const;
  // Path of the log file of a pod's container.
  std::string LogPath(const std::string& ns, const std::string& pod,
                      const std::string& container) const;

 private:
  void Start(const kube::Json& pod);
  void RunContainer(kube::Json pod, std::vector<std::string> argv,
                    std::map<std::string, std::string> env);
  void SetWaiting(const kube::Json& pod, const std::string& reason, const std::string& message);
  Status PatchStatus(const kube::Json& pod, const kube::Json& status);
  void Kill(const std::string& uid);

  kube::KubeClient* client_;
  const kube::Informer* pods_;
  const kube::Informer* jobs_;
  const NodePool* nodes_;
  TimeSource* time_;
  RunnerOptions opts_;
  mutable std::mutex mu_;
  std::set<std::string> handled_;                  // pod uids already acted on; guarded by mu_
  std::map<std::string, pid_t> running_;           // uid -> pid; guarded by mu_
  std::map<kube::ObjectKey, std::string> uid_of_;  // started pods: key -> uid; guarded by mu_
  std::vector<std::thread> threads_;               // guarded by mu_
  int started_ = 0;                                // guarded by mu_
  // Emulated Indexed Job completion indexes (kube 1.20 has no Indexed Jobs): the n-th pod of a
  // Job started here gets index n-1, as the Job controller of 1.21+ would annotate it.
  std::map<std::string, int> next_index_;  // namespace/job -> next index; guarded by mu_
  std::map<std::string, int> index_of_;    // pod uid -> index; guarded by mu_
  std::string CompletionIndex(const kube::Json& pod);  // locks mu_
};

}  // namespace paratune::kubelet

#endif  // PARATUNE_HACK_KUBELET_SIM_POD_RUNNER_H_
