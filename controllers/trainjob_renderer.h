// Trials as Kubeflow Trainer v2 TrainJobs (issue 38): spec.trialTemplate may be a TrainJob
// (apiVersion trainer.kubeflow.org/v1alpha1) whose spec.runtimeRef names a
// ClusterTrainingRuntime or TrainingRuntime the platform team maintains. Trainer expands it to a
// JobSet of the same name (pkg/runtime/framework/plugins/jobset/jobset.go, github.com/kubeflow/
// trainer v2.3) whose trainer pods are those of the replicated job "node" (constants.Node).
// The API is read from pkg/apis/trainer/v1alpha1/trainjob_types.go at v2.3.0 (runtimePatches
// since v2.2.0; v2.0/v2.1's podTemplateOverrides is not written). Pure; thread-safe.
#ifndef PARATUNE_CONTROLLERS_TRAINJOB_RENDERER_H_
#define PARATUNE_CONTROLLERS_TRAINJOB_RENDERER_H_

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "controllers/job_renderer.h"

namespace paratune::controllers {

inline constexpr const char* kTrainerApiVersion = "trainer.kubeflow.org/v1alpha1";
// The replicated job of a TrainingRuntime whose pods run the trainer (Trainer's constants.Node).
inline constexpr const char* kTrainerNodeJob = "node";
// The manager of the runtime patch paratune writes (spec.runtimePatches[].manager).
inline constexpr const char* kTrainJobPatchManager = "tuning.paratune.dev/operator";

// The TrainJob of one trial, from the campaign's TrainJob template and `meta`
// (TrialObjectMeta):
//  - spec.trainer.env: the template's, then the PARATUNE_* variables (ours win). Trainer's
//    runtime sets the rendezvous itself (PET_NNODES, PET_NODE_RANK, PET_MASTER_ADDR, ... for
//    torchrun), so no MASTER_ADDR/NNODES are added;
//  - spec.trainer.numNodes: hardware.nodes; spec.trainer.resourcesPerNode: the template's, with
//    the accelerator request of hardware.devicesPerNode unless it names that resource;
//  - spec.activeDeadlineSeconds: budget.trialTimeout; spec.suspend true with a Kueue queue
//    (Kueue's TrainJob integration admits it by unsuspending it);
//  - one spec.runtimePatches entry (manager kTrainJobPatchManager, replacing an earlier one of
//    ours) on the "node" replicated job's pod template: the campaign and trial labels (the
//    operator finds the trainer pods by them), Kueue's topology request, hardware.nodeSelector
//    (and GKE's accelerator labels on platform gke), hardware.tolerations when the campaign
//    sets any (Trainer replaces the runtime's list with a patch's), and the anti-affinity of
//    avoided nodes.
// Fails (kInvalidArgument naming the field) without spec.runtimeRef.name, or when
// spec.trainer, spec.trainer.env or spec.runtimePatches has the wrong type.
Result<RenderedTrial> RenderTrainJob(const TrialJobInput& in, nlohmann::json meta);

}  // namespace paratune::controllers

#endif  // PARATUNE_CONTROLLERS_TRAINJOB_RENDERER_H_
