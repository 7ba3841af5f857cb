// PodRunner::RunContainer: one container as a local process, its status reported as the kubelet
// would.
#include <fcntl.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/wait.h>
#include <unistd.h>

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
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    signal(SIGPIPE, SIG_DFL);  // the kubelet-sim ignores it; an ignored signal survives exec.
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    if (chdir(dir.c_str()) != 0) _exit(126);
    execve(cargv[0], cargv.data(), cenv.data());
    dprintf(2, "exec %s: %s\n", cargv[0], strerror(errno));
    _exit(127);
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
  {
    std::lock_guard lock(mu_);
    running_[kube::UidOf(pod)] = pid;
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  {
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
