// What Kueue says about a queued trial. Kueue mirrors each suspended Job (or JobSet) into a
// Workload (kueue.x-k8s.io/v1beta1 workloads) labelled kueue.x-k8s.io/job-uid=<its uid>, and
// its QuotaReserved=False condition says why the workload is not admitted: quota held by others
// ("insufficient unused quota ..."), which waiting fixes, or a request no quota can ever cover
// ("... request > maximum capacity", "resource ... unavailable in ClusterQueue", a missing
// LocalQueue), which waiting never fixes (the trial reconciler then fails the trial as
// Unschedulable instead of leaving it queued for ever). Source of the wording:
// kubernetes-sigs/kueue pkg/scheduler/flavorassigner.
#ifndef PARATUNE_CONTROLLERS_KUEUE_WORKLOAD_H_
#define PARATUNE_CONTROLLERS_KUEUE_WORKLOAD_H_

#include <string>

#include "operator/kube_client.h"

namespace paratune::controllers {

inline const kube::GroupVersionResource kKueueWorkloads{"kueue.x-k8s.io", "v1beta1", "workloads",
                                                        true, "Workload"};
// Newer Kueue releases serve v1beta2 as well (and in time only it): asked when v1beta1 is not.
inline const kube::GroupVersionResource kKueueWorkloadsV1beta2{"kueue.x-k8s.io", "v1beta2",
                                                               "workloads", true, "Workload"};
inline constexpr const char* kKueueJobUidLabel = "kueue.x-k8s.io/job-uid";
// The reason a trial fails with (its observed pod reason) when Kueue deactivated its Workload.
inline constexpr const char* kKueueDeactivated = "Deactivated";

struct KueuePending {
  std::string workload;  // the Workload's name ("" when none was found)
  std::string message;   // its QuotaReserved=False message ("" when none)
  // Its Evicted=True condition, when Kueue evicted it after an admission (reasons in
  // apis/kueue/v1beta1/workload_types.go: Preempted, PodsReadyTimeout, AdmissionCheck,
  // ClusterQueueStopped, LocalQueueStopped, NodeFailures, Deactivated); "" when not evicted.
  std::string evicted_reason;
  std::string evicted_message;
  // Quota is reserved but its admission checks are not all Ready (status.admissionChecks, e.g.
  // a ProvisioningRequest check waiting for GKE's Dynamic Workload Scheduler to provision the
  // nodes): "NAME (State): message; ...", "" when none waits.
  std::string checks;
  // spec.active is false: Kueue deactivated it (waitForPodsReady's requeuing limit, a rejected
  // admission check) or someone did, and it admits it again only once spec.active is true.
  bool deactivated = false;
};

// One LIST of the Workloads of `workload` (a Job or JobSet, by its uid) in its namespace (a second,
// of v1beta2, when v1beta1 is not served); the first one that says anything is read. Empty (not an
// error) when neither is served (NotFound) or the operator may not read them (Forbidden): the trial
// then simply waits, as it did before. Other transport errors are returned.
Result<KueuePending> ReadKueuePending(kube::KubeClient* client, const kube::Json& workload);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_KUEUE_WORKLOAD_H_
