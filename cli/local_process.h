// One local child process as a trial's container: its own process group (so a timeout or Ctrl-C
// ends it with everything it started: torchrun's workers, data-loader processes, `sh -c`
// children), stdin /dev/null, stdout and stderr appended to one log file. Used by
// `paratune tune --local` (cli/local_trials.h) and `paratune node-diagnose`.
//
// Thread-safety: none; one owner polls and kills it.
#ifndef PARATUNE_CLI_LOCAL_PROCESS_H_
#define PARATUNE_CLI_LOCAL_PROCESS_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

namespace paratune::cli {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0] without '/' is looked up in the child's PATH
  // The child's environment: this process's own, with these set on top (a value replaces the
  // inherited one; Kubernetes likewise gives the container's env precedence over the image's).
  std::map<std::string, std::string> env;
  std::string dir;       // working directory ("" : this process's)
  std::string log_path;  // created (truncated) by Start
};

class LocalProcess {
 public:
  // Starts the child. kNotFound naming argv[0] when it is not an executable file in PATH;
  // kInvalidArgument for an empty argv; kInternal when the log cannot be opened or spawn fails.
  static Result<std::unique_ptr<LocalProcess>> Start(const ProcessSpec& spec);
  // Kills the group (SIGKILL) and reaps the child if it still runs.
  ~LocalProcess();
  LocalProcess(const LocalProcess&) = delete;
  LocalProcess& operator=(const LocalProcess&) = delete;

  // Non-blocking. nullopt while the child runs; then its exit status as a shell reports it
  // (128 + N for a child killed by signal N). When the group leader has exited, the rest of its
  // group is killed (SIGKILL), as the kubelet ends a container's processes when its main one ends.
  std::optional<int> Poll();
  // Sends `sig` to the whole process group (no-op once the child was reaped).
  void Signal(int sig);
  pid_t pid() const { return pid_; }

 private:
  explicit LocalProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  std::optional<int> exit_status_;
};

// argv[0]'s executable: itself when it holds a '/', else the first executable file named so in
// the ':'-separated `path`. nullopt when there is none.
std::optional<std::string> FindExecutable(const std::string& name, const std::string& path);

}  // namespace paratune::cli

#endif  // PARATUNE_CLI_LOCAL_PROCESS_H_
