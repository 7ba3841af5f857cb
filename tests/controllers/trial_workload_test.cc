// Issue 35 (trial environment) and issue 38 (multi-slice TPU trials, JobSet policies, Kueue
// topology-aware scheduling, Kubeflow Trainer TrainJobs): what RenderTrial makes of them.
#include <gtest/gtest.h>

#include <string>

#include "agents/model/parallel_plan.h"
#include "agents/model/perf_model.h"
#include "agents/model/workload.h"
#include "controllers/job_renderer.h"
#include "controllers/trainjob_renderer.h"

namespace paratune::controllers {
namespace {

using nlohmann::json;

CampaignSpec Parse(const std::string& yaml) {
  auto c = CampaignFromYaml(yaml);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return c.ok() ? *c : CampaignSpec{};
}

TrialJobInput Input(const CampaignSpec* c, Config config) {
  TrialJobInput in;
  in.campaign = c;
  in.namespace_ = "team-a";
  in.trial_name = "camp-t001";
  in.trial_uid = "uid-1";
  in.iteration = 1;
  in.config = std::move(config);
  return in;
}

const json* Env(const json& container, const std::string& name) {
  for (const auto& e : container["env"]) {
    if (e["name"] == name) return &e;
  }
  return nullptr;
}

std::string EnvValue(const json& container, const std::string& name) {
  const json* e = Env(container, name);
  if (e == nullptr) return "<absent>";
  return e->value("value", "<valueFrom>");
}

constexpr const char* kTwoSlices = R"(
metadata: {name: camp}
spec:
  model: {preset: llama3-8b}
  training: {framework: maxtext, globalBatchSize: 64}
  hardware: {accelerator: tpu-v5e, tpuTopology: 4x4, slices: 2}
  searchSpace: {parameters: [{name: dcnData, values: [1, 2]}, {name: dcnFsdp, values: [1, 2]}]}
  scheduling: {topologyLevel: cloud.google.com/gce-topology-block, topologyPolicy: Required,
               maxRestarts: 2, startupPolicy: InOrder}
)";

TEST(TrialWorkloadTest, TwoSliceTpuTrialIsAJobSetWithAReplicaPerSlice) {
  CampaignSpec c = Parse(kTwoSlices);
  EXPECT_EQ(c.hardware.slices, 2);
  EXPECT_EQ(c.hardware.nodes, 4);  // hosts per 4x4 slice
  EXPECT_EQ(c.hardware.SliceDevices(), 16);
  EXPECT_EQ(c.hardware.TotalDevices(), 32);
  TrialJobInput in = Input(&c, {{"dcnFsdp", ParamValue::Int(2)}});
  // Without the JobSet API a multi-slice trial cannot run: refused, naming the field.
  auto refused = RenderTrial(in);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("spec.hardware.slices"), std::string::npos);
  in.jobset_available = true;
  auto r = RenderTrial(in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->kind, "JobSet");
  const json& spec = r->workload["spec"];
  EXPECT_EQ(spec["failurePolicy"]["maxRestarts"], 2);
  EXPECT_EQ(spec["startupPolicy"]["startupPolicyOrder"], "InOrder");
  const json& rj = spec["replicatedJobs"][0];
  EXPECT_EQ(rj["replicas"], 2);
  EXPECT_EQ(rj["template"]["spec"]["completions"], 4);
  const json& pod = rj["template"]["spec"]["template"];
  EXPECT_EQ(pod["metadata"]["annotations"][kKueueRequiredTopology],
            "cloud.google.com/gce-topology-block");
  const json& container = pod["spec"]["containers"][0];
  EXPECT_EQ(EnvValue(container, "PARATUNE_DCN_FSDP"), "2");
  EXPECT_EQ(EnvValue(container, "MEGASCALE_NUM_SLICES"), "2");
  EXPECT_EQ(EnvValue(container, "MEGASCALE_COORDINATOR_ADDRESS"),
            "camp-t001-workers-0-0.camp-t001");
  EXPECT_EQ(EnvValue(container, "MEGASCALE_PORT"), "8081");
  const json* slice = Env(container, "MEGASCALE_SLICE_ID");
  ASSERT_NE(slice, nullptr);
  EXPECT_EQ((*slice)["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.labels['jobset.sigs.k8s.io/job-index']");
  EXPECT_EQ(EnvValue(container, "NNODES"), "8");
  EXPECT_EQ(EnvValue(container, "JAX_PROCESS_ID"), "<absent>");  // from the TPU environment
  // The workload the trial carries knows its slices (the model reads it back).
  json workload = json::parse(EnvValue(container, "PARATUNE_WORKLOAD"));
  EXPECT_EQ(workload["hardware"]["slices"], 2);
}

TEST(TrialWorkloadTest, DcnAxesAreInTheModel) {
  CampaignSpec c = Parse(kTwoSlices);
  auto w = ResolveWorkload(c);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->devices, 32);
  // dcnData fills the slices by default (MaxText's dcn_data_parallelism: -1).
  ParallelPlan fill = PlanFromConfig(*w, {});
  EXPECT_EQ(fill.dcn_data, 2);
  EXPECT_EQ(fill.ici_fsdp, 16);
  EXPECT_TRUE(FindViolations(*w, fill).empty());
  // The DCN axes must multiply to the slice count.
  ParallelPlan wrong =
      PlanFromConfig(*w, {{"dcnData", ParamValue::Int(2)}, {"dcnFsdp", ParamValue::Int(2)}});
  bool named_slices = false;
  for (const auto& v : FindViolations(*w, wrong)) {
    named_slices |= v.sentence.find("spec.hardware.slices") != std::string::npos;
  }
  EXPECT_TRUE(named_slices);
  // Data, FSDP and pipeline across slices cost differently: FSDP over DCN holds half the
  // weights per chip; pipeline over DCN pays a bubble.
  const Config data = {{"dcnData", ParamValue::Int(2)}};
  const Config fsdp = {{"dcnFsdp", ParamValue::Int(2)}};
  const Config pipe = {{"dcnPipeline", ParamValue::Int(2)}};
  auto e_data = EstimateConfig(*w, data);
  auto e_fsdp = EstimateConfig(*w, fsdp);
  auto e_pipe = EstimateConfig(*w, pipe);
  EXPECT_LT(e_fsdp.memory.parameters_gib, e_data.memory.parameters_gib * 0.6);
  EXPECT_GT(e_pipe.time.pipeline_bubble, 0.0);
  EXPECT_EQ(e_data.time.pipeline_bubble, 0.0);
  EXPECT_NE(e_fsdp.step_time_seconds, e_data.step_time_seconds);
}

TEST(TrialWorkloadTest, SchedulingFieldsAreCheckedNamingTheField) {
  auto bad = CampaignFromYaml(R"(
spec:
  model: {preset: llama3-8b}
  training: {globalBatchSize: 64}
  hardware: {accelerator: nvidia-h100-80gb, slices: 2}
)");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.hardware.slices"), std::string::npos);
  bad = CampaignFromYaml(R"(
spec:
  model: {preset: llama3-8b}
  training: {globalBatchSize: 64}
  hardware: {accelerator: nvidia-h100-80gb}
  searchSpace: {parameters: [{name: tp, values: [1, 2]}]}
  scheduling: {topologyPolicy: Sometimes}
)");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.scheduling.topologyPolicy"), std::string::npos);
  CampaignSpec defaults = Parse(R"(
spec:
  model: {preset: llama3-8b}
  training: {globalBatchSize: 64}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 2}
  searchSpace: {parameters: [{name: tp, values: [1, 2]}]}
)");
  EXPECT_EQ(defaults.scheduling.max_restarts, 0);
  EXPECT_EQ(defaults.scheduling.startup_policy, "AnyOrder");
  TrialJobInput in = Input(&defaults, {});
  in.jobset_available = true;
  auto r = RenderTrial(in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->workload["spec"]["failurePolicy"]["maxRestarts"], 0);
  EXPECT_EQ(r->workload["spec"]["replicatedJobs"][0]["replicas"], 1);
  // No topology level: no topology request.
  const json& pod = r->workload["spec"]["replicatedJobs"][0]["template"]["spec"]["template"];
  EXPECT_FALSE(pod["metadata"].contains("annotations"));
}

TEST(TrialWorkloadTest, TopologyRequestOnMultiNodeTrialsOnly) {
  CampaignSpec c = Parse(R"(
spec:
  model: {preset: llama3-8b}
  training: {globalBatchSize: 64}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 2}
  searchSpace: {parameters: [{name: tp, values: [1, 2]}]}
  scheduling: {topologyLevel: topology.kubernetes.io/rack}
)");
  auto r = RenderTrial(Input(&c, {}));  // an Indexed Job (no JobSet API)
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const json& ann = r->workload["spec"]["template"]["metadata"]["annotations"];
  EXPECT_EQ(ann[kKueuePreferredTopology], "topology.kubernetes.io/rack");  // default Preferred
  EXPECT_FALSE(ann.contains(kKueueRequiredTopology));
  c.hardware.nodes = 1;
  r = RenderTrial(Input(&c, {}));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->workload["spec"]["template"]["metadata"].contains("annotations"));
}

// Issue 35: one template for one node and many. torchrun's WORLD_SIZE counts processes.
TEST(TrialWorkloadTest, RendezvousVariablesOnEveryTrial) {
  CampaignSpec c = Parse(R"(
spec:
  model: {preset: llama3-8b}
  training: {framework: maxtext, globalBatchSize: 64}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 1, devicesPerNode: 8}
  searchSpace: {parameters: [{name: tp, values: [1, 2]}]}
)");
  auto one = RenderTrial(Input(&c, {}));
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  const json& c1 = one->workload["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(EnvValue(c1, "NNODES"), "1");
  EXPECT_EQ(EnvValue(c1, "NODE_RANK"), "0");
  EXPECT_EQ(EnvValue(c1, "NPROC_PER_NODE"), "8");
  EXPECT_EQ(EnvValue(c1, "WORLD_SIZE"), "8");
  EXPECT_EQ(EnvValue(c1, "MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(EnvValue(c1, "MASTER_PORT"), "29500");
  EXPECT_EQ(EnvValue(c1, "JAX_COORDINATOR_IP"), "127.0.0.1");
  EXPECT_EQ(EnvValue(c1, "JAX_COORDINATOR_PORT"), "8476");
  EXPECT_EQ(EnvValue(c1, "JAX_COORDINATOR_ADDRESS"), "127.0.0.1:8476");
  EXPECT_EQ(EnvValue(c1, "JAX_PROCESS_COUNT"), "1");
  EXPECT_EQ(EnvValue(c1, "MEGASCALE_NUM_SLICES"), "<absent>");
  EXPECT_FALSE(one->service.has_value());
  c.hardware.nodes = 2;
  auto two = RenderTrial(Input(&c, {}));
  ASSERT_TRUE(two.ok());
  const json& c2 = two->workload["spec"]["template"]["spec"]["containers"][0];
  EXPECT_EQ(EnvValue(c2, "NNODES"), "2");
  EXPECT_EQ(EnvValue(c2, "WORLD_SIZE"), "16");
  EXPECT_EQ(EnvValue(c2, "NODE_RANK"), "<valueFrom>");
  EXPECT_EQ(EnvValue(c2, "MASTER_ADDR"), "camp-t001-0.camp-t001");
  EXPECT_EQ(EnvValue(c2, "JAX_COORDINATOR_IP"), "camp-t001-0.camp-t001");
}

constexpr const char* kTrainJobCampaign = R"(
metadata: {name: camp}
spec:
  model: {preset: llama3-8b}
  training: {framework: torchtitan, globalBatchSize: 64}
  hardware: {accelerator: nvidia-h100-80gb, nodes: 2, devicesPerNode: 8,
             tolerations: [{key: dedicated, operator: Exists, effect: NoSchedule}]}
  searchSpace: {parameters: [{name: tp, values: [1, 2]}]}
  queueName: team-a-gpus
  scheduling: {topologyLevel: topology.kubernetes.io/rack}
  budget: {trialTimeout: 30m}
  trialTemplate:
    apiVersion: trainer.kubeflow.org/v1alpha1
    kind: TrainJob
    metadata: {labels: {team: ml}}
    spec:
      runtimeRef: {name: torch-distributed}
      trainer:
        image: ghcr.io/pytorch/torchtitan:latest
        args: [--parallelism.tensor_parallel_degree=$(PARATUNE_TP)]
        env: [{name: PARATUNE_TP, value: stale}, {name: NCCL_DEBUG, value: INFO}]
        resourcesPerNode: {limits: {cpu: "32"}}
      runtimePatches:
      - manager: platform.example.com/quota
        trainingRuntimeSpec: {template: {metadata: {labels: {cost-center: "42"}}}}
)";

TEST(TrialWorkloadTest, TrainJobTemplateRendersATrainJob) {
  CampaignSpec c = Parse(kTrainJobCampaign);
  EXPECT_TRUE(IsTrainJobTemplate(c));
  EXPECT_EQ(TrialWorkloadKind(c, true), "TrainJob");
  TrialJobInput in = Input(&c, {{"tp", ParamValue::Int(2)}});
  in.avoid_nodes = {"gpu-7"};
  auto r = RenderTrial(in);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->kind, "TrainJob");
  EXPECT_FALSE(r->service.has_value());
  const json& tj = r->workload;
  EXPECT_EQ(tj["apiVersion"], "trainer.kubeflow.org/v1alpha1");
  EXPECT_EQ(tj["metadata"]["name"], "camp-t001");
  EXPECT_EQ(tj["metadata"]["labels"][kTrialLabel], "camp-t001");
  EXPECT_EQ(tj["metadata"]["labels"]["team"], "ml");
  EXPECT_EQ(tj["metadata"]["labels"][kKueueQueueLabel], "team-a-gpus");
  EXPECT_EQ(tj["metadata"]["ownerReferences"][0]["kind"], "TrialRun");
  const json& spec = tj["spec"];
  EXPECT_EQ(spec["runtimeRef"]["name"], "torch-distributed");
  EXPECT_EQ(spec["suspend"], true);
  EXPECT_EQ(spec["activeDeadlineSeconds"], 1800);
  const json& trainer = spec["trainer"];
  EXPECT_EQ(trainer["numNodes"], 2);
  EXPECT_EQ(trainer["resourcesPerNode"]["limits"]["nvidia.com/gpu"], "8");
  EXPECT_EQ(trainer["resourcesPerNode"]["limits"]["cpu"], "32");
  EXPECT_EQ(EnvValue(trainer, "PARATUNE_TP"), "2");
  EXPECT_EQ(EnvValue(trainer, "NCCL_DEBUG"), "INFO");
  EXPECT_EQ(EnvValue(trainer, "PARATUNE_TRIAL"), "camp-t001");
  // Trainer's torch runtime owns the rendezvous (PET_*): none of ours.
  EXPECT_EQ(EnvValue(trainer, "MASTER_ADDR"), "<absent>");
  EXPECT_EQ(EnvValue(trainer, "NNODES"), "<absent>");
  // The other manager's patch is kept; ours labels the trainer pods.
  const json& patches = spec["runtimePatches"];
  ASSERT_EQ(patches.size(), 2u);
  EXPECT_EQ(patches[0]["manager"], "platform.example.com/quota");
  EXPECT_EQ(patches[1]["manager"], kTrainJobPatchManager);
  const json& rj = patches[1]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0];
  EXPECT_EQ(rj["name"], "node");
  const json& pod = rj["template"]["spec"]["template"];
  EXPECT_EQ(pod["metadata"]["labels"][kTrialLabel], "camp-t001");
  EXPECT_EQ(pod["metadata"]["labels"][kCampaignLabel], "camp");
  EXPECT_EQ(pod["metadata"]["annotations"][kKueuePreferredTopology], "topology.kubernetes.io/rack");
  bool dedicated = false;
  for (const auto& t : pod["spec"]["tolerations"]) dedicated |= t["key"] == "dedicated";
  EXPECT_TRUE(dedicated);
  const json& terms = pod["spec"]["affinity"]["nodeAffinity"]
                         ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
  EXPECT_EQ(terms[0]["matchExpressions"][0]["values"], json::array({"gpu-7"}));
  // Rendering twice (a retried launch) keeps one patch of ours.
  c.trial_template["spec"]["runtimePatches"] = spec["runtimePatches"];
  auto again = RenderTrial(in);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->workload["spec"]["runtimePatches"].size(), 2u);
}

TEST(TrialWorkloadTest, TrainJobWithoutRuntimeRefIsRefusedNamingTheField) {
  CampaignSpec c = Parse(kTrainJobCampaign);
  c.trial_template["spec"].erase("runtimeRef");
  auto r = RenderTrial(Input(&c, {}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("spec.trialTemplate.spec.runtimeRef.name"),
            std::string::npos);
  c = Parse(kTrainJobCampaign);
  c.trial_template["spec"]["trainer"]["env"] = "NCCL_DEBUG=INFO";
  r = RenderTrial(Input(&c, {}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("spec.trialTemplate.spec.trainer.env"), std::string::npos);
}

}  // namespace
}  // namespace paratune::controllers
