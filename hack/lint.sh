#!/usr/bin/env bash
# clang-format check on all C++ sources; clang-tidy on our sources when a compile database exists.
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cc' '*.h')
bad=0
for f in $files; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || { echo "format: $f"; bad=1; }
done
if [ -f "$build/compile_commands.json" ] && [ "${PARATUNE_TIDY:-1}" = 1 ]; then
  # The products and the test library; the simulated kubelet (hack/, its main in cmd/) is a tool.
  git ls-files 'agents/*.cc' 'operator/*.cc' 'controllers/*.cc' 'cli/*.cc' 'cmd/*.cc' \
    'testing/*.cc' ':!cmd/paratune-kubelet-sim/*' |
    xargs -r -P "$(nproc)" -n 8 clang-tidy -p "$build" --quiet \
      --checks='-*,bugprone-*,-bugprone-easily-swappable-parameters,performance-*,modernize-use-override' \
      2>/dev/null | grep -E "warning:|error:" && bad=1 || true
fi
exit $bad
