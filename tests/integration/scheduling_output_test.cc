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

#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

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

// jobsets.jobset.x-k8s.io (v1alpha2) as a schemaless CRD: enough for the operator to detect the
// API and store JobSets; no JobSet controller runs. Removed by the destructor.
class JobSetCrd {
 public:
  explicit JobSetCrd(LocalCluster* cluster) : cluster_(cluster) {
    path_ = cluster->dir() + "/jobset-crd.yaml";
    std::ofstream(path_) << R"(apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: jobsets.jobset.x-k8s.io}
spec:
  group: jobset.x-k8s.io
  scope: Namespaced
  names: {plural: jobsets, singular: jobset, kind: JobSet, listKind: JobSetList}
  versions:
  - name: v1alpha2
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
)";
    ok_ = cluster->Kubectl("apply -f " + path_) == 0 &&
          cluster->Kubectl("wait --for condition=established --timeout=60s -f " + path_) == 0;
  }
  ~JobSetCrd() { cluster_->Kubectl("delete --wait=true --timeout=60s -f " + path_); }
  bool ok() const { return ok_; }

 private:
  LocalCluster* cluster_;
  std::string path_;
  bool ok_ = false;
};

TEST(SchedulingTest, QueuedJobSetWaitsSuspendedUntilTheTestAdmitsIt) {
  PARATUNE_REQUIRE_CLUSTER(cluster);
  ASSERT_TRUE(cluster->InstallCrdsAndRbac().ok());
  JobSetCrd crd(cluster);
  ASSERT_TRUE(crd.ok());
  KubeClient* admin = cluster->Admin();
  const std::string ns = cluster->NewNamespace("queue-js");
  Json campaign = SimCampaign("qjs", 1, 1);
  campaign["spec"]["hardware"]["nodes"] = 2;
  campaign["spec"]["queueName"] = "team-q";
  campaign["spec"]["budget"]["trialTimeout"] = "20s";
  ASSERT_TRUE(admin->Create(resources::kTuningCampaigns, ns, campaign).ok());
  OperatorProcess op(cluster, {"--namespace", ns}, cluster->dir() + "/" + ns + "-operator.log");
  ASSERT_TRUE(op.Start());
  const std::string trial = "qjs-t001";
  Json jobset;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto js = admin->Get(controllers::kJobSets, ns, trial);
        if (js.ok()) jobset = *js;
        return js.ok();
      },
      seconds(60)))
      << Describe(admin, ns, "qjs") << "\noperator log: " << op.log_path();
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
