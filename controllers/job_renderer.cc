#include "controllers/job_renderer.h"

#include <algorithm>
#include <map>
#include <vector>

#include "controllers/trainjob_renderer.h"
#include "controllers/trial_env.h"

namespace paratune::controllers {

namespace {

using nlohmann::json;

constexpr const char* kPodSpecPath = "spec.trialTemplate.spec.template.spec";
constexpr const char* kJobSetReplicatedJob = "workers";

}  // namespace

json OwnerReference(const TrialJobInput& in) {
  return json::array({{{"apiVersion", kApiVersion},
                       {"kind", "TrialRun"},
                       {"name", in.trial_name},
                       {"uid", in.trial_uid},
                       {"controller", true},
                       {"blockOwnerDeletion", true}}});
}

json TrialLabels(const TrialJobInput& in) {
  return {{kCampaignLabel, in.campaign->name}, {kTrialLabel, in.trial_name}};
}

void AddLabels(json* obj, const json& labels, const char* section) {
  json& meta = (*obj)["metadata"];
  if (!meta.is_object()) meta = json::object();
  if (!meta[section].is_object()) meta[section] = json::object();
  for (const auto& [k, v] : labels.items()) meta[section][k] = v;
}

json TopologyRequest(const CampaignSpec& campaign) {
  const SchedulingSpec& s = campaign.scheduling;
  const HardwareSpec& hw = campaign.hardware;
  if (s.topology_level.empty() || hw.nodes * hw.slices <= 1) return json::object();
  return {
      {s.topology_required ? kKueueRequiredTopology : kKueuePreferredTopology, s.topology_level}};
}

namespace {

// Sets limits[resource] = count on the first container unless some container already asks
// for that resource (the template knows better).
void RequestDevices(json* containers, const std::string& resource, int64_t count) {
  for (const auto& c : *containers) {
    if (c.contains("resources") && c["resources"].is_object()) {
      for (const char* section : {"limits", "requests"}) {
        const json& r = c["resources"].value(section, json::object());
        if (r.is_object() && r.contains(resource)) return;
      }
    }
  }
  json& first = (*containers)[0];
  if (!first["resources"].is_object()) first["resources"] = json::object();
  if (!first["resources"]["limits"].is_object()) first["resources"]["limits"] = json::object();
  first["resources"]["limits"][resource] = std::to_string(count);
}

// True when some container of the template explicitly asks for 0 of `resource` (limits or
// requests "0"): a CPU dry run of the campaign (trial-sim on any node), so the pod must not be
// pinned to accelerator nodes.
bool AsksForNone(const json& containers, const std::string& resource) {
  for (const auto& c : containers) {
    if (!c.is_object() || !c.contains("resources") || !c["resources"].is_object()) continue;
    for (const char* section : {"limits", "requests"}) {
      const json& r = c["resources"].value(section, json::object());
      if (!r.is_object() || !r.contains(resource)) continue;
      const json& v = r[resource];
      if ((v.is_string() && v.get<std::string>() == "0") || (v.is_number() && v == 0)) {
        return true;
      }
    }
  }
  return false;
}

void AddToleration(json* pod_spec, const json& toleration) {
  json& tols = (*pod_spec)["tolerations"];
  if (!tols.is_array()) tols = json::array();
  for (const auto& t : tols) {
    if (t == toleration) return;
  }
  tols.push_back(toleration);
}

}  // namespace

void ApplyHardware(const HardwareSpec& hw, json* pod_spec) {
  json& sel = (*pod_spec)["nodeSelector"];
  if (!sel.is_object()) sel = json::object();
  for (const auto& [k, v] : hw.node_selector) sel[k] = v;
  for (const auto& t : hw.tolerations) AddToleration(pod_spec, t);
  json* containers = &(*pod_spec)["containers"];
  auto default_label = [&](const char* key, const std::string& value) {
    if (hw.OnGke() && !value.empty() && !sel.contains(key)) sel[key] = value;
  };
  const bool dry_run = AsksForNone(*containers, hw.IsTpu() ? "google.com/tpu" : "nvidia.com/gpu");
  if (!dry_run && hw.IsTpu()) {
    default_label(kGkeTpuAcceleratorLabel, GkeTpuAcceleratorName(hw.accelerator));
    default_label(kGkeTpuTopologyLabel, hw.tpu_topology);
    AddToleration(pod_spec,
                  {{"key", "google.com/tpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
    RequestDevices(containers, "google.com/tpu", hw.devices_per_node);
  } else if (!dry_run) {
    default_label(kGkeAcceleratorLabel, GkeGpuAcceleratorName(hw.accelerator));
    AddToleration(pod_spec,
                  {{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}});
    RequestDevices(containers, "nvidia.com/gpu", hw.devices_per_node);
  }
  if (sel.empty()) pod_spec->erase("nodeSelector");
}

namespace {

Status CheckPodSpec(const json& pod_spec) {
  const std::string path = kPodSpecPath;
  if (!pod_spec.is_object()) return Status::Invalid(path + ": required, must be a PodSpec");
  const json& containers = pod_spec.value("containers", json());
  if (!containers.is_array() || containers.empty()) {
    return Status::Invalid(path + ".containers: must list at least one container");
  }
  for (size_t i = 0; i < containers.size(); ++i) {
    const json& c = containers[i];
    std::string cp = path + ".containers[" + std::to_string(i) + "]";
    if (!c.is_object()) return Status::Invalid(cp + ": must be a Container object");
    if (!c.contains("name") || !c["name"].is_string()) {
      return Status::Invalid(cp + ".name: required");
    }
    if (c.contains("env") && !c["env"].is_array())
      return Status::Invalid(cp + ".env: must be a list");
  }
  const std::string policy = pod_spec.value("restartPolicy", "Never");
  if (policy == "Always") {
    return Status::Invalid(path + ".restartPolicy: a trial's pods must not restart (use Never)");
  }
  return Status::Ok();
}

// Fills the pod template: labels, Kueue topology request, env, hardware,
// termination-message policy.
Status RenderPodTemplate(const TrialJobInput& in, const std::string& leader_host,
                         json* pod_template) {
  json& pod_spec = (*pod_template)["spec"];
  PARATUNE_RETURN_IF_ERROR(CheckPodSpec(pod_spec));
  AddLabels(pod_template, TrialLabels(in));
  const json topology = TopologyRequest(*in.campaign);
  if (!topology.empty()) AddLabels(pod_template, topology, "annotations");
  pod_spec["restartPolicy"] = "Never";
  const HardwareSpec& hw = in.campaign->hardware;
  std::vector<json> env = ParatuneEnv(*in.campaign, in.trial_name, in.iteration, in.config);
  for (auto& e : RendezvousEnv(hw, Rendezvous{leader_host, hw.slices})) {
    env.push_back(std::move(e));
  }
  for (auto& c : pod_spec["containers"]) {
    MergeEnv(&c, env);
    if (!c.contains("terminationMessagePolicy")) {
      c["terminationMessagePolicy"] = "FallbackToLogsOnError";
    }
  }
  ApplyHardware(in.campaign->hardware, &pod_spec);
  AvoidNodes(in.avoid_nodes, &pod_spec);
  return Status::Ok();
}

json HeadlessService(const TrialJobInput& in) {
  return {{"apiVersion", "v1"},
          {"kind", "Service"},
          {"metadata",
           {{"name", in.trial_name},
            {"namespace", in.namespace_},
            {"labels", TrialLabels(in)},
            {"ownerReferences", OwnerReference(in)}}},
          {"spec",
           {{"clusterIP", "None"},
            {"publishNotReadyAddresses", true},
            {"selector", {{kTrialLabel, in.trial_name}}},
            {"ports", json::array({{{"name", "torchrun"}, {"port", kTorchrunPort}},
                                   {{"name", "jax"}, {"port", kJaxCoordinatorPort}}})}}}};
}

// The Job spec shared by the plain Job and the JobSet's replicated job.
Result<json> RenderJobSpec(const TrialJobInput& in, const std::string& leader_host,
                           const std::string& subdomain) {
  json tmpl = EffectiveTrialTemplate(*in.campaign, in.default_image);
  json spec = tmpl.value("spec", json::object());
  if (!spec.is_object()) return Status::Invalid("spec.trialTemplate.spec: must be a JobSpec");
  json& pod_template = spec["template"];
  if (!pod_template.is_object()) {
    return Status::Invalid("spec.trialTemplate.spec.template: required, must be a PodTemplateSpec");
  }
  PARATUNE_RETURN_IF_ERROR(RenderPodTemplate(in, leader_host, &pod_template));
  const int64_t nodes = in.campaign->hardware.nodes;
  spec["backoffLimit"] = 0;
  spec["activeDeadlineSeconds"] = in.campaign->budget.trial_timeout_seconds;
  spec.erase("selector");
  spec.erase("manualSelector");
  if (nodes > 1) {
    spec["completionMode"] = "Indexed";
    spec["completions"] = nodes;
    spec["parallelism"] = nodes;
    if (!subdomain.empty()) pod_template["spec"]["subdomain"] = subdomain;
  } else {
    spec["completions"] = 1;
    spec["parallelism"] = 1;
  }
  return spec;
}

}  // namespace

void AvoidNodes(const std::vector<std::string>& nodes, json* pod_spec) {
  if (nodes.empty()) return;
  const json expr = {{"key", "kubernetes.io/hostname"}, {"operator", "NotIn"}, {"values", nodes}};
  json& affinity = (*pod_spec)["affinity"];
  if (!affinity.is_object()) affinity = json::object();
  json& node_affinity = affinity["nodeAffinity"];
  if (!node_affinity.is_object()) node_affinity = json::object();
  json& required = node_affinity["requiredDuringSchedulingIgnoredDuringExecution"];
  if (!required.is_object()) required = json::object();
  json& terms = required["nodeSelectorTerms"];
  if (!terms.is_array() || terms.empty()) terms = json::array({json::object()});
  for (auto& term : terms) {
    if (!term.is_object()) term = json::object();
    json& exprs = term["matchExpressions"];
    if (!exprs.is_array()) exprs = json::array();
    exprs.push_back(expr);
  }
}

std::string TrialQueueName(const CampaignSpec& campaign) {
  if (!campaign.queue_name.empty()) return campaign.queue_name;
  const json& meta = campaign.trial_template.is_object()
                         ? campaign.trial_template.value("metadata", json::object())
                         : json::object();
  const json& labels = meta.is_object() ? meta.value("labels", json::object()) : json::object();
  if (!labels.is_object()) return "";
  const json& q = labels.value(kKueueQueueLabel, json());
  return q.is_string() ? q.get<std::string>() : "";
}

std::string GkeTpuAcceleratorName(const std::string& catalog_name) {
  static const std::map<std::string, std::string> kNames = {{"tpu-v4", "tpu-v4-podslice"},
                                                            {"tpu-v5e", "tpu-v5-lite-podslice"},
                                                            {"tpu-v5p", "tpu-v5p-slice"},
                                                            {"tpu-v6e", "tpu-v6e-slice"}};
  auto it = kNames.find(catalog_name);
  if (it != kNames.end()) return it->second;
  return catalog_name.rfind("tpu-", 0) == 0 ? catalog_name : "";
}

std::string GkeGpuAcceleratorName(const std::string& catalog_name) {
  static const std::map<std::string, std::string> kNames = {
      {"nvidia-a100-80gb", "nvidia-a100-80gb"},
      {"nvidia-h100-80gb", "nvidia-h100-80gb"},
      {"nvidia-h200", "nvidia-h200-141gb"},
      {"nvidia-b200", "nvidia-b200"},
      {"nvidia-v100-16gb", "nvidia-tesla-v100"}};
  auto it = kNames.find(catalog_name);
  return it != kNames.end() ? it->second : catalog_name;
}

json EffectiveTrialTemplate(const CampaignSpec& campaign, const std::string& image) {
  if (campaign.trial_template.is_object() && !campaign.trial_template.empty()) {
    return campaign.trial_template;
  }
  json container = {
      {"name", "trainer"}, {"image", image}, {"command", json::array({"paratune", "trial-sim"})}};
  return {{"spec",
           {{"backoffLimit", 0},
            {"template",
             {{"spec", {{"restartPolicy", "Never"}, {"containers", json::array({container})}}}}}}}};
}

json TrialObjectMeta(const TrialJobInput& in) {
  json meta = {{"name", in.trial_name},
               {"namespace", in.namespace_},
               {"labels", TrialLabels(in)},
               {"ownerReferences", OwnerReference(in)}};
  json tmpl = EffectiveTrialTemplate(*in.campaign, in.default_image);
  if (tmpl.contains("metadata") && tmpl["metadata"].is_object()) {
    for (const char* k : {"labels", "annotations"}) {
      const json& src = tmpl["metadata"].value(k, json::object());
      if (!src.is_object()) continue;
      for (const auto& [lk, lv] : src.items()) {
        if (!meta[k].contains(lk)) meta[k][lk] = lv;
      }
    }
  }
  const std::string queue = TrialQueueName(*in.campaign);
  if (!queue.empty()) meta["labels"][kKueueQueueLabel] = queue;
  return meta;
}

bool IsTrainJobTemplate(const CampaignSpec& campaign) {
  const json& t = campaign.trial_template;
  return t.is_object() && t.value("kind", json()) == json("TrainJob");
}

std::string TrialWorkloadKind(const CampaignSpec& campaign, bool jobset_available) {
  if (IsTrainJobTemplate(campaign)) return "TrainJob";
  const HardwareSpec& hw = campaign.hardware;
  return (hw.nodes > 1 || hw.slices > 1) && jobset_available ? "JobSet" : "Job";
}

namespace {

// The JobSet of a multi-node or multi-slice trial: one replicated job with one child Job per
// TPU slice (replicas = hardware.slices), failure and startup policies from spec.scheduling.
Result<RenderedTrial> RenderJobSet(const TrialJobInput& in, json meta) {
  const CampaignSpec& c = *in.campaign;
  if (c.hardware.IsTpu() && c.hardware.OnGke()) {
    // One slice per child Job: JobSet's exclusive placement puts each child Job's pods in one
    // node pool (a TPU slice) that no other Job shares.
    meta["annotations"][kJobSetExclusiveTopology] = kGkeNodePoolLabel;
  }
  // JobSet pods are named <jobset>-<replicatedJob>-<jobIndex>-<podIndex>, subdomain <jobset>.
  std::string leader = in.trial_name + "-" + kJobSetReplicatedJob + "-0-0." + in.trial_name;
  auto spec = RenderJobSpec(in, leader, "");
  if (!spec.ok()) return spec.status();
  RenderedTrial out;
  out.kind = "JobSet";
  // failurePolicy.maxRestarts: how often JobSet recreates all child Jobs after one fails
  // (jobset.x-k8s.io/v1alpha2 FailurePolicy); startupPolicyOrder InOrder starts replicated jobs
  // one after another (one replicated job here, so it only matters with a sidecar job).
  out.workload = {
      {"apiVersion", "jobset.x-k8s.io/v1alpha2"},
      {"kind", "JobSet"},
      {"metadata", meta},
      {"spec",
       {{"failurePolicy", {{"maxRestarts", c.scheduling.max_restarts}}},
        {"startupPolicy", {{"startupPolicyOrder", c.scheduling.startup_policy}}},
        {"network", {{"enableDNSHostnames", true}}},
        {"replicatedJobs",
         json::array(
             {{{"name", kJobSetReplicatedJob},
               {"replicas", std::max<int64_t>(1, c.hardware.slices)},
               {"template", {{"metadata", {{"labels", TrialLabels(in)}}}, {"spec", *spec}}}}})}}}};
  // Kueue admits the JobSet as a whole; its child Jobs follow the JobSet's suspend.
  if (!TrialQueueName(c).empty()) out.workload["spec"]["suspend"] = true;
  return out;
}

}  // namespace

Result<RenderedTrial> RenderTrial(const TrialJobInput& in) {
  if (in.campaign == nullptr) return Status::Internal("RenderTrial: no campaign");
  const HardwareSpec& hw = in.campaign->hardware;
  json meta = TrialObjectMeta(in);
  const std::string kind = TrialWorkloadKind(*in.campaign, in.jobset_available);
  if (kind == "TrainJob") return RenderTrainJob(in, std::move(meta));
  if (kind == "JobSet") return RenderJobSet(in, std::move(meta));
  if (hw.slices > 1) {
    return Status::Invalid(
        "spec.hardware.slices: a multi-slice trial runs as a JobSet, and the JobSet API "
        "(jobset.x-k8s.io/v1alpha2) was not found on this cluster");
  }
  RenderedTrial out;
  std::string leader = in.trial_name + "-0." + in.trial_name;
  auto spec = RenderJobSpec(in, leader, in.trial_name);
  if (!spec.ok()) return spec.status();
  out.workload = {{"apiVersion", "batch/v1"}, {"kind", "Job"}, {"metadata", meta}, {"spec", *spec}};
  // Created suspended: Kueue admits it by setting spec.suspend false. Kubernetes counts
  // activeDeadlineSeconds from the Job's startTime, which it resets on resume, so the trial
  // timeout starts at admission.
  if (!TrialQueueName(*in.campaign).empty()) out.workload["spec"]["suspend"] = true;
  if (hw.nodes > 1) out.service = HeadlessService(in);
  return out;
}

}  // namespace paratune::controllers
