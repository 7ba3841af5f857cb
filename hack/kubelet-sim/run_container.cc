// PodRunner::RunContainer: one container as a local process, its status reported as the kubelet
// would.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

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

// The container's process: its own process group, no blocked signals and SIGPIPE at its default
// (the kubelet-sim ignores it; an ignored signal survives exec), stdin /dev/null, stdout and
// stderr the log, `dir` its working directory. posix_spawn (glibc: clone with CLONE_VM|CLONE_VFORK)
// rather than fork: a fork copies the page tables of this many-threaded process for every
// container, which at hundreds of pods cost the simulated kubelet more CPU than the API server's
// share of the trials. -1 when it could not start (the reason is then in the log).
pid_t Spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const std::string& dir, const std::string& log) {
  std::vector<std::string> env_strings;
  for (const char* keep : {"PATH", "HOME", "LANG", "TMPDIR"}) {
    if (const char* v = getenv(keep)) env_strings.push_back(std::string(keep) + "=" + v);
  }
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> cargv, cenv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const std::string& e : env_strings) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&files);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  posix_spawn_file_actions_addchdir_np(&files, dir.c_str());
  sigset_t none, pipe;
  sigemptyset(&none);
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &pipe);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, cargv[0], &files, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  if (err != 0) {
    std::ofstream(log, std::ios::app) << "exec " << cargv[0] << ": " << strerror(err) << "\n";
    return -1;
  }
  return pid;
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
