#include "cli/local_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

extern char** environ;

namespace paratune::cli {

namespace {

// This process's environment with `overrides` set on top, as NAME=VALUE strings.
std::vector<std::string> ChildEnvironment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string name = entry.substr(0, entry.find('='));
    if (overrides.count(name) == 0) out.push_back(entry);
  }
  for (const auto& [k, v] : overrides) out.push_back(k + "=" + v);
  return out;
}

std::string PathOf(const std::vector<std::string>& env) {
  for (const auto& e : env) {
    if (e.rfind("PATH=", 0) == 0) return e.substr(5);
  }
  return "/usr/local/bin:/usr/bin:/bin";
}

}  // namespace

std::optional<std::string> FindExecutable(const std::string& name, const std::string& path) {
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) {
    if (access(name.c_str(), X_OK) == 0) return name;
    return std::nullopt;
  }
  std::istringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

// posix_spawn rather than fork (the way hack/kubelet-sim starts containers): no copy of the
// parent's page tables, and the process group, signal mask and default dispositions are set
// before exec. SIGINT and SIGPIPE are reset to their defaults: an ignored signal survives exec.
Result<std::unique_ptr<LocalProcess>> LocalProcess::Start(const ProcessSpec& spec) {
  if (spec.argv.empty()) return Status::Invalid("command: empty (no program to run)");
  const std::vector<std::string> env = ChildEnvironment(spec.env);
  auto exe = FindExecutable(spec.argv[0], PathOf(env));
  if (!exe) {
    return Status::NotFound("command: \"" + spec.argv[0] + "\" is not an executable in PATH");
  }
  const int log = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) {
    return Status::Internal("log " + spec.log_path + ": " + std::strerror(errno));
  }
  std::vector<char*> cargv, cenv;
  for (const std::string& a : spec.argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const std::string& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  posix_spawn_file_actions_t files;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&files);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&files, log, 1);
  posix_spawn_file_actions_adddup2(&files, log, 2);
  if (!spec.dir.empty()) posix_spawn_file_actions_addchdir_np(&files, spec.dir.c_str());
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGHUP}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int err = posix_spawn(&pid, exe->c_str(), &files, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  close(log);
  if (err != 0) return Status::Internal("exec " + *exe + ": " + std::strerror(err));
  return std::unique_ptr<LocalProcess>(new LocalProcess(pid));
}

LocalProcess::~LocalProcess() {
  if (exit_status_) return;
  Signal(SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
}

std::optional<int> LocalProcess::Poll() {
  if (exit_status_) return exit_status_;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == 0) return std::nullopt;
  if (r < 0) {
    exit_status_ = 127;  // not our child any more: nothing to wait for
  } else if (WIFEXITED(status)) {
    exit_status_ = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    exit_status_ = 128 + WTERMSIG(status);
  } else {
    return std::nullopt;  // stopped or continued: still ours
  }
  kill(-pid_, SIGKILL);  // what the leader left behind (ESRCH when nothing)
  return exit_status_;
}

void LocalProcess::Signal(int sig) {
  if (!exit_status_) kill(-pid_, sig);
}

}  // namespace paratune::cli
