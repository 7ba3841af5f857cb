#include "controllers/job_renderer.h"

#include <gtest/gtest.h>

#include <string>

namespace paratune::controllers {
namespace {

using nlohmann::json;

CampaignSpec GpuCampaign() {
  auto c = CampaignFromYaml(R"(
apiVersion: tuning.paratune.dev/v1alpha1
kind: TuningCampaign
metadata: {name: llama, namespace: team-a}
spec:
  model: {preset: llama3-8b}
  training: {framework: megatron-lm, seqLength: 8192, globalBatchSize: 512}
  hardware:
    accelerator: nvidia-h100-80gb
    nodes: 1
    devicesPerNode: 8
    nodeSelector: {pool: train}
    tolerations: [{key: dedicated, operator: Equal, value: ml, effect: NoSchedule}]
  searchSpace:
    parameters:
    - {name: tp, values: [1, 2]}
    - {name: recompute, values: [none, full]}
    - {name: sequenceParallel, values: [true, false]}
  budget: {trialTimeout: 20m}
  trialTemplate:
    metadata: {labels: {team: ml}}
    spec:
      template:
        spec:
          containers:
          - name: trainer
            image: megatron:24.05
            command: [torchrun, --tp, $(PARATUNE_TP)]
            env: [{name: PARATUNE_TP, value: stale}, {name: NCCL_DEBUG, value: INFO}]
          - name: sidecar
            image: busybox
)");
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return *c;
}

TrialJobInput Input(const CampaignSpec* c) {
  TrialJobInput in;
  in.campaign = c;
  in.namespace_ = "team-a";
  in.trial_name = "llama-t003";
  in.trial_uid = "uid-123";
  in.iteration = 3;
  in.config = {{"tp", ParamValue::Int(2)},
               {"recompute", ParamValue::Enum("selective")},
               {"sequenceParallel", ParamValue::Bool(true)}};
  return in;
}

std::string EnvValue(const json& container, const std::string& name) {
  for (const auto& e : container["env"]) {
    if (e["name"] == name) return e.value("value", "<valueFrom>");
  }
  return "<absent>";
}

TEST(JobRendererTest, GpuJobCarriesEnvLabelsOwnerAndDeadline) {
  CampaignSpec c = GpuCampaign();
  auto r = RenderTrial(Input(&c));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->kind, "Job");
  EXPECT_FALSE(r->service.has_value());
  const json& job = r->workload;
  EXPECT_EQ(job["apiVersion"], "batch/v1");
  EXPECT_EQ(job["metadata"]["name"], "llama-t003");
  EXPECT_EQ(job["metadata"]["labels"][kCampaignLabel], "llama");
  EXPECT_EQ(job["metadata"]["labels"][kTrialLabel], "llama-t003");
  EXPECT_EQ(job["metadata"]["labels"]["team"], "ml");
  const json& owner = job["metadata"]["ownerReferences"][0];
  EXPECT_EQ(owner["kind"], "TrialRun");
  EXPECT_EQ(owner["uid"], "uid-123");
  EXPECT_EQ(owner["controller"], true);
  EXPECT_EQ(job["spec"]["backoffLimit"], 0);
  EXPECT_EQ(job["spec"]["activeDeadlineSeconds"], 1200);
  const json& pod = job["spec"]["template"];
  EXPECT_EQ(pod["metadata"]["labels"][kTrialLabel], "llama-t003");
  EXPECT_EQ(pod["spec"]["restartPolicy"], "Never");
  for (const auto& container : pod["spec"]["containers"]) {
    EXPECT_EQ(EnvValue(container, "PARATUNE_TP"), "2");
    EXPECT_EQ(EnvValue(container, "PARATUNE_RECOMPUTE"), "selective");
    EXPECT_EQ(EnvValue(container, "PARATUNE_SEQUENCE_PARALLEL"), "true");
    EXPECT_EQ(EnvValue(container, "PARATUNE_CAMPAIGN"), "llama");
    EXPECT_EQ(EnvValue(container, "PARATUNE_TRIAL"), "llama-t003");
    EXPECT_EQ(EnvValue(container, "PARATUNE_ITERATION"), "3");
    EXPECT_EQ(container["terminationMessagePolicy"], "FallbackToLogsOnError");
    json workload = json::parse(EnvValue(container, "PARATUNE_WORKLOAD"));
    EXPECT_EQ(workload["hardware"]["accelerator"], "nvidia-h100-80gb");
  }
  const json& trainer = pod["spec"]["containers"][0];
  EXPECT_EQ(EnvValue(trainer, "NCCL_DEBUG"), "INFO");
  // Rendezvous variables on one node too (issue 35): a multi-node template runs unchanged.
  EXPECT_EQ(EnvValue(trainer, "NODE_RANK"), "0");
  EXPECT_EQ(EnvValue(trainer, "NNODES"), "1");
  EXPECT_EQ(EnvValue(trainer, "MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(trainer["resources"]["limits"]["nvidia.com/gpu"], "8");
  EXPECT_FALSE(pod["spec"]["containers"][1].contains("resources"));
  EXPECT_EQ(pod["spec"]["nodeSelector"]["pool"], "train");
  // A GPU campaign is generic unless it says gke: hardware.nodeSelector alone picks nodes.
  EXPECT_FALSE(pod["spec"]["nodeSelector"].contains(kGkeAcceleratorLabel));
  EXPECT_FALSE(job["spec"].contains("suspend"));
  EXPECT_FALSE(job["metadata"]["labels"].contains(kKueueQueueLabel));
  bool dedicated = false;
  for (const auto& t : pod["spec"]["tolerations"]) dedicated |= t["key"] == "dedicated";
  EXPECT_TRUE(dedicated);
}

// A template that asks for 0 GPUs is a CPU dry run (manifests/samples/simulated-*.yaml): no
// accelerator selector, no GPU toleration, no GPU request; the user's own selector stays.
TEST(JobRendererTest, ZeroGpuTemplateIsNotPinnedToAcceleratorNodes) {
  CampaignSpec c = GpuCampaign();
  c.trial_template["spec"]["template"]["spec"]["containers"][0]["resources"] = {
      {"limits", {{"cpu", "500m"}, {"nvidia.com/gpu", "0"}}}};
  auto r = RenderTrial(Input(&c));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& pod = r->workload["spec"]["template"]["spec"];
  EXPECT_FALSE(pod["nodeSelector"].contains("cloud.google.com/gke-accelerator"));
  EXPECT_EQ(pod["nodeSelector"]["pool"], "train");
  for (const auto& t : pod["tolerations"]) EXPECT_NE(t["key"], "nvidia.com/gpu");
  EXPECT_EQ(pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"], "0");
}

TEST(JobRendererTest, RenderingIsDeterministic) {
  CampaignSpec c = GpuCampaign();
  auto a = RenderTrial(Input(&c));
  auto b = RenderTrial(Input(&c));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->workload.dump(), b->workload.dump());
}

TEST(JobRendererTest, MultiNodeGpuIsIndexedJobWithHeadlessService) {
  CampaignSpec c = GpuCampaign();
  c.hardware.nodes = 4;
  auto r = RenderTrial(Input(&c));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& spec = r->workload["spec"];
  EXPECT_EQ(spec["completionMode"], "Indexed");
  EXPECT_EQ(spec["completions"], 4);
  EXPECT_EQ(spec["parallelism"], 4);
  EXPECT_EQ(spec["template"]["spec"]["subdomain"], "llama-t003");
  const json& trainer = spec["template"]["spec"]["containers"][0];
  EXPECT_EQ(EnvValue(trainer, "MASTER_ADDR"), "llama-t003-0.llama-t003");
  EXPECT_EQ(EnvValue(trainer, "MASTER_PORT"), "29500");
  EXPECT_EQ(EnvValue(trainer, "WORLD_SIZE"), "32");  // processes: 4 nodes x 8 GPUs
  EXPECT_EQ(EnvValue(trainer, "NNODES"), "4");
  EXPECT_EQ(EnvValue(trainer, "JAX_COORDINATOR_IP"), "llama-t003-0.llama-t003");
  EXPECT_EQ(EnvValue(trainer, "JAX_COORDINATOR_PORT"), "8476");
  EXPECT_EQ(EnvValue(trainer, "NODE_RANK"), "<valueFrom>");
  EXPECT_EQ(EnvValue(trainer, "JAX_PROCESS_ID"), "$(NODE_RANK)");
  ASSERT_TRUE(r->service.has_value());
  EXPECT_EQ((*r->service)["spec"]["clusterIP"], "None");
  EXPECT_EQ((*r->service)["spec"]["selector"][kTrialLabel], "llama-t003");
  EXPECT_EQ((*r->service)["metadata"]["ownerReferences"][0]["uid"], "uid-123");
}

TEST(JobRendererTest, TpuUsesGkeSelectorsAndJobSetWhenInstalled) {
  auto c = CampaignFromYaml(R"(
metadata: {name: gemma}
spec:
  model: {preset: llama3-8b}
  training: {globalBatchSize: 64}
  hardware: {accelerator: tpu-v5e, tpuTopology: 4x4}
  searchSpace: {parameters: [{name: iciFsdp, values: [4, 16]}]}
)");
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->hardware.nodes, 4);
  TrialJobInput in = Input(&*c);
  in.config = {{"iciFsdp", ParamValue::Int(16)}};
  auto job = RenderTrial(in);
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  const json& pod = job->workload["spec"]["template"]["spec"];
  EXPECT_EQ(pod["nodeSelector"]["cloud.google.com/gke-tpu-accelerator"], "tpu-v5-lite-podslice");
  EXPECT_EQ(pod["nodeSelector"]["cloud.google.com/gke-tpu-topology"], "4x4");
  EXPECT_FALSE(pod["nodeSelector"].contains("cloud.google.com/gke-accelerator"));
  EXPECT_EQ(pod["containers"][0]["resources"]["limits"]["google.com/tpu"], "4");
  EXPECT_EQ(pod["containers"][0]["command"][1], "trial-sim");  // the default template
  EXPECT_EQ(EnvValue(pod["containers"][0], "PARATUNE_ICI_FSDP"), "16");

  in.jobset_available = true;
  auto js = RenderTrial(in);
  ASSERT_TRUE(js.ok());
  EXPECT_EQ(js->kind, "JobSet");
  EXPECT_FALSE(js->service.has_value());
  // One slice per trial: exclusive placement per GKE node pool.
  EXPECT_EQ(js->workload["metadata"]["annotations"][kJobSetExclusiveTopology],
            "cloud.google.com/gke-nodepool");
  const json& rj = js->workload["spec"]["replicatedJobs"][0];
  EXPECT_EQ(rj["template"]["spec"]["completions"], 4);
  EXPECT_EQ(EnvValue(rj["template"]["spec"]["template"]["spec"]["containers"][0], "MASTER_ADDR"),
            "llama-t003-workers-0-0.llama-t003");
}

// GKE's labels are defaults only on platform gke, and the campaign's own nodeSelector wins.
TEST(JobRendererTest, GkeAcceleratorLabelOnlyWhenTheCampaignAsksForGke) {
  CampaignSpec c = GpuCampaign();
  c.hardware.platform = "gke";
  auto r = RenderTrial(Input(&c));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& sel = r->workload["spec"]["template"]["spec"]["nodeSelector"];
  EXPECT_EQ(sel[kGkeAcceleratorLabel], "nvidia-h100-80gb");
  EXPECT_EQ(sel["pool"], "train");
  c.hardware.node_selector[kGkeAcceleratorLabel] = "nvidia-h100-mega-80gb";
  r = RenderTrial(Input(&c));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->workload["spec"]["template"]["spec"]["nodeSelector"][kGkeAcceleratorLabel],
            "nvidia-h100-mega-80gb");
  // generic with no selector of its own: no nodeSelector at all (any node with GPUs).
  c.hardware.platform = "generic";
  c.hardware.node_selector.clear();
  r = RenderTrial(Input(&c));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->workload["spec"]["template"]["spec"].contains("nodeSelector"));
  EXPECT_EQ(r->workload["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
                       ["nvidia.com/gpu"],
            "8");
}

TEST(JobRendererTest, PlatformDefaultsToGkeForTpusOnlyAndCanBeOverridden) {
  auto gpu = CampaignFromYaml(R"(
spec:
  model: {preset: llama3-8b}
  training: {globalBatchSize: 64}
  hardware: {accelerator: nvidia-h100-80gb}
  searchSpace: {parameters: [{name: tp, values: [1, 2]}]}
)");
  ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
  EXPECT_EQ(gpu->hardware.platform, "generic");
  auto tpu = CampaignFromYaml(R"(
spec:
  model: {preset: llama3-8b}
  training: {globalBatchSize: 64}
  hardware: {accelerator: tpu-v5e, tpuTopology: 2x2, platform: generic,
             nodeSelector: {tpu-pool: v5e}}
  searchSpace: {parameters: [{name: iciFsdp, values: [4]}]}
)");
  ASSERT_TRUE(tpu.ok()) << tpu.status().ToString();
  EXPECT_EQ(tpu->hardware.platform, "generic");
  TrialJobInput in = Input(&*tpu);
  in.config = {{"iciFsdp", ParamValue::Int(4)}};
  auto r = RenderTrial(in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& sel = r->workload["spec"]["template"]["spec"]["nodeSelector"];
  EXPECT_EQ(sel, json({{"tpu-pool", "v5e"}}));
  auto bad = CampaignFromYaml(R"(
spec:
  model: {preset: llama3-8b}
  training: {globalBatchSize: 64}
  hardware: {accelerator: nvidia-h100-80gb, platform: eks}
  searchSpace: {parameters: [{name: tp, values: [1, 2]}]}
)");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.hardware.platform"), std::string::npos);
}

// spec.queueName: the Job carries Kueue's label and is created suspended for Kueue to admit.
TEST(JobRendererTest, QueueNamedCampaignCreatesSuspendedJobsWithKueueLabel) {
  CampaignSpec c = GpuCampaign();
  c.queue_name = "team-a-gpus";
  auto r = RenderTrial(Input(&c));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->workload["metadata"]["labels"][kKueueQueueLabel], "team-a-gpus");
  EXPECT_EQ(r->workload["spec"]["suspend"], true);
  EXPECT_EQ(r->workload["spec"]["activeDeadlineSeconds"], 1200);
  // A queue label on the template alone is a queue too (Kueue would suspend the Job anyway).
  c.queue_name.clear();
  c.trial_template["metadata"]["labels"][kKueueQueueLabel] = "from-template";
  EXPECT_EQ(TrialQueueName(c), "from-template");
  r = RenderTrial(Input(&c));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->workload["spec"]["suspend"], true);
  // JobSets are admitted whole: the JobSet is suspended and labelled.
  c.hardware.nodes = 2;
  TrialJobInput in = Input(&c);
  in.jobset_available = true;
  r = RenderTrial(in);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->kind, "JobSet");
  EXPECT_EQ(r->workload["spec"]["suspend"], true);
  EXPECT_EQ(r->workload["metadata"]["labels"][kKueueQueueLabel], "from-template");
  // GPU JobSets on a generic cluster get no GKE node-pool exclusivity.
  EXPECT_FALSE(r->workload["metadata"].contains("annotations") &&
               r->workload["metadata"]["annotations"].contains(kJobSetExclusiveTopology));
  auto bad = CampaignFromJson(json::parse(R"({"spec": {"model": {"preset": "llama3-8b"},
      "training": {"globalBatchSize": 64}, "hardware": {"accelerator": "nvidia-h100-80gb"},
      "searchSpace": {"parameters": [{"name": "tp", "values": [1]}]},
      "queueName": "no spaces allowed"}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.queueName"), std::string::npos);
}

TEST(JobRendererTest, UnusableTemplateIsRefusedNamingTheField) {
  CampaignSpec c = GpuCampaign();
  c.trial_template = {{"spec", {{"template", {{"spec", {{"containers", json::array()}}}}}}}};
  auto r = RenderTrial(Input(&c));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("spec.trialTemplate.spec.template.spec.containers"),
            std::string::npos);
  c.trial_template["spec"]["template"]["spec"] = {{"restartPolicy", "Always"},
                                                  {"containers", json::array({{{"name", "x"}}})}};
  r = RenderTrial(Input(&c));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("restartPolicy"), std::string::npos);
}

TEST(JobRendererTest, GkeNames) {
  EXPECT_EQ(GkeTpuAcceleratorName("tpu-v5p"), "tpu-v5p-slice");
  EXPECT_EQ(GkeTpuAcceleratorName("tpu-v4"), "tpu-v4-podslice");
  EXPECT_EQ(GkeTpuAcceleratorName("tpu-v6e"), "tpu-v6e-slice");
  EXPECT_EQ(GkeTpuAcceleratorName("nvidia-h200"), "");
  EXPECT_EQ(GkeGpuAcceleratorName("nvidia-h200"), "nvidia-h200-141gb");
  EXPECT_EQ(GkeGpuAcceleratorName("nvidia-v100-16gb"), "nvidia-tesla-v100");  // GKE has no 32GB
}

TEST(JobRendererTest, EveryContainerKnowsItsNodeFromTheDownwardApi) {
  CampaignSpec c = GpuCampaign();
  auto r = RenderTrial(Input(&c));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const auto& container : r->workload["spec"]["template"]["spec"]["containers"]) {
    bool found = false;
    for (const auto& e : container["env"]) {
      if (e["name"] != "PARATUNE_NODE_NAME") continue;
      found = true;
      EXPECT_EQ(e["valueFrom"]["fieldRef"]["fieldPath"], "spec.nodeName");
    }
    EXPECT_TRUE(found) << container.dump();
  }
  // Nothing to avoid: no affinity is invented.
  EXPECT_FALSE(r->workload["spec"]["template"]["spec"].contains("affinity"));
}

TEST(JobRendererTest, AvoidedNodesMergeIntoTheTemplatesOwnAffinity) {
  CampaignSpec c = GpuCampaign();
  json& pod = c.trial_template["spec"]["template"]["spec"];
  pod["affinity"] = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           json::array(
               {{{"matchExpressions",
                  json::array({{{"key", "zone"}, {"operator", "In"}, {"values", {"a"}}}})}},
                {{"matchExpressions",
                  json::array({{{"key", "zone"}, {"operator", "In"}, {"values", {"b"}}}})}}})}}},
        {"preferredDuringSchedulingIgnoredDuringExecution",
         json::array({{{"weight", 1}, {"preference", json::object()}}})}}},
      {"podAntiAffinity", {{"x", 1}}}};
  TrialJobInput in = Input(&c);
  in.avoid_nodes = {"gpu-2", "gpu-3"};
  auto r = RenderTrial(in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& aff = r->workload["spec"]["template"]["spec"]["affinity"];
  EXPECT_EQ(aff["podAntiAffinity"]["x"], 1);
  EXPECT_EQ(aff["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"].size(), 1u);
  const json& terms =
      aff["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms.size(), 2u);  // ORed terms: each one must exclude the nodes
  for (const auto& term : terms) {
    ASSERT_EQ(term["matchExpressions"].size(), 2u) << term.dump();
    EXPECT_EQ(term["matchExpressions"][0]["key"], "zone");
    const json& avoid = term["matchExpressions"][1];
    EXPECT_EQ(avoid["key"], "kubernetes.io/hostname");
    EXPECT_EQ(avoid["operator"], "NotIn");
    EXPECT_EQ(avoid["values"], json::array({"gpu-2", "gpu-3"}));
  }
  // Without template affinity, one term holds the exclusion.
  CampaignSpec plain = GpuCampaign();
  TrialJobInput in2 = Input(&plain);
  in2.avoid_nodes = {"gpu-2"};
  auto r2 = RenderTrial(in2);
  ASSERT_TRUE(r2.ok());
  const json& terms2 =
      r2->workload["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                  ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  ASSERT_EQ(terms2.size(), 1u);
  EXPECT_EQ(terms2[0]["matchExpressions"][0]["values"], json::array({"gpu-2"}));
}

}  // namespace
}  // namespace paratune::controllers
