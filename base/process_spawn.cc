#include "base/process_spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace paratune {

Result<pid_t> SpawnInNewProcessGroup(const SpawnSpec& spec) {
  if (spec.argv.empty()) return Status::Invalid("command: empty (no program to run)");
  const int log = open(spec.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log < 0) return Status::Internal("log " + spec.log_path + ": " + std::strerror(errno));
  std::vector<char*> cargv, cenv;
  for (const std::string& a : spec.argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const std::string& e : spec.env) cenv.push_back(const_cast<char*>(e.c_str()));
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
  const int err = posix_spawn(&pid, cargv[0], &files, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  close(log);
  if (err != 0) return Status::Internal("exec " + spec.argv[0] + ": " + std::strerror(err));
  return pid;
}

}  // namespace paratune
