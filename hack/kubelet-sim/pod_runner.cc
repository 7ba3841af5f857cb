#include "hack/kubelet-sim/pod_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "hack/kubelet-sim/node_env.h"

namespace paratune::kubelet {

using kube::Json;

std::string ExpandVars(const std::string& s, const std::map<std::string, std::string>& env) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '$') {
      out += '$';
      ++i;
    } else if (s[i] == '$' && i + 1 < s.size() && s[i + 1] == '(') {
      size_t close = s.find(')', i + 2);
      if (close == std::string::npos) {
        out += s.substr(i);
        break;
      }
      std::string name = s.substr(i + 2, close - i - 2);
      auto it = env.find(name);
      out += it != env.end() ? it->second : s.substr(i, close - i + 1);
      i = close;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string LogTail(const std::string& log) {
  size_t pos = log.size();
  if (pos > 0 && log[pos - 1] == '\n') --pos;
  int lines = 0;
  while (pos > 0) {
    if (log[pos - 1] == '\n' && ++lines == 80) break;
    --pos;
  }
  std::string tail = log.substr(pos);
  if (tail.size() > 4096) tail = tail.substr(tail.size() - 4096);
  return tail;
}

namespace {
constexpr char kCompletionIndexKey[] = "batch.kubernetes.io/job-completion-index";

std::string FieldRef(const Json& pod, const std::string& path) {
  if (path == "metadata.name") return kube::NameOf(pod);
  if (path == "metadata.namespace") return kube::NamespaceOf(pod);
  if (path == "metadata.uid") return kube::UidOf(pod);
  if (path == "spec.nodeName") return pod["spec"].value("nodeName", "");
  if (path == "status.podIP" || path == "status.hostIP") return "127.0.0.1";
  if (path.rfind("metadata.annotations['", 0) == 0 || path.rfind("metadata.labels['", 0) == 0) {
    bool ann = path[9] == 'a';
    std::string key = path.substr(path.find('\'') + 1);
    key = key.substr(0, key.find('\''));
    const Json& m = pod["metadata"].value(ann ? "annotations" : "labels", Json::object());
    return m.value(key, "");
  }
  return "";
}

// Whether `job` runs one pod: parallelism and completions both at most 1 (unset parallelism is
// 1; unset completions means any one success). The 1.20 server drops `completionMode`, so this
// is how the stand-in tells the operator's single-pod trial Jobs from its Indexed ones.
bool SinglePodJob(const Json& job) {
  const Json& spec = FieldOf(job, "spec");
  const Json& parallelism = FieldOf(spec, "parallelism");
  const Json& completions = FieldOf(spec, "completions");
  return (!parallelism.is_number_integer() || parallelism.get<int64_t>() <= 1) &&
         (!completions.is_number_integer() || completions.get<int64_t>() <= 1);
}

}  // namespace

std::string PodRunner::CompletionIndex(const Json& pod) {
  const Json& ann = pod["metadata"].value("annotations", Json::object());
  if (ann.contains(kCompletionIndexKey)) return ann.value(kCompletionIndexKey, "");
  const Json* ref = JobOwnerRef(pod);
  if (ref == nullptr) return "";
  const std::string job_name = StringOf(FieldOf(*ref, "name"));
  const std::string job = kube::NamespaceOf(pod) + "/" + job_name;
  // A single-pod Job is not Indexed: the Job controller of 1.21+ gives its pod no index and
  // writes nothing, so neither does the stand-in (a Job not yet in the cache gets one).
  const kube::ObjectPtr owner = jobs_->Get({kube::NamespaceOf(pod), job_name});
  if (owner && kube::UidOf(*owner) == StringOf(FieldOf(*ref, "uid")) && SinglePodJob(*owner)) {
    return "";
  }
  std::string index;
  {
    std::lock_guard lock(mu_);
    auto [it, inserted] = index_of_.emplace(kube::UidOf(pod), 0);
    if (inserted) it->second = next_index_[job]++;
    index = std::to_string(it->second);
  }
  // What the Job controller of 1.21+ writes at creation on an Indexed Job's pods, so readers of
  // the pod (the operator's rank-aware log collector) see the same index as the container.
  auto patched = client_->Patch(
      kube::resources::kPods, kube::NamespaceOf(pod), kube::NameOf(pod), kube::PatchType::kMerge,
      Json{{"metadata", {{"annotations", {{kCompletionIndexKey, index}}}}}});
  if (!patched.ok()) {
    spdlog::warn("kubelet-sim: pod {}: completion index annotation not written: {}",
                 kube::NameOf(pod), patched.status().message());
  }
  return index;
}

PodRunner::PodRunner(kube::KubeClient* client, const kube::Informer* pods,
                     const kube::Informer* jobs, const NodePool* nodes, TimeSource* time,
                     RunnerOptions opts)
    : client_(client),
      pods_(pods),
      jobs_(jobs),
      nodes_(nodes),
      time_(time),
      opts_(std::move(opts)) {}

PodRunner::~PodRunner() {
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(mu_);
    for (const auto& [uid, pid] : running_) kill(pid, SIGTERM);
    threads.swap(threads_);
  }
  for (std::thread& t : threads) t.join();
}

int PodRunner::started() const {
  std::lock_guard lock(mu_);
  return started_;
}

std::string PodRunner::LogPath(const std::string& ns, const std::string& pod,
                               const std::string& container) const {
  return opts_.work_dir + "/" + ns + "_" + pod + "/" + container + ".log";
}

Status PodRunner::PatchStatus(const Json& pod, const Json& status) {
  // Like the kubelet's status manager, a status that could not be written (the API server is
  // restarting) is written again until it lands or the pod is gone: a finished container must
  // not look Running forever. Backs off 0.2 s .. 5 s, gives up after about two minutes.
  auto delay = std::chrono::milliseconds(200);
  Result<Json> r = Status::Unavailable("not tried");
  for (int attempt = 0; attempt < 30; ++attempt) {
    r = client_->Patch(kube::resources::kPods, kube::NamespaceOf(pod), kube::NameOf(pod),
                       kube::PatchType::kMerge, Json{{"status", status}}, {}, "status");
    if (r.ok() || r.status().code() == StatusCode::kNotFound) return Status::Ok();
    const StatusCode code = r.status().code();
    if (code != StatusCode::kUnavailable && code != StatusCode::kInternal &&
        code != StatusCode::kDeadlineExceeded) {
      break;
    }
    std::this_thread::sleep_for(delay);
    delay = std::min<std::chrono::milliseconds>(delay * 2, std::chrono::seconds(5));
  }
  spdlog::warn("pod {}/{}: status update failed: {}", kube::NamespaceOf(pod), kube::NameOf(pod),
               kube::StatusText(r.status()));
  return r.status();
}

void PodRunner::Kill(const std::string& uid) {
  std::lock_guard lock(mu_);
  auto it = running_.find(uid);
  if (it != running_.end()) kill(it->second, SIGTERM);
}

Result<kube::ReconcileResult> PodRunner::Reconcile(const kube::ObjectKey& key) {
  kube::ObjectPtr pod = pods_->Get(key);
  if (!pod) {
    // Gone without a graceful delete: nothing may keep running for it.
    std::string uid;
    {
      std::lock_guard lock(mu_);
      auto it = uid_of_.find(key);
      if (it != uid_of_.end()) uid = it->second;
      uid_of_.erase(key);
    }
    if (!uid.empty()) Kill(uid);
    return kube::ReconcileResult{};
  }
  const Json& spec = (*pod)["spec"];
  if (!nodes_->Owns(spec.value("nodeName", ""))) return kube::ReconcileResult{};
  std::string uid = kube::UidOf(*pod);
  if ((*pod)["metadata"].contains("deletionTimestamp")) {
    Kill(uid);
    kube::DeleteOptions del;
    del.grace_period_seconds = 0;
    del.precondition_uid = uid;
    Status s = client_->Delete(kube::resources::kPods, key.ns, key.name, del);
    if (!s.ok() && s.code() != StatusCode::kNotFound && s.code() != StatusCode::kConflict) {
      return s;
    }
    return kube::ReconcileResult{};
  }
  {
    std::lock_guard lock(mu_);
    if (handled_.count(uid)) return kube::ReconcileResult{};
    std::string phase = (*pod).value("status", Json::object()).value("phase", "Pending");
    if (phase != "Pending") return kube::ReconcileResult{};  // decided before a restart.
    handled_.insert(uid);
  }
  Start(*pod);
  return kube::ReconcileResult{};
}

void PodRunner::SetWaiting(const Json& pod, const std::string& reason, const std::string& message) {
  const Json& c = pod["spec"]["containers"][0];
  Json status{
      {"phase", "Pending"},
      {"hostIP", "127.0.0.1"},
      {"containerStatuses",
       Json::array({{{"name", c.value("name", "")},
                     {"image", c.value("image", "")},
                     {"imageID", ""},
                     {"ready", false},
                     {"restartCount", 0},
                     {"state", {{"waiting", {{"reason", reason}, {"message", message}}}}}}})}};
  (void)PatchStatus(pod, status);
}

void PodRunner::Start(const Json& pod) {
  const Json& containers = pod["spec"].value("containers", Json::array());
  if (containers.empty()) return;
  const Json& c = containers[0];
  std::vector<std::string> argv;
  for (const char* field : {"command", "args"}) {
    for (const Json& a : c.value(field, Json::array())) argv.push_back(a.get<std::string>());
  }
  if (argv.empty() || argv[0].rfind("paratune", 0) != 0) {
    std::string image = c.value("image", "");
    SetWaiting(pod, "ErrImagePull",
               "paratune-kubelet-sim cannot pull image \"" + image +
                   "\": only containers whose command starts with `paratune` run on simulated "
                   "nodes");
    return;
  }
  std::map<std::string, std::string> env;
  const std::string index = CompletionIndex(pod);
  if (!index.empty()) env["JOB_COMPLETION_INDEX"] = index;
  for (const Json& e : c.value("env", Json::array())) {
    std::string name = e.value("name", "");
    if (e.contains("value")) {
      env[name] = ExpandVars(e["value"].get<std::string>(), env);
    } else if (e.contains("valueFrom") && e["valueFrom"].contains("fieldRef")) {
      const std::string path = e["valueFrom"]["fieldRef"].value("fieldPath", "");
      env[name] = FieldRef(pod, path);
      if (env[name].empty() && path.find(kCompletionIndexKey) != std::string::npos) {
        env[name] = index;
      }
    } else {
      env[name] = "";
    }
  }
  // The Job's own pods (the informer's owner index), not every pod of the namespace: that scan,
  // copying each pod's metadata, cost 8 ms per start with 2,000 pods in the namespace.
  const std::string job_uid = JobUidOf(pod);
  const std::vector<kube::ObjectPtr> siblings =
      job_uid.empty() ? std::vector<kube::ObjectPtr>{} : pods_->ByOwner(job_uid);
  for (auto& [name, value] : SimNodeEnv(opts_.node_faults, pod, JobNodes(pod, siblings))) {
    env[name] = value;
  }
  for (std::string& a : argv) a = ExpandVars(a, env);
  if (argv[0] == "paratune") {
    argv[0] = opts_.paratune_bin;
  } else {
    argv[0] = std::filesystem::path(opts_.paratune_bin).parent_path() / argv[0];
  }
  std::lock_guard lock(mu_);
  ++started_;
  uid_of_[kube::ObjectKey::Of(pod)] = kube::UidOf(pod);
  threads_.emplace_back([this, pod, argv, env] { RunContainer(pod, argv, env); });
}

}  // namespace paratune::kubelet
