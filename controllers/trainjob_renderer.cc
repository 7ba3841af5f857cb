#include "controllers/trainjob_renderer.h"

#include <string>
#include <vector>

#include "controllers/trial_env.h"

namespace paratune::controllers {

namespace {

using nlohmann::json;

constexpr const char* kSpecPath = "spec.trialTemplate.spec";

// spec.trainer with our env, node count and device request.
Status RenderTrainer(const TrialJobInput& in, json* trainer) {
  const HardwareSpec& hw = in.campaign->hardware;
  if (trainer->is_null()) *trainer = json::object();
  if (!trainer->is_object())
    return Status::Invalid(std::string(kSpecPath) + ".trainer: must be an object");
  if (trainer->contains("env") && !(*trainer)["env"].is_array()) {
    return Status::Invalid(std::string(kSpecPath) + ".trainer.env: must be a list");
  }
  MergeEnv(trainer, ParatuneEnv(*in.campaign, in.trial_name, in.iteration, in.config));
  (*trainer)["numNodes"] = hw.nodes;
  // The device request through a stand-in pod spec, with the rules of the Job's containers.
  json resources = trainer->value("resourcesPerNode", json::object());
  json pod = {{"containers", json::array({{{"name", kTrainerNodeJob}}})}};
  if (resources.is_object() && !resources.empty()) pod["containers"][0]["resources"] = resources;
  HardwareSpec devices_only = hw;
  devices_only.node_selector.clear();
  devices_only.tolerations = json::array();
  devices_only.platform = "generic";
  ApplyHardware(devices_only, &pod);
  const json& rendered = pod["containers"][0].value("resources", json());
  if (rendered.is_object() && !rendered.empty()) (*trainer)["resourcesPerNode"] = rendered;
  return Status::Ok();
}

// The pod template patch of the trainer's replicated job (`resources`: the rendered
// resourcesPerNode, so a CPU dry run asking for 0 devices gets no accelerator selector).
json PodTemplatePatch(const TrialJobInput& in, const json& resources) {
  const HardwareSpec& hw = in.campaign->hardware;
  json metadata = {{"labels", TrialLabels(in)}};
  const json topology = TopologyRequest(*in.campaign);
  if (!topology.empty()) metadata["annotations"] = topology;
  // Node selection only (devices went to resourcesPerNode): selectors, the campaign's
  // tolerations, the accelerator toleration alongside them, avoided nodes.
  json pod = {{"containers", json::array({{{"name", kTrainerNodeJob}}})}};
  if (resources.is_object()) pod["containers"][0]["resources"] = resources;
  ApplyHardware(hw, &pod);
  AvoidNodes(in.avoid_nodes, &pod);
  json spec = json::object();
  if (pod.contains("nodeSelector")) spec["nodeSelector"] = pod["nodeSelector"];
  if (!hw.tolerations.empty() && pod.contains("tolerations")) {
    spec["tolerations"] = pod["tolerations"];
  }
  if (pod.contains("affinity")) spec["affinity"] = pod["affinity"];
  json tmpl = {{"metadata", metadata}};
  if (!spec.empty()) tmpl["spec"] = spec;
  return tmpl;
}

}  // namespace

Result<RenderedTrial> RenderTrainJob(const TrialJobInput& in, json meta) {
  const CampaignSpec& c = *in.campaign;
  json spec = c.trial_template.value("spec", json::object());
  if (!spec.is_object())
    return Status::Invalid(std::string(kSpecPath) + ": must be a TrainJobSpec");
  const json& ref = spec.value("runtimeRef", json::object());
  const json& ref_name = ref.is_object() ? ref.value("name", json()) : json();
  if (!ref_name.is_string() || ref_name.get<std::string>().empty()) {
    return Status::Invalid(std::string(kSpecPath) +
                           ".runtimeRef.name: required (a ClusterTrainingRuntime, or a "
                           "TrainingRuntime with runtimeRef.kind TrainingRuntime)");
  }
  PARATUNE_RETURN_IF_ERROR(RenderTrainer(in, &spec["trainer"]));
  if (c.budget.trial_timeout_seconds > 0) {
    spec["activeDeadlineSeconds"] = c.budget.trial_timeout_seconds;
  }
  if (!TrialQueueName(c).empty()) {
    spec["suspend"] = true;
  } else {
    spec.erase("suspend");
  }
  json patches = json::array();
  const json& existing = spec.value("runtimePatches", json::array());
  if (!existing.is_array()) {
    return Status::Invalid(std::string(kSpecPath) + ".runtimePatches: must be a list");
  }
  for (const auto& p : existing) {
    if (!p.is_object() || p.value("manager", json()) != json(kTrainJobPatchManager)) {
      patches.push_back(p);
    }
  }
  json replicated_job = {
      {"name", kTrainerNodeJob},
      {"template",
       {{"spec",
         {{"template",
           PodTemplatePatch(in, spec["trainer"].value("resourcesPerNode", json()))}}}}}};
  patches.push_back(
      {{"manager", kTrainJobPatchManager},
       {"trainingRuntimeSpec",
        {{"template", {{"spec", {{"replicatedJobs", json::array({replicated_job})}}}}}}}});
  spec["runtimePatches"] = patches;
  RenderedTrial out;
  out.kind = "TrainJob";
  out.workload = {{"apiVersion", kTrainerApiVersion},
                  {"kind", "TrainJob"},
                  {"metadata", std::move(meta)},
                  {"spec", std::move(spec)}};
  return out;
}

}  // namespace paratune::controllers
