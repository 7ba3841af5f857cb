// Issue 13 on the local control plane (real kube-apiserver, controller-manager, scheduler,
// paratune-kubelet-sim, and paratune-operator as a subprocess under its ServiceAccount):
//  - Kueue admission: a queue-named multi-node campaign renders a suspended JobSet labelled
//    kueue.x-k8s.io/queue-name; the test plays Kueue by unsuspending it after longer than the
//    trial timeout, and the TrialRun records admissionTime and queueSeconds with an Admitted
//    Event, is not timed out by its queue time, and is ended as Timeout by the operator once
//    the timeout has passed since admission (nothing runs the JobSet here: the test installs
//    the jobsets.jobset.x-k8s.io CRD alone for the duration and removes it).
//  - The same for a batch/v1 Job: on Kubernetes >= 1.21 the Job is held and released the same
//    way, and its trialTimeout, shorter than the time it waited, still lets it finish (the
//    timeout counts from admission); on 1.20 (hack/build-kube.sh) the API server drops
//    spec.suspend and the operator says so instead of pretending to queue.
//  - GitOps output: a ConfigMap the campaign did not create is left untouched with
//    OutputPublished=False; the published one survives the campaign's deletion (garbage
//    collection takes the TrialRuns, not the ConfigMap).
#include <gtest/gtest.h>

#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "controllers/kueue_workload.h"
#include "controllers/trial_reconciler.h"
#include "tests/integration/reliability_harness.h"

namespace paratune::kube::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const Json& Field(const Json& obj, const char* key) {
  static const Json kEmpty = Json::object();
  return obj.is_object() && obj.contains(key) && obj[key].is_object() ? obj[key] : kEmpty;
}

Json TrialRun(KubeClient* c, const std::string& ns, const std::string& name) {
  auto tr = c->Get(resources::kTrialRuns, ns, name);
  return tr.ok() ? *tr : Json::object();
}

const Json* Condition(const Json& status, const std::string& type) {
  if (!status.is_object() || !status.contains("conditions")) return nullptr;
  for (const auto& c : status["conditions"]) {
    if (c.value("type", "") == type) return &c;
  }
  return nullptr;
}

std::vector<Json> EventsFor(KubeClient* c, const std::string& ns, const std::string& object) {
  ListOptions opts;
  opts.field_selector = "involvedObject.name=" + object;
  auto list = c->List(resources::kEvents, ns, opts);
  return list.ok() ? list->items : std::vector<Json>{};
}

bool HasEvent(KubeClient* c, const std::string& ns, const std::string& object,
              const std::string& reason) {
  for (const auto& e : EventsFor(c, ns, object)) {
    if (e.value("reason", "") == reason) return true;
  }
  return false;
}

// A schemaless CRD (jobsets.jobset.x-k8s.io v1alpha2, workloads.kueue.x-k8s.io v1beta1): enough
// for the operator to detect the API and store and read the objects; no controller of theirs
// runs. Removed by the destructor.
class SchemalessCrd {
 public:
  SchemalessCrd(LocalCluster* cluster, const std::string& group, const std::string& version,
                const std::string& plural, const std::string& kind)
      : cluster_(cluster) {
    path_ = cluster->dir() + "/" + plural + "-crd.yaml";
    std::string singular = kind;
    for (char& ch : singular) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    std::ofstream(path_) << "apiVersion: apiextensions.k8s.io/v1\n"
                         << "kind: CustomResourceDefinition\n"
                         << "metadata: {name: " << plural << "." << group << "}\n"
                         << "spec:\n"
                         << "  group: " << group << "\n"
                         << "  scope: Namespaced\n"
                         << "  names: {plural: " << plural << ", singular: " << singular
                         << ", kind: " << kind << ", listKind: " << kind << "List}\n"
                         << "  versions:\n"
                         << "  - name: " << version << "\n"
                         << "    served: true\n"
                         << "    storage: true\n"
                         << "    subresources: {status: {}}\n"
                         << "    schema:\n"
                         << "      openAPIV3Schema: {type: object, "
                            "x-kubernetes-preserve-unknown-fields: true}\n";
    ok_ = cluster->Kubectl("apply -f " + path_) == 0 &&
          cluster->Kubectl("wait --for condition=established --timeout=60s -f " + path_) == 0;
  }
  SchemalessCrd(const SchemalessCrd&) = delete;
  SchemalessCrd& operator=(const SchemalessCrd&) = delete;
  ~SchemalessCrd() { cluster_->Kubectl("delete --wait=true --timeout=60s -f " + path_); }
  bool ok() const { return ok_; }

 private:
  LocalCluster* cluster_;
  std::string path_;
  bool ok_ = false;
};

SchemalessCrd JobSetCrd(LocalCluster* cluster) {
  return SchemalessCrd(cluster, "jobset.x-k8s.io", "v1alpha2", "jobsets", "JobSet");
}

// A two-node campaign on LocalQueue team-q: its trials are JobSets, created suspended.
Json QueuedJobSetCampaign(const std::string& name, int trials) {
  Json campaign = SimCampaign(name, trials, 1);
  campaign["spec"]["hardware"]["nodes"] = 2;
  campaign["spec"]["queueName"] = "team-q";
  return campaign;
}

// The trial's JobSet once the operator has created it (null JSON after 60 s).
Json AwaitJobSet(KubeClient* admin, const std::string& ns, const std::string& trial) {
  Json jobset;
  WaitFor(
      [&] {
        auto js = admin->Get(controllers::kJobSets, ns, trial);
        if (js.ok()) jobset = *js;
        return js.ok();
      },
      seconds(60));
  return jobset;
}

TEST(SchedulingTest, QueuedJobSetWaitsSuspendedUntilTheTestAdmitsIt) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  SchemalessCrd crd = JobSetCrd(cluster);
  ASSERT_TRUE(crd.ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("queue-js");
  Json campaign = QueuedJobSetCampaign("qjs", 1);
  campaign["spec"]["budget"]["trialTimeout"] = "20s";
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, campaign).ok());
  OperatorProcess op(cluster, {"--namespace", ns}, cluster->dir() + "/" + ns + "-operator.log");
  ASSERT_TRUE(op.Start());
  const std::string trial = "qjs-t001";
  const Json jobset = AwaitJobSet(admin, ns, trial);
  ASSERT_FALSE(jobset.is_null()) << Describe(admin, ns, "qjs")
                                 << "\noperator log: " << op.log_path();
  EXPECT_EQ(Field(Field(jobset, "metadata"), "labels").value("kueue.x-k8s.io/queue-name", ""),
            "team-q");
  EXPECT_EQ(Field(jobset, "spec").value("suspend", false), true);
  ASSERT_TRUE(WaitFor(
      [&] {
        const Json tr = TrialRun(admin, ns, trial);  // Condition points into it
        const Json* c = Condition(Field(tr, "status"), "Admitted");
        return c != nullptr && c->value("reason", "") == "Queued";
      },
      seconds(30)))
      << TrialRun(admin, ns, trial).dump(2);
  EXPECT_EQ(Field(TrialRun(admin, ns, trial), "status").value("phase", ""), "Pending");
  EXPECT_TRUE(JobsOf(admin, ns, "qjs").empty());
  // The trial waits in the queue for longer than its 20 s timeout.
  std::this_thread::sleep_for(seconds(25));
  // The test plays Kueue: admission is spec.suspend false.
  auto admitted = admin->Patch(controllers::kJobSets, ns, trial, PatchType::kMerge,
                               Json{{"spec", {{"suspend", false}}}});
  ASSERT_TRUE(admitted.ok()) << StatusText(admitted.status());
  const auto admitted_at = std::chrono::steady_clock::now();
  Json status;
  ASSERT_TRUE(WaitFor(
      [&] {
        status = Field(TrialRun(admin, ns, trial), "status");
        return status.contains("queueSeconds");
      },
      seconds(40)))
      << status.dump(2) << "\noperator log: " << op.log_path();
  EXPECT_GE(status["queueSeconds"].get<int64_t>(), 25);
  EXPECT_NE(status.value("phase", ""), "Failed") << "queue time counted against the timeout";
  EXPECT_FALSE(status.value("admissionTime", "").empty());
  ASSERT_NE(Condition(status, "Admitted"), nullptr);
  EXPECT_EQ(Condition(status, "Admitted")->value("status", ""), "True");
  EXPECT_TRUE(WaitFor([&] { return HasEvent(admin, ns, trial, "Admitted"); }, seconds(10)));
  EXPECT_TRUE(HasEvent(admin, ns, trial, "Queued"));
  // No JobSet controller runs it here: the operator's own deadline ends it 20 s (+ 10 s grace)
  // after admission, not after creation.
  ASSERT_TRUE(WaitFor(
      [&] {
        status = Field(TrialRun(admin, ns, trial), "status");
        return status.value("phase", "") == "Failed";
      },
      seconds(60)))
      << status.dump(2) << "\noperator log: " << op.log_path();
  EXPECT_GE(std::chrono::steady_clock::now() - admitted_at, seconds(20));
  EXPECT_EQ(Field(status, "failure").value("category", ""), "Timeout") << status.dump(2);
  EXPECT_FALSE(admin->Get(controllers::kJobSets, ns, trial).ok()) << "the JobSet must be deleted";
  op.Stop(SIGTERM);
}

// Kueue's reason reaches the trial (controllers/kueue_workload.h): the test plays Kueue by
// creating the Workload of the trial's suspended JobSet (label kueue.x-k8s.io/job-uid) with the
// QuotaReserved=False message Kueue's flavor assigner writes for a request above all the quota
// its ClusterQueue could ever have. The operator, under its ServiceAccount, reads it, fails the
// trial as Unschedulable (not retryable) and deletes the JobSet, instead of leaving it queued.
TEST(SchedulingTest, ATrialKueueCanNeverAdmitFailsInsteadOfWaitingForEver) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  SchemalessCrd jobsets = JobSetCrd(cluster);
  ASSERT_TRUE(jobsets.ok());
  SchemalessCrd workloads(cluster, "kueue.x-k8s.io", "v1beta1", "workloads", "Workload");
  ASSERT_TRUE(workloads.ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("queue-never");
  Json campaign = QueuedJobSetCampaign("qnever", 2);
  campaign["spec"]["budget"]["maxFailedTrials"] = 1;
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, campaign).ok());
  OperatorProcess op(cluster, {"--namespace", ns}, cluster->dir() + "/" + ns + "-operator.log");
  ASSERT_TRUE(op.Start());
  const std::string trial = "qnever-t001";
  const Json jobset = AwaitJobSet(admin, ns, trial);
  ASSERT_FALSE(jobset.is_null()) << Describe(admin, ns, "qnever")
                                 << "\noperator log: " << op.log_path();
  ASSERT_EQ(Field(jobset, "spec").value("suspend", false), true);
  Json wl = {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
             {"kind", "Workload"},
             {"metadata",
              {{"name", "jobset-" + trial + "-5c1d2"},
               {"labels", {{"kueue.x-k8s.io/job-uid", UidOf(jobset)}}}}},
             {"spec", {{"queueName", "team-q"}}}};
  auto created = admin->Create(controllers::kKueueWorkloads, ns, wl);
  ASSERT_TRUE(created.ok()) << StatusText(created.status());
  Json pending = *created;
  pending["status"] = {
      {"conditions",
       {{{"type", "QuotaReserved"},
         {"status", "False"},
         {"reason", "Pending"},
         {"lastTransitionTime", "2026-11-26T07:00:00Z"},
         {"message",
          "couldn't assign flavors to pod set worker: insufficient quota for "
          "nvidia.com/gpu in flavor h100, request > maximum capacity (16 > 8)"}}}}};
  auto updated = admin->UpdateStatus(controllers::kKueueWorkloads, pending);
  ASSERT_TRUE(updated.ok()) << StatusText(updated.status());
  Json status;
  ASSERT_TRUE(WaitFor(
      [&] {
        status = Field(TrialRun(admin, ns, trial), "status");
        return status.value("phase", "") == "Failed";
      },
      seconds(60)))
      << status.dump(2) << "\noperator log: " << op.log_path();
  EXPECT_EQ(Field(status, "failure").value("category", ""), "Unschedulable") << status.dump(2);
  EXPECT_FALSE(Field(status, "failure").value("retryable", true));
  EXPECT_EQ(Field(status, "observed").value("podReason", ""), "Inadmissible");
  EXPECT_TRUE(
      WaitFor([&] { return !admin->Get(controllers::kJobSets, ns, trial).ok(); }, seconds(30)))
      << "the JobSet must be deleted";
  op.Stop(SIGTERM);
}

// Kueue preempts an admitted trial (jobframework stopJob: spec.suspend true again) and admits it
// later. The test plays Kueue: it admits the suspended JobSet, then suspends it again with the
// Workload's Evicted=True (Preempted) condition, then admits it again. The operator, on the real
// API server and under its ServiceAccount, counts the eviction in status.evictions (a field the
// CRD's schema must keep), clears admissionTime by merge patch, says what Kueue said in an
// Evicted Event, and once the JobSet is admitted again gives the trial its whole timeout from
// then: the 20 s counted from the first admission had passed by then.
TEST(SchedulingTest, APreemptedTrialIsQueuedAgainAndTimedFromItsNextAdmission) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  SchemalessCrd jobsets = JobSetCrd(cluster);
  ASSERT_TRUE(jobsets.ok());
  SchemalessCrd workloads(cluster, "kueue.x-k8s.io", "v1beta1", "workloads", "Workload");
  ASSERT_TRUE(workloads.ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("queue-evict");
  Json campaign = QueuedJobSetCampaign("qevict", 1);
  campaign["spec"]["budget"]["trialTimeout"] = "20s";
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, campaign).ok());
  OperatorProcess op(cluster, {"--namespace", ns}, cluster->dir() + "/" + ns + "-operator.log");
  ASSERT_TRUE(op.Start());
  const std::string trial = "qevict-t001";
  const Json jobset = AwaitJobSet(admin, ns, trial);
  ASSERT_FALSE(jobset.is_null()) << Describe(admin, ns, "qevict")
                                 << "\noperator log: " << op.log_path();
  auto suspend = [&](bool value) {
    auto patched = admin->Patch(controllers::kJobSets, ns, trial, PatchType::kMerge,
                                Json{{"spec", {{"suspend", value}}}});
    ASSERT_TRUE(patched.ok()) << StatusText(patched.status());
  };
  suspend(false);
  const auto first_admission = std::chrono::steady_clock::now();
  Json status;
  ASSERT_TRUE(WaitFor(
      [&] {
        status = Field(TrialRun(admin, ns, trial), "status");
        return !status.value("admissionTime", "").empty();
      },
      seconds(30)))
      << status.dump(2) << "\noperator log: " << op.log_path();
  std::this_thread::sleep_for(seconds(16));

  const std::string preempted =
      "Preempted to accommodate a workload (UID: 5c1e, JobUID: 9a7b) due to prioritization in "
      "the ClusterQueue; preemptor path: /team-cq; preemptee path: /team-cq";
  Json wl = {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
             {"kind", "Workload"},
             {"metadata",
              {{"name", "jobset-" + trial + "-7e3f0"},
               {"labels", {{"kueue.x-k8s.io/job-uid", UidOf(jobset)}}}}},
             {"spec", {{"queueName", "team-q"}, {"active", true}}}};
  auto created = admin->Create(controllers::kKueueWorkloads, ns, wl);
  ASSERT_TRUE(created.ok()) << StatusText(created.status());
  Json evicted = *created;
  evicted["status"] = {{"conditions",
                        {{{"type", "QuotaReserved"},
                          {"status", "False"},
                          {"reason", "Pending"},
                          {"lastTransitionTime", "2026-11-30T07:00:00Z"},
                          {"message", preempted}},
                         {{"type", "Evicted"},
                          {"status", "True"},
                          {"reason", "Preempted"},
                          {"lastTransitionTime", "2026-11-30T07:00:00Z"},
                          {"message", preempted}}}}};
  auto updated = admin->UpdateStatus(controllers::kKueueWorkloads, evicted);
  ASSERT_TRUE(updated.ok()) << StatusText(updated.status());
  suspend(true);
  ASSERT_TRUE(WaitFor(
      [&] {
        status = Field(TrialRun(admin, ns, trial), "status");
        return status.value("evictions", 0) == 1;
      },
      seconds(30)))
      << status.dump(2) << "\noperator log: " << op.log_path();
  EXPECT_EQ(status.value("phase", ""), "Pending") << status.dump(2);
  EXPECT_FALSE(status.contains("admissionTime")) << status.dump(2);
  ASSERT_NE(Condition(status, "Admitted"), nullptr);
  EXPECT_EQ(Condition(status, "Admitted")->value("status", ""), "False");
  EXPECT_TRUE(WaitFor([&] { return HasEvent(admin, ns, trial, "Evicted"); }, seconds(10)));

  std::this_thread::sleep_for(seconds(5));
  suspend(false);
  const auto second_admission = std::chrono::steady_clock::now();
  ASSERT_GT(second_admission - first_admission, seconds(20)) << "the first timeout has passed";
  ASSERT_TRUE(WaitFor(
      [&] {
        status = Field(TrialRun(admin, ns, trial), "status");
        return status.value("phase", "") == "Failed";
      },
      seconds(60)))
      << status.dump(2) << "\noperator log: " << op.log_path();
  EXPECT_GE(std::chrono::steady_clock::now() - second_admission, seconds(20)) << status.dump(2);
  EXPECT_EQ(Field(status, "failure").value("category", ""), "Timeout") << status.dump(2);
  EXPECT_EQ(status.value("evictions", 0), 1) << status.dump(2);
  op.Stop(SIGTERM);
}

TEST(SchedulingTest, QueuedJobIsHeldForKueueOrTheOperatorSaysTheClusterCannot) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("queue-job");
  Json campaign = SimCampaign("qjob", 1, 1);
  campaign["spec"]["queueName"] = "team-q";
  campaign["spec"]["budget"]["trialTimeout"] = "20s";
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, campaign).ok());
  OperatorProcess op(cluster, {"--namespace", ns}, cluster->dir() + "/" + ns + "-operator.log");
  ASSERT_TRUE(op.Start());
  const std::string trial = "qjob-t001";
  Json job;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto j = admin->Get(resources::kJobs, ns, trial);
        if (j.ok()) job = *j;
        return j.ok();
      },
      seconds(60)))
      << Describe(admin, ns, "qjob") << "\noperator log: " << op.log_path();
  EXPECT_EQ(Field(Field(job, "metadata"), "labels").value("kueue.x-k8s.io/queue-name", ""),
            "team-q");
  const bool held = Field(job, "spec").value("suspend", false);
  if (held) {
    // Kubernetes >= 1.21: queue for longer than the trial timeout, then admit.
    std::this_thread::sleep_for(seconds(25));
    ASSERT_TRUE(admin
                    ->Patch(resources::kJobs, ns, trial, PatchType::kMerge,
                            Json{{"spec", {{"suspend", false}}}})
                    .ok());
  }
  ASSERT_TRUE(WaitFor([&] { return Finished(admin, ns, "qjob"); }, seconds(180), seconds(1)))
      << Describe(admin, ns, "qjob") << "\noperator log: " << op.log_path();
  const Json status = Field(TrialRun(admin, ns, trial), "status");
  const Json* cond = Condition(status, "Admitted");
  ASSERT_NE(cond, nullptr) << status.dump(2);
  if (held) {
    std::printf("Job held and admitted: queueSeconds %lld\n",
                static_cast<long long>(status.value("queueSeconds", int64_t{0})));
    EXPECT_EQ(status.value("phase", ""), "Succeeded") << status.dump(2);  // timeout from admission
    EXPECT_GE(status.value("queueSeconds", int64_t{0}), 25);
    EXPECT_EQ(cond->value("reason", ""), "Admitted");
  } else {
    std::printf("this API server dropped spec.suspend (Kubernetes < 1.21)\n");
    EXPECT_EQ(cond->value("reason", ""), "SuspendUnsupported");
    EXPECT_EQ(status.value("queueSeconds", int64_t{-1}), 0);
    EXPECT_TRUE(HasEvent(admin, ns, trial, "QueueUnsupported"));
  }
  op.Stop(SIGTERM);
}

// A campaign asking 16 GPUs per node of a cluster whose nodes have 8: the real scheduler leaves
// the pod Pending ("Insufficient nvidia.com/gpu", as it would for GPUs in use). The operator
// lists the Nodes (its ServiceAccount's rights) and fails the trial as Unschedulable, not
// retryable, naming the nodes' size, after infeasible_after (60 s) instead of
// unschedulable_after (180 s), does not re-run it, and the campaign stops (every trial would ask
// for the same pods): stopReason ClusterCannotRun.
TEST(SchedulingTest, ATrialNoNodeCouldEverRunFailsEarlyNamingTheNodesSize) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("too-big");
  Json campaign = SimCampaign("toobig", 2, 1);
  campaign["spec"]["hardware"]["devicesPerNode"] = 16;
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, campaign).ok());
  OperatorProcess op(cluster, {"--namespace", ns}, cluster->dir() + "/" + ns + "-operator.log");
  ASSERT_TRUE(op.Start());
  const std::string trial = "toobig-t001";
  Json status;
  const auto start = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitFor(
      [&] {
        status = Field(TrialRun(admin, ns, trial), "status");
        return status.value("phase", "") == "Failed";
      },
      seconds(150), seconds(1)))
      << status.dump(2) << "\n"
      << Describe(admin, ns, "toobig") << "\noperator log: " << op.log_path();
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("failed %.0f s after the operator started\n", waited);
  EXPECT_LT(waited, 150.0);
  const Json& failure = Field(status, "failure");
  EXPECT_EQ(failure.value("category", ""), "Unschedulable") << failure.dump(2);
  EXPECT_FALSE(failure.value("retryable", true)) << failure.dump(2);
  EXPECT_EQ(failure.value("signature", ""), "cluster-nodes") << failure.dump(2);
  EXPECT_NE(
      failure.value("summary", "").find("offer at most 8 nvidia.com/gpu (the pod requests 16)"),
      std::string::npos)
      << failure.dump(2);
  EXPECT_TRUE(WaitFor([&] { return !admin->Get(resources::kJobs, ns, trial).ok(); }, seconds(30)))
      << "the Job must be deleted";
  ASSERT_TRUE(WaitFor([&] { return Finished(admin, ns, "toobig"); }, seconds(60), seconds(1)))
      << Describe(admin, ns, "toobig");
  EXPECT_EQ(TrialRunsOf(admin, ns, "toobig").size(), 1u) << "neither re-run nor followed";
  auto toobig = admin->Get(resources::kTuningCampaigns, ns, "toobig");
  ASSERT_TRUE(toobig.ok());
  const Json campaign_status = Field(*toobig, "status");
  EXPECT_EQ(campaign_status.value("stopReason", ""), "ClusterCannotRun") << campaign_status.dump(2);
  EXPECT_EQ(campaign_status.value("phase", ""), "Failed");
  op.Stop(SIGTERM);
}

TEST(SchedulingTest, OutputConfigMapIsNeverAdoptedAndOutlivesItsCampaign) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("gitops");
  Json foreign = {
      {"apiVersion", "v1"},
      {"kind", "ConfigMap"},
      {"metadata",
       {{"name", "prod-parallelism"}, {"labels", {{"app.kubernetes.io/managed-by", "Helm"}}}}},
      {"data", {{"tp", "8"}}}};
  ASSERT_TRUE(admin->Create(resources::kConfigMaps, ns, foreign).ok());
  Json theirs = SimCampaign("theirs", 1, 1);
  theirs["spec"]["output"] = {{"configMapName", "prod-parallelism"}};
  Json ours = SimCampaign("ours", 1, 1);
  ours["spec"]["output"] = {{"configMapName", "ours-best"}};
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, theirs).ok());
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, ours).ok());
  OperatorProcess op(cluster, {"--namespace", ns}, cluster->dir() + "/" + ns + "-operator.log");
  ASSERT_TRUE(op.Start());
  for (const char* name : {"theirs", "ours"}) {
    ASSERT_TRUE(WaitFor([&] { return Finished(admin, ns, name); }, seconds(180), seconds(1)))
        << Describe(admin, ns, name) << "\noperator log: " << op.log_path();
  }
  Json theirs_status;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto tc = admin->Get(resources::kTuningCampaigns, ns, "theirs");
        if (tc.ok()) theirs_status = Field(*tc, "status");
        return Condition(theirs_status, "OutputPublished") != nullptr;
      },
      seconds(30)))
      << theirs_status.dump(2);
  const Json* cond = Condition(theirs_status, "OutputPublished");
  EXPECT_EQ(cond->value("status", ""), "False");
  EXPECT_EQ(cond->value("reason", ""), "OutputConfigMapNotOwned");
  EXPECT_NE(cond->value("message", "").find("Helm"), std::string::npos);
  auto untouched = admin->Get(resources::kConfigMaps, ns, "prod-parallelism");
  ASSERT_TRUE(untouched.ok());
  EXPECT_EQ((*untouched)["data"], Json({{"tp", "8"}}));
  EXPECT_FALSE(Field(*untouched, "metadata").contains("ownerReferences"));
  EXPECT_TRUE(HasEvent(admin, ns, "theirs", "OutputConfigMapNotOwned"));

  auto published = admin->Get(resources::kConfigMaps, ns, "ours-best");
  ASSERT_TRUE(published.ok()) << Describe(admin, ns, "ours");
  EXPECT_FALSE(Field(*published, "metadata").contains("ownerReferences"));
  // Deleting the campaign: garbage collection takes its TrialRuns, not the ConfigMap.
  ASSERT_TRUE(admin->Delete(resources::kTuningCampaigns, ns, "ours").ok());
  ASSERT_TRUE(WaitFor([&] { return TrialRunsOf(admin, ns, "ours").empty(); }, seconds(90)))
      << "garbage collection did not remove the campaign's TrialRuns";
  EXPECT_TRUE(admin->Get(resources::kConfigMaps, ns, "ours-best").ok());
  op.Stop(SIGTERM);
}

}  // namespace
}  // namespace paratune::kube::testing
