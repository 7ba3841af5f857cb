#include "cli/local_process.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>

#include "base/process_spawn.h"

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

// Started by SpawnInNewProcessGroup (base/process_spawn.h, as hack/kubelet-sim starts
// containers): its own process group, so Signal and Poll reach whatever it started.
Result<std::unique_ptr<LocalProcess>> LocalProcess::Start(const ProcessSpec& spec) {
  if (spec.argv.empty()) return Status::Invalid("command: empty (no program to run)");
  SpawnSpec child;
  child.env = ChildEnvironment(spec.env);
  auto exe = FindExecutable(spec.argv[0], PathOf(child.env));
  if (!exe) {
    return Status::NotFound("command: \"" + spec.argv[0] + "\" is not an executable in PATH");
  }
  child.argv = spec.argv;
  child.argv[0] = *exe;
  child.dir = spec.dir;
  child.log_path = spec.log_path;
  auto pid = SpawnInNewProcessGroup(child);
  if (!pid.ok()) return pid.status();
  return std::unique_ptr<LocalProcess>(new LocalProcess(*pid));
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
