// PodRunner::RunContainer: one container as a local process, its status reported as the kubelet
// would.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/process_spawn.h"
#include "hack/kubelet-sim/pod_runner.h"

namespace paratune::kubelet {

using kube::Json;

namespace {
std::string ReadFile(const std::string& path, size_t max) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (s.size() > max) s.resize(max);
  return s;
}

// The container's process (SpawnInNewProcessGroup: its own process group, stdin /dev/null, stdout
// and stderr the log, `dir` its working directory) with PATH, HOME, LANG and TMPDIR of this
// process and the container's env. -1 when it could not start (the reason is then in the log).
pid_t Spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const std::string& dir, const std::string& log) {
  SpawnSpec spec;
  for (const char* keep : {"PATH", "HOME", "LANG", "TMPDIR"}) {
    if (const char* v = getenv(keep)) spec.env.push_back(std::string(keep) + "=" + v);
  }
  for (const auto& [k, v] : env) spec.env.push_back(k + "=" + v);
  spec.argv = argv;
  spec.dir = dir;
  spec.log_path = log;
  auto pid = SpawnInNewProcessGroup(spec);
  if (!pid.ok()) {
    std::ofstream(log, std::ios::app) << pid.status().message() << "\n";
    return -1;
  }
  return *pid;
}
}  // namespace

void PodRunner::RunContainer(Json pod, std::vector<std::string> argv,
                             std::map<std::string, std::string> env) {
  const Json& c = pod["spec"]["containers"][0];
  std::string name = c.value("name", "main");
  std::string dir = opts_.work_dir + "/" + kube::NamespaceOf(pod) + "_" + kube::NameOf(pod);
  std::filesystem::create_directories(dir);
  std::string log = LogPath(kube::NamespaceOf(pod), kube::NameOf(pod), name);
  std::string term = dir + "/termination-log";
  std::filesystem::remove(term);
  env["PARATUNE_TERMINATION_LOG"] = term;
  std::string started = FormatRfc3339(time_->SystemNow());
  std::string cid = "paratune://" + kube::UidOf(pod);
  Json base{{"name", name},
            {"image", c.value("image", "")},
            {"imageID", "paratune://local"},
            {"containerID", cid},
            {"restartCount", 0}};
  Json running = base;
  running["ready"] = true;
  running["started"] = true;
  running["state"] = {{"running", {{"startedAt", started}}}};
  auto cond = [&](const char* type, const char* status) {
    return Json{{"type", type}, {"status", status}, {"lastTransitionTime", started}};
  };
  (void)PatchStatus(
      pod, Json{{"phase", "Running"},
                {"hostIP", "127.0.0.1"},
                {"podIP", "127.0.0.1"},
                {"startTime", started},
                {"conditions",
                 Json::array({cond("Initialized", "True"), cond("Ready", "True"),
                              cond("ContainersReady", "True"), cond("PodScheduled", "True")})},
                {"containerStatuses", Json::array({running})}});
  pid_t pid = Spawn(argv, env, dir, log);
  int wstatus = 127 << 8;  // could not start: exit status 127, as a shell reports it
  if (pid > 0) {
    {
      std::lock_guard lock(mu_);
      running_[kube::UidOf(pod)] = pid;
    }
    waitpid(pid, &wstatus, 0);
    std::lock_guard lock(mu_);
    running_.erase(kube::UidOf(pod));
  }
  int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
  std::string message = ReadFile(term, 4096);
  if (message.empty() && code != 0 &&
      c.value("terminationMessagePolicy", "File") == "FallbackToLogsOnError") {
    message = LogTail(ReadFile(log, 64 << 20));
  }
  std::string finished = FormatRfc3339(time_->SystemNow());
  Json done = base;
  done["ready"] = false;
  done["started"] = false;
  Json terminated{{"exitCode", code},
                  {"reason", code == 0 ? "Completed" : "Error"},
                  {"startedAt", started},
                  {"finishedAt", finished},
                  {"containerID", cid}};
  if (WIFSIGNALED(wstatus)) terminated["signal"] = WTERMSIG(wstatus);
  if (!message.empty()) terminated["message"] = message;
  done["state"] = {{"terminated", terminated}};
  spdlog::info("pod {}/{}: exited {}", kube::NamespaceOf(pod), kube::NameOf(pod), code);
  (void)PatchStatus(
      pod, Json{{"phase", code == 0 ? "Succeeded" : "Failed"},
                {"conditions",
                 Json::array({cond("Initialized", "True"), cond("Ready", "False"),
                              cond("ContainersReady", "False"), cond("PodScheduled", "True")})},
                {"containerStatuses", Json::array({done})}});
}

}  // namespace paratune::kubelet
