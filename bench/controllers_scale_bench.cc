// Scale benchmark of the controllers on a real control plane (issue 8): runs
// hack/scale-bench.sh with this binary's build tree, which starts a private local control plane
// with simulated GPU nodes, installs the operator from the chart, applies 200 and then 1,000
// simulated campaigns (PARATUNE_SCALE_CAMPAIGNS) with 2 parallel trials each and prints the
// "## Scale" Markdown section (time to the first trial Jobs, operator RSS and CPU, API requests
// per trial, reconcile p99), then tears everything down. Exit status: the script's (0 when
// measured).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

int main() {
  namespace fs = std::filesystem;
  std::error_code ec;
  // build/bin/controllers_scale_bench -> build
  const fs::path build = fs::read_symlink("/proc/self/exe", ec).parent_path().parent_path();
  if (ec) {
    std::printf("## Scale\n\nNot measured: cannot locate the build tree (%s)\n",
                ec.message().c_str());
    return 1;
  }
  const fs::path script = fs::path(PARATUNE_SOURCE_DIR) / "hack" / "scale-bench.sh";
  std::fflush(stdout);
  execl(script.c_str(), script.c_str(), build.c_str(), static_cast<char*>(nullptr));
  std::printf("## Scale\n\nNot measured: cannot run %s\n", script.c_str());
  return 1;
}
