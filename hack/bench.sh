#!/usr/bin/env bash
# Runs every benchmark binary (build/bin/*_bench), the Optuna peer and the fuzzers, and writes
# bench/RESULTS.md from their output alone: a header naming the machine, compiler, build and
# commit, then each binary's own section (## heading, tables, figures) as it printed it. Nothing in
# RESULTS.md is written by hand; what each section measures and how is in docs/benchmarks.md.
# A binary exits non-zero only when it could not measure; its section is then marked and this
# script exits 1. Usage: hack/bench.sh BUILD_DIR [filter] (filter: run only the benchmarks whose
# name contains it; RESULTS.md then holds only those, and says so).
set -euo pipefail
build=${1:-build}; filter=${2:-}
cd "$(dirname "$0")/.."
out=bench/RESULTS.md
tmp=$(mktemp)
started=$(date -u '+%Y-%m-%d %H:%M UTC'); t0=$(date +%s)
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')
status=0
failed=()
for b in "$build"/bin/*_bench; do
  [ -x "$b" ] || continue
  name=$(basename "$b")
  [ -z "$filter" ] || [[ "$name" == *"$filter"* ]] || continue
  echo ">> $name" >&2
  rc=0; "$b" >> "$tmp" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "!! $name failed" >&2; status=1; failed+=("$name")
    printf '\n**%s exited with status %d: this section is incomplete.**\n' "$name" "$rc" >> "$tmp"
  fi
  echo >> "$tmp"
done
# External peer (issue 14): Optuna's TPE on the same simulated clusters (bench/optuna_peer.py).
if [ -z "$filter" ] || [[ optuna == *"$filter"* ]]; then
  echo ">> optuna_peer" >&2
  py=/usr/bin/python3; [ -x "$py" ] || py=python3  # Debian's python3-optuna lives there
  rc=0; "$py" bench/optuna_peer.py "$build" "${PARATUNE_OPTUNA_SEEDS:-3}" 20 >> "$tmp" || rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "!! optuna_peer failed" >&2; status=1; failed+=(optuna_peer)
    printf '\n**bench/optuna_peer.py exited with status %d: this section is incomplete.**\n' \
      "$rc" >> "$tmp"
  fi
  echo >> "$tmp"
fi
# Fuzzing: every libFuzzer target for PARATUNE_FUZZ_SECONDS (default 60) in a clang tree.
if [ -z "$filter" ] || [[ fuzz == *"$filter"* ]]; then
  secs=${PARATUNE_FUZZ_SECONDS:-60}
  echo ">> fuzz ($secs s per target)" >&2
  fuzz_status=0
  hack/fuzz.sh "${build%/}-fuzz" "$secs" >&2 || fuzz_status=$?
  {
    echo "## Fuzzing"
    echo
    echo "libFuzzer (clang $(clang++ -dumpversion 2>/dev/null || echo '?'), ASan + UBSan, no"
    echo "recovery), $secs s per target, one process each on this machine; seeds from"
    echo "fuzz/corpus/ (real samples, logs and replies, plus every crash input found so far:"
    echo "$(ls fuzz/corpus/*/regress-* 2>/dev/null | wc -l) regression inputs). \`hack/fuzz.sh\`"
    echo "exits non-zero with the input's path on any crash, hang (10 s) or allocation over 1 GiB."
    echo
    if [ -f "${build%/}-fuzz/fuzz-results.md" ] && [ "$fuzz_status" -ne 3 ]; then
      cat "${build%/}-fuzz/fuzz-results.md"
    else
      echo "Not run: clang with libFuzzer is missing (make deps installs it)."
    fi
    if [ "$fuzz_status" -ne 0 ]; then
      echo
      echo "**Fuzzing failed (exit $fuzz_status): see the hack/fuzz.sh output.**"
    fi
  } >> "$tmp"
  [ "$fuzz_status" -eq 0 ] || { status=1; failed+=(fuzz); }
fi

# The header, written last so that it can say how the run went. Every figure below it depends on
# this machine and this commit: they are named here, not in the sections.
cache="$build/CMakeCache.txt"
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$cache" 2>/dev/null | head -1 || true; }
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1 || true)
mem=$(awk '/^MemTotal:/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo 2>/dev/null || true)
compiler=$(sed -n 's/^set(CMAKE_CXX_COMPILER_\(ID\|VERSION\) "\(.*\)")$/\2/p' \
  "$build"/CMakeFiles/*/CMakeCXXCompiler.cmake 2>/dev/null | head -2 | paste -sd' ' || true)
cxx=$(cache_value CMAKE_CXX_COMPILER)
[ -n "$compiler" ] || compiler=$("${cxx:-c++}" --version 2>/dev/null | head -1 || true)
build_type=$(cache_value CMAKE_BUILD_TYPE)
flags=$(cache_value "CMAKE_CXX_FLAGS_$(echo "$build_type" | tr '[:lower:]' '[:upper:]')")
if commit=$(git rev-parse --short HEAD 2>/dev/null); then
  # RESULTS.md itself is left out: a second run would otherwise call the tree dirty.
  if [ -n "$(git status --porcelain --untracked-files=no -- . ':(exclude)bench/RESULTS.md')" ]
  then commit="\`$commit\` with uncommitted changes to tracked files"
  else commit="\`$commit\`, clean tree"; fi
else
  commit="not a git checkout"
fi
settings=$(env | grep -E '^PARATUNE_(OPTUNA|FUZZ|SCALE|SIM)_[A-Z_]*=' | sort | paste -sd' ' || true)
minutes=$(( ($(date +%s) - t0 + 59) / 60 ))
{
  echo "# paratune benchmark results"
  echo
  echo "Generated whole by \`make bench\` (hack/bench.sh) from the commit and on the machine below;"
  echo "nothing in this file is written by hand. What each section measures, how, and its targets:"
  echo "[docs/benchmarks.md](../docs/benchmarks.md). Timings, and every figure of the Scale section,"
  echo "are this machine's; the other quality figures come from fixed seeds and data."
  echo
  echo "| | |"
  echo "|---|---|"
  echo "| started | $started, $minutes min in all |"
  echo "| commit | $commit |"
  echo "| CPU | ${cpu:-unknown} ($(uname -m)), $(nproc) cores available |"
  echo "| memory | ${mem:-unknown} |"
  echo "| kernel | $(uname -sr) |"
  echo "| compiler | ${compiler:-unknown} (\`${cxx:-c++}\`) |"
  echo "| build | \`$build\`, ${build_type:-no build type}${flags:+ (\`$flags\`)} |"
  echo "| load average at start | $load |"
  echo "| settings | ${settings:-defaults} |"
  [ -z "$filter" ] || echo "| filter | only the benchmarks whose name contains \`$filter\` |"
  if [ "${#failed[@]}" -gt 0 ]; then
    echo "| could not measure | ${failed[*]} |"
  fi
  echo
  cat "$tmp"
} > "$out"
rm -f "$tmp"
echo "wrote $out" >&2
exit $status
