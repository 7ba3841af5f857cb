// Renders the Kubernetes objects that run one trial (contract section 4): a batch/v1 Job made
// from the campaign's spec.trialTemplate (or a default `paratune trial-sim` container), and for
// multi-node trials a headless Service, or a JobSet instead of both when the JobSet API is
// installed (one child Job per TPU slice); or a Kubeflow Trainer TrainJob when the template is
// one (trainjob_renderer.h). Pure: no I/O, deterministic output for the same input, thread-safe.
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
#include "controllers/trial_env.h"

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
// Kueue topology-aware scheduling requests on a pod template (kueue.x-k8s.io, Kueue >= 0.9:
// the pods of the pod set must / should share one domain of that node-label level).
inline constexpr const char* kKueueRequiredTopology = "kueue.x-k8s.io/podset-required-topology";
inline constexpr const char* kKueuePreferredTopology = "kueue.x-k8s.io/podset-preferred-topology";

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
  // "Job", "JobSet" or "TrainJob": which object `workload` is.
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
//  - multi-node trials with spec.scheduling.topologyLevel get Kueue's topology request
//    (kKueueRequiredTopology or kKueuePreferredTopology) on their pod templates;
//  - multi-slice TPU trials (hardware.slices > 1) need the JobSet API (kInvalidArgument
//    naming spec.hardware.slices without it): replicas = slices.
Result<RenderedTrial> RenderTrial(const TrialJobInput& in);

// What runs the campaign's trials: "TrainJob" when spec.trialTemplate is a Kubeflow Trainer
// TrainJob, "JobSet" for more than one node or slice when the JobSet API is installed, else
// "Job".
std::string TrialWorkloadKind(const CampaignSpec& campaign, bool jobset_available);
bool IsTrainJobTemplate(const CampaignSpec& campaign);

// Pieces shared by the renderers. The workload's metadata: name, namespace, the campaign and
// trial labels, the TrialRun as controller owner, the template's own labels and annotations,
// and the Kueue queue label.
nlohmann::json TrialObjectMeta(const TrialJobInput& in);
nlohmann::json OwnerReference(const TrialJobInput& in);
nlohmann::json TrialLabels(const TrialJobInput& in);
// Adds `labels` to metadata.<section> of `obj` (creating metadata as needed).
void AddLabels(nlohmann::json* obj, const nlohmann::json& labels, const char* section = "labels");
// Kueue's topology request for the campaign's pod templates ({} for one node or no level).
nlohmann::json TopologyRequest(const CampaignSpec& campaign);
// Node selectors, tolerations and device requests from spec.hardware. hardware.nodeSelector
// always applies; GKE's accelerator labels are added (where the campaign's nodeSelector does not
// set them) only when hardware.platform is "gke", the default for TPUs and never for GPUs, so a
// GPU campaign schedules on any cluster whose nodes offer nvidia.com/gpu. A container asking
// for 0 of the accelerator (a CPU dry run) gets no accelerator selector, toleration or request.
void ApplyHardware(const HardwareSpec& hw, nlohmann::json* pod_spec);

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
