// Line-level normalisation shared by the collectors: what launchers and terminals add around a
// framework's own text. Pure functions; thread-safe.
#ifndef PARATUNE_AGENTS_COLLECTORS_LOG_LINES_H_
#define PARATUNE_AGENTS_COLLECTORS_LOG_LINES_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace paratune::collectors {

// One log line as the framework wrote it, and the rank the launcher said printed it.
struct CleanLine {
  std::string text;
  int64_t rank = -1;  // -1: no rank prefix
};

// Strips ANSI escape sequences (torchtitan colours its step line: components/metrics.py
// `color.red` ..., pytorch/torchtitan@b5bcd76) and the rank prefixes launchers add in front of a
// line: torchrun's `[rank3]:` (PyTorch >= 2.2, --tee/--log-dir also `[default3]:`), Slurm
// `srun --label`'s `3: `, Open MPI `--tag-output`'s `[1,3]<stdout>:`. The rank prefix is read
// only at the start of the line (after colour codes).
CleanLine Clean(std::string_view raw);

// Every non-empty line of `log`, cleaned; a carriage return also ends a line (tqdm redraws its
// progress bar with '\r', so one physical line holds every update of the bar).
std::vector<CleanLine> CleanLines(std::string_view log);

}  // namespace paratune::collectors

#endif  // PARATUNE_AGENTS_COLLECTORS_LOG_LINES_H_
