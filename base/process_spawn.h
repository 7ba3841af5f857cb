// Starting a child process the way both process runners of this project need it (the CLI's
// `tune --local` trials, cli/local_process.h, and the simulated kubelet's containers,
// hack/kubelet-sim): its own process group, stdin /dev/null, stdout and stderr into a log file.
#ifndef PARATUNE_BASE_PROCESS_SPAWN_H_
#define PARATUNE_BASE_PROCESS_SPAWN_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "base/status.h"

namespace paratune {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0]: the executable's path (no PATH search here)
  std::vector<std::string> env;   // the child's whole environment, NAME=VALUE
  std::string dir;                // working directory; "": this process's
  std::string log_path;           // stdout and stderr, created or truncated
};

// posix_spawn rather than fork (glibc: clone with CLONE_VM|CLONE_VFORK): no copy of the parent's
// page tables, which for a many-threaded parent starting hundreds of children costs more CPU than
// the children. The child leads a new process group (so a signal to -pid reaches what it starts),
// blocks no signal, and has SIGINT, SIGTERM, SIGHUP and SIGPIPE at their defaults (an ignored
// signal survives exec). kInternal naming the log or the executable when it cannot start.
Result<pid_t> SpawnInNewProcessGroup(const SpawnSpec& spec);

}  // namespace paratune

#endif  // PARATUNE_BASE_PROCESS_SPAWN_H_
