// Renders the Kubernetes objects that run one trial (contract section 4): a batch/v1 Job made
// from the campaign's spec.trialTemplate (or a default `paratune trial-sim` container), and for
// multi-node trials a headless Service, or a JobSet instead of both when the JobSet API is
// installed. Pure: no I/O, deterministic output for the same input, thread-safe.
#ifndef PARATUNE_CONTROLLERS_JOB_RENDERER_H_
#define PARATUNE_CONTROLLERS_JOB_RENDERER_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "agents/core/campaign.h"
#include "agents/core/config.h"
#include "base/status.h"

namespace paratune::controllers {

inline constexpr const char* kApiGroup = "tuning.paratune.dev";
inline constexpr const char* kApiVersion = "tuning.paratune.dev/v1alpha1";
inline constexpr const char* kCampaignLabel = "tuning.paratune.dev/campaign";
inline constexpr const char* kTrialLabel = "tuning.paratune.dev/trial";
inline constexpr const char* kDefaultTrialImage = "paratune/paratune:latest";
inline constexpr const char* kKueueQueueLabel = "kueue.x-k8s.io/queue-name";
inline constexpr const char* kJobSetExclusiveTopology =
    "alpha.jobset.sigs.k8s.io/exclusive-topology";
inline constexpr const char* kGkeNodePoolLabel = "cloud.google.com/gke-nodepool";
inline constexpr const char* kGkeAcceleratorLabel = "cloud.google.com/gke-accelerator";
inline constexpr const char* kGkeTpuAcceleratorLabel = "cloud.google.com/gke-tpu-accelerator";
inline constexpr const char* kGkeTpuTopologyLabel = "cloud.google.com/gke-tpu-topology";
inline constexpr int kTorchrunPort = 29500;
inline constexpr int kJaxCoordinatorPort = 8476;

// Everything the renderer needs about one trial. `campaign` must outlive the call.
struct TrialJobInput {
  const CampaignSpec* campaign = nullptr;
  std::string namespace_;
  std::string trial_name;  // also the Job / Service / JobSet name
  std::string trial_uid;   // TrialRun metadata.uid, for the controller ownerReference
  int64_t iteration = 0;
  Config config;
  bool jobset_available = false;  // discovery found jobset.x-k8s.io
  std::string default_image = kDefaultTrialImage;
  // Nodes the trial must not run on (the ledger's suspects at launch time plus the TrialRun's
  // spec.avoidNodes): a required node anti-affinity on kubernetes.io/hostname, merged into every
  // nodeSelectorTerm of the template's own affinity. Empty: no constraint is added.
  std::vector<std::string> avoid_nodes;
};

struct RenderedTrial {
  // "Job" or "JobSet": which object `workload` is.
  std::string kind = "Job";
  nlohmann::json workload;
  // Headless Service for a multi-node Job (JobSet makes its own); absent for one node.
  std::optional<nlohmann::json> service;
};

// Renders the trial. Scheduling:
//  - node selectors: hardware.nodeSelector, plus GKE's accelerator labels only when
//    hardware.platform is "gke" (the default for TPUs, never implied for GPUs);
//  - TPU slices on GKE rendered as a JobSet get exclusive placement per node pool
//    (alpha.jobset.sigs.k8s.io/exclusive-topology: cloud.google.com/gke-nodepool);
//  - with a queue (TrialQueueName), the Job or JobSet carries kueue.x-k8s.io/queue-name and is
//    created with spec.suspend true: Kueue admits it by unsuspending it.
// Fails (kInvalidArgument naming the field, e.g.
// "spec.trialTemplate.spec.template.spec.containers: ...") when the template is unusable.
Result<RenderedTrial> RenderTrial(const TrialJobInput& in);

// The campaign's trialTemplate, or the default `paratune trial-sim` JobTemplateSpec when the
// campaign gives none.
nlohmann::json EffectiveTrialTemplate(const CampaignSpec& campaign, const std::string& image);

// Adds `kubernetes.io/hostname NotIn nodes` to the pod spec's required node affinity: appended
// to every existing nodeSelectorTerm (terms are ORed, so each must exclude the nodes), or as a
// new term when there is none. Preferred affinity, pod (anti-)affinity and the template's own
// expressions are kept. No-op for an empty list.
void AvoidNodes(const std::vector<std::string>& nodes, nlohmann::json* pod_spec);

// The Kueue LocalQueue of the campaign's trials: spec.queueName, else the
// kueue.x-k8s.io/queue-name label of spec.trialTemplate.metadata, else "" (no queue).
std::string TrialQueueName(const CampaignSpec& campaign);

// GKE's node-label value for a TPU catalog name ("tpu-v5e" -> "tpu-v5-lite-podslice"), or ""
// for a name that is not a TPU.
std::string GkeTpuAcceleratorName(const std::string& catalog_name);
// GKE's `cloud.google.com/gke-accelerator` value for a GPU catalog name
// ("nvidia-h200" -> "nvidia-h200-141gb"); unknown names pass through.
std::string GkeGpuAcceleratorName(const std::string& catalog_name);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_JOB_RENDERER_H_
