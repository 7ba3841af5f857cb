// Issue 38 on the local control plane (real kube-apiserver, controller-manager, scheduler,
// paratune-kubelet-sim, and paratune-operator as a subprocess under its ServiceAccount): a
// campaign whose trialTemplate is a Kubeflow Trainer v2 TrainJob runs to completion.
//
// Trainer's CRDs are served from tests/integration/testdata/trainer/ (trimmed, see its README);
// no Trainer controller runs. The test plays Trainer (and JobSet) the way the Kueue tests play
// Kueue: for each TrainJob it creates the trainer Job of the referenced ClusterTrainingRuntime
// (replicated job "node": an Indexed Job of numNodes pods, named <trainjob>-node-0 as JobSet
// names a child Job), with Trainer's torchrun variables (PET_NNODES, PET_NODE_RANK, ...), the
// TrainJob's trainer env and resourcesPerNode, and the pod labels of its runtime patches; the
// kube-controller-manager and kubelet-sim run it (`paratune trial-sim`); when that Job ends the
// test writes the TrainJob's Complete or Failed condition. The first TrainJob is run with
// every infrastructure fault of the simulator on (PARATUNE_SIM_FAULT_RATE=1), so its trial must
// fail and be diagnosed from its pods; the others with none (PARATUNE_SIM_FAULT_RATE=0).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <fstream>
#include <set>
#include <string>
#include <thread>

#include "controllers/job_renderer.h"
#include "controllers/trainjob_renderer.h"
#include "controllers/trial_reconciler.h"
#include "tests/integration/reliability_harness.h"

namespace paratune::kube::testing {
namespace {

using std::chrono::seconds;

const Json& Field(const Json& obj, const char* key) {
  static const Json kEmpty = Json::object();
  return obj.is_object() && obj.contains(key) && obj[key].is_object() ? obj[key] : kEmpty;
}

const GroupVersionResource kRuntimes{"trainer.kubeflow.org", "v1alpha1", "clustertrainingruntimes",
                                     false, "ClusterTrainingRuntime"};
constexpr const char* kRuntime = "paratune-sim-torch";

// Trainer's CRDs, applied for the test and removed after it.
class TrainerCrds {
 public:
  explicit TrainerCrds(LocalCluster* cluster) : cluster_(cluster) {
    path_ = std::string(PARATUNE_SOURCE_DIR) + "/tests/integration/testdata/trainer/";
    ok_ = cluster->Kubectl("apply -f " + path_ + "trainer.kubeflow.org_trainjobs.yaml -f " + path_ +
                           "trainer.kubeflow.org_clustertrainingruntimes.yaml") == 0 &&
          cluster->Kubectl("wait --for condition=established --timeout=60s -f " + path_) == 0;
  }
  ~TrainerCrds() { cluster_->Kubectl("delete --wait=true --timeout=60s -f " + path_); }
  bool ok() const { return ok_; }

 private:
  LocalCluster* cluster_;
  std::string path_;
  bool ok_ = false;
};

// A ClusterTrainingRuntime as a platform team would write it for torchrun jobs: one replicated
// job "node" running the trainer container (here `paratune trial-sim`, told the node count by
// Trainer's PET_NNODES), tolerating the GPU taint.
Json Runtime() {
  Json container = {{"name", "node"},
                    {"image", "paratune/paratune:latest"},
                    {"command", {"paratune", "trial-sim", "--nodes", "$(PET_NNODES)"}}};
  Json pod = {{"spec",
               {{"restartPolicy", "Never"},
                {"tolerations",
                 {{{"key", "nvidia.com/gpu"}, {"operator", "Exists"}, {"effect", "NoSchedule"}}}},
                {"containers", {container}}}}};
  return {{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
          {"kind", "ClusterTrainingRuntime"},
          {"metadata", {{"name", kRuntime}}},
          {"spec",
           {{"mlPolicy", {{"numNodes", 1}, {"torch", {{"numProcPerNode", "auto"}}}}},
            {"template",
             {{"spec",
               {{"replicatedJobs",
                 {{{"name", "node"},
                   {"template",
                    {{"metadata",
                      {{"labels", {{"trainer.kubeflow.org/trainjob-ancestor-step", "trainer"}}}}},
                     {"spec", {{"template", pod}}}}}}}}}}}}}}};
}

// Plays Trainer's TrainJob controller and JobSet's for the TrainJobs of one namespace.
class FakeTrainer {
 public:
  FakeTrainer(KubeClient* admin, std::string ns) : admin_(admin), ns_(std::move(ns)) {
    thread_ = std::thread([this] {
      while (!stop_) {
        Step();
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    });
  }
  ~FakeTrainer() {
    stop_ = true;
    thread_.join();
  }
  int expanded() const { return expanded_; }

 private:
  void Step() {
    auto list = admin_->List(controllers::kTrainJobs, ns_, {});
    if (!list.ok()) return;
    for (const Json& tj : list->items) {
      const std::string name = NameOf(tj);
      const Json& spec = Field(tj, "spec");
      if (spec.value("suspend", false) || Field(tj, "metadata").contains("deletionTimestamp")) {
        continue;
      }
      auto job = admin_->Get(resources::kJobs, ns_, name + "-node-0");
      if (!job.ok()) {
        if (seen_.insert(name).second) Expand(tj);
        continue;
      }
      Finish(tj, *job);
    }
  }

  // The trainer Job of the TrainJob: the runtime's "node" pod template with the TrainJob's
  // trainer overrides and its runtime patches' pod labels, as Trainer and JobSet would make it.
  void Expand(const Json& tj) {
    const Json& trainer = Field(Field(tj, "spec"), "trainer");
    const int64_t nodes = trainer.value("numNodes", 1);
    Json pod =
        Runtime()["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"];
    Json& c = pod["spec"]["containers"][0];
    Json env = trainer.value("env", Json::array());
    // Trainer's torch plugin (pkg/runtime/framework/plugins/torch): torchrun's PET_* variables.
    env.push_back({{"name", "PET_NNODES"}, {"value", std::to_string(nodes)}});
    env.push_back({{"name", "PET_NPROC_PER_NODE"}, {"value", "8"}});
    env.push_back({{"name", "PET_NODE_RANK"},
                   {"valueFrom",
                    {{"fieldRef",
                      {{"fieldPath",
                        "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}}}}});
    env.push_back({{"name", "PET_MASTER_ADDR"}, {"value", NameOf(tj) + "-node-0-0." + NameOf(tj)}});
    env.push_back({{"name", "PET_MASTER_PORT"}, {"value", "29400"}});
    // Every infrastructure fault on for the first TrainJob, none for the others: the simulator's
    // default 2% draw is keyed on the trial's configuration, so a later trial would otherwise fail
    // or not depending on which configuration the planner picks.
    env.push_back({{"name", "PARATUNE_SIM_FAULT_RATE"}, {"value", expanded_ == 0 ? "1" : "0"}});
    c["env"] = env;
    if (trainer.contains("resourcesPerNode")) c["resources"] = trainer["resourcesPerNode"];
    Json labels = Json::object();
    for (const Json& patch : Field(tj, "spec").value("runtimePatches", Json::array())) {
      const Json& rjs = Field(Field(Field(patch, "trainingRuntimeSpec"), "template"), "spec")
                            .value("replicatedJobs", Json::array());
      for (const Json& rj : rjs) {
        if (rj.value("name", "") != "node") continue;
        const Json& meta =
            Field(Field(Field(Field(rj, "template"), "spec"), "template"), "metadata");
        for (const auto& [k, v] : Field(meta, "labels").items()) labels[k] = v;
      }
    }
    labels["jobset.sigs.k8s.io/jobset-name"] = NameOf(tj);
    labels["jobset.sigs.k8s.io/replicatedjob-name"] = "node";
    pod["metadata"] = {{"labels", labels}};
    Json job = {{"apiVersion", "batch/v1"},
                {"kind", "Job"},
                {"metadata",
                 {{"name", NameOf(tj) + "-node-0"},
                  {"namespace", ns_},
                  {"ownerReferences",
                   {{{"apiVersion", "trainer.kubeflow.org/v1alpha1"},
                     {"kind", "TrainJob"},
                     {"name", NameOf(tj)},
                     {"uid", UidOf(tj)},
                     {"controller", true}}}}}},
                {"spec",
                 {{"completionMode", "Indexed"},
                  {"completions", nodes},
                  {"parallelism", nodes},
                  {"backoffLimit", 0},
                  {"template", pod}}}};
    auto created = admin_->Create(resources::kJobs, ns_, job);
    if (created.ok()) ++expanded_;
  }

  // The TrainJob's condition from its trainer Job's.
  void Finish(const Json& tj, const Json& job) {
    for (const Json& c : Field(tj, "status").value("conditions", Json::array())) {
      if (c.value("status", "") == "True") return;  // already finished
    }
    for (const Json& c : Field(job, "status").value("conditions", Json::array())) {
      if (c.value("status", "") != "True") continue;
      const std::string type = c.value("type", "");
      if (type != "Complete" && type != "Failed") continue;
      Json updated = tj;
      updated["status"] = {
          {"conditions",
           {{{"type", type},
             {"status", "True"},
             {"reason", type == "Complete" ? "JobSetCompleted" : "JobSetFailed"},
             {"message", "jobset " + NameOf(tj) + (type == "Complete" ? " completed" : " failed")},
             {"lastTransitionTime", c.value("lastTransitionTime", "2026-01-01T00:00:00Z")}}}}};
      (void)admin_->UpdateStatus(controllers::kTrainJobs, updated);
      return;
    }
  }

  KubeClient* admin_;
  std::string ns_;
  std::set<std::string> seen_;
  std::atomic<int> expanded_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// The lines of the file at `path` that contain `what` (what a failure message needs of the
// operator's log, which goes with the cluster's directory).
std::string LinesMentioning(const std::string& path, const std::string& what) {
  std::ifstream in(path);
  std::string out;
  for (std::string line; std::getline(in, line);) {
    if (line.find(what) != std::string::npos) out += line + "\n";
  }
  return out;
}

TEST(TrainJobTest, ATrainJobCampaignRunsToCompletionWithMetricsFromTheLastRank) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  TrainerCrds crds(cluster);
  ASSERT_TRUE(crds.ok()) << "see " << cluster->dir() << "/script.log";
  KubeClient* admin = cluster->Admin();
  auto runtime = admin->Create(kRuntimes, "", Runtime());
  ASSERT_TRUE(runtime.ok() || runtime.status().code() == StatusCode::kAlreadyExists)
      << runtime.status().ToString();
  const std::string ns = cluster->NewNamespace("trainjob");
  Json campaign = SimCampaign("tj", 3, 1);
  campaign["spec"]["hardware"]["nodes"] = 2;
  campaign["spec"]["budget"]["earlyStopping"] = false;
  campaign["spec"]["trialTemplate"] = {
      {"apiVersion", "trainer.kubeflow.org/v1alpha1"},
      {"kind", "TrainJob"},
      {"spec", {{"runtimeRef", {{"name", kRuntime}}}, {"trainer", Json::object()}}}};
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, campaign).ok());
  FakeTrainer trainer(admin, ns);
  OperatorProcess op(cluster, {"--namespace", ns}, cluster->dir() + "/" + ns + "-operator.log");
  ASSERT_TRUE(op.Start());
  ASSERT_TRUE(WaitFor([&] { return Finished(admin, ns, "tj"); }, seconds(300)))
      << Describe(admin, ns, "tj") << "\noperator log: " << op.log_path();
  const std::vector<Json> trials = TrialRunsOf(admin, ns, "tj");
  ASSERT_EQ(trials.size(), 3u) << Describe(admin, ns, "tj");
  EXPECT_EQ(trainer.expanded(), 3);
  int succeeded = 0, failed = 0;
  for (const Json& tr : trials) {
    const std::string name = NameOf(tr);
    const Json& st = Field(tr, "status");
    // Each trial ran as a TrainJob owned by its TrialRun, never as a Job of the operator's.
    auto tj = admin->Get(controllers::kTrainJobs, ns, name);
    ASSERT_TRUE(tj.ok()) << name;
    EXPECT_EQ(Field(*tj, "metadata")["ownerReferences"][0].value("uid", ""), UidOf(tr));
    EXPECT_FALSE(admin->Get(resources::kJobs, ns, name).ok()) << name;
    if (st.value("phase", "") == "Succeeded") {
      ++succeeded;
      // Megatron-LM prints on the last rank: node rank 1 of the trainer Job.
      const Json& src = Field(st, "metricsSource");
      EXPECT_EQ(src.value("rank", -1), 1) << st.dump(2);
      // The pod of the trainer Job (`<trainjob>-node-0`) whose completion index is 1 (the 1.20
      // Job controller names pods `<job>-<random>`; the index is the pod's annotation).
      const std::string pod_name = src.value("pod", "");
      EXPECT_EQ(pod_name.rfind(name + "-node-0-", 0), 0u) << st.dump(2);
      auto pod = admin->Get(resources::kPods, ns, pod_name);
      ASSERT_TRUE(pod.ok()) << pod_name;
      const Json annotations = Field(*pod, "metadata").value("annotations", Json::object());
      EXPECT_EQ(annotations.value("batch.kubernetes.io/job-completion-index", ""), "1")
          << pod->dump(2);
      EXPECT_GT(st.value("objective", 0.0), 0.0);
    } else if (st.value("phase", "") == "Failed") {
      ++failed;
      const Json& failure = Field(st, "failure");
      EXPECT_FALSE(failure.value("category", "").empty()) << st.dump(2);
      EXPECT_NE(failure.value("category", ""), "Unknown") << st.dump(2);
      EXPECT_FALSE(Field(st, "observed").value("logTail", "").empty())
          << st.dump(2) << "\nthe operator's log reads:\n"
          << LinesMentioning(op.log_path(), "log not read");
    }
  }
  EXPECT_EQ(failed, 1) << "the first TrainJob ran with every simulated fault";
  EXPECT_EQ(succeeded, 2);
  op.Stop(SIGTERM);
  (void)admin->Delete(kRuntimes, "", kRuntime, {});
}

}  // namespace
}  // namespace paratune::kube::testing
