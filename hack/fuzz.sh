#!/usr/bin/env bash
# Builds the libFuzzer targets of fuzz/ with clang (ASan + UBSan) in their own tree and runs
# each for SECONDS. Usage: hack/fuzz.sh [BUILD_DIR] [SECONDS] [TARGET...]
#   BUILD_DIR  the clang tree (default build-fuzz); never the gcc build dir.
#   SECONDS    fuzzing time per target (default 25); with PARATUNE_FUZZ_RUNS=N set, N runs
#              per target from seed 1 instead (deterministic: what make test uses).
#   TARGET     run only these (default: every target in fuzz/corpus/).
# Seeds come from fuzz/corpus/<target> (read only); what the fuzzer adds goes to
# BUILD_DIR/fuzz-corpus/<target>, crash inputs to BUILD_DIR/fuzz-artifacts/<target>/.
# Writes BUILD_DIR/fuzz-results.md (a Markdown table). Exit status: 0 when no target crashed,
# hung or ran out of memory; 1 otherwise (the input's path is printed: copy it into
# fuzz/corpus/<target>/ once fixed); 3 when clang or libFuzzer is missing.
set -euo pipefail
build=${1:-build-fuzz}
seconds=${2:-25}
shift $(($# < 2 ? $# : 2))
cd "$(dirname "$0")/.."
root=$(pwd)

cxx=${PARATUNE_FUZZ_CXX:-clang++}
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
  >"$probe/p.cc"
if ! command -v "$cxx" >/dev/null 2>&1 ||
   ! "$cxx" -fsanitize=fuzzer,address,undefined "$probe/p.cc" -o "$probe/p" >/dev/null 2>&1; then
  echo "fuzz: $cxx with libFuzzer is missing; run 'make deps' (hack/install-deps.sh installs" \
       "clang and libclang-rt-14-dev), or set PARATUNE_SKIP_FUZZ=1 to skip fuzzing" >&2
  exit 3
fi

# The clang tree: only the fuzz targets and the few sources they compile are built.
start=$(date +%s)
mkdir -p "$build"
rm -f "$build/fuzz-results.md"  # never report a previous run's figures
CXX=$cxx cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPARATUNE_FUZZ=ON \
  -DPARATUNE_WERROR=OFF >/dev/null
cmake --build "$build" -j "${JOBS:-2}" --target fuzzers >"$build/fuzz-build.log" 2>&1 || {
  tail -40 "$build/fuzz-build.log" >&2
  echo "fuzz: build failed (full log: $build/fuzz-build.log)" >&2
  exit 1
}
echo "fuzz: built the targets in $(($(date +%s) - start)) s"

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for d in fuzz/corpus/*/; do targets+=("$(basename "$d")"); done
fi

# Per-target dictionary and input size limit (bytes): large enough for the real inputs (a
# campaign is a few KiB; a log tail tens of KiB) and for quadratic behaviour to show.
dict_of() {
  case "$1" in
    campaign_yaml_fuzzer) echo fuzz/dict/yaml.dict ;;
    campaign_json_fuzzer) echo fuzz/dict/json.dict ;;
    collector_fuzzer | termination_message_fuzzer) echo fuzz/dict/collectors.dict ;;
    llm_reply_fuzzer) echo fuzz/dict/llm.dict ;;
    openai_wire_fuzzer) echo fuzz/dict/openai.dict ;;
  esac
}
max_len_of() {
  case "$1" in
    collector_fuzzer) echo 32768 ;;
    campaign_yaml_fuzzer | campaign_json_fuzzer) echo 16384 ;;
    llm_reply_fuzzer) echo 4096 ;;
    *) echo 8192 ;;
  esac
}

results="$build/fuzz-results.md"
{
  echo "| target | seconds | executions | exec/s | coverage (edges) | features | corpus | crashes |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|"
} >"$results"
failed=0
for t in "${targets[@]}"; do
  bin="$build/bin/$t"
  [ -x "$bin" ] || { echo "fuzz: no binary $bin" >&2; failed=1; continue; }
  work="$build/fuzz-corpus/$t"
  artifacts="$build/fuzz-artifacts/$t/"
  log="$build/fuzz-$t.log"
  mkdir -p "$work" "$artifacts"
  # PARATUNE_FUZZ_RUNS (make test): a fixed number of runs from a fixed seed, so CI explores the
  # same inputs on every machine and run; otherwise (make bench) SECONDS of open exploration.
  if [ -n "${PARATUNE_FUZZ_RUNS:-}" ]; then
    budget=(-runs="$PARATUNE_FUZZ_RUNS" -seed=1)
  else
    budget=(-max_total_time="$seconds")
  fi
  args=("${budget[@]}" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024
        -max_len="$(max_len_of "$t")" -print_final_stats=1 -artifact_prefix="$artifacts")
  dict=$(dict_of "$t")
  [ -n "$dict" ] && args+=(-dict="$dict")
  rc=0
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 "$bin" "${args[@]}" "$work" "fuzz/corpus/$t" \
    >"$log" 2>&1 || rc=$?
  stat() { sed -n "s/^stat::$1: *//p" "$log" | tail -1; }
  execs=$(stat number_of_executed_units)
  rate=$(stat average_exec_per_sec)
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.* corp: \([0-9]*\).*/\1/p' <<<"$last")
  crashes=0
  if [ "$rc" -ne 0 ]; then
    crashes=1
    failed=1
    input=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    grep -E 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error:|SUMMARY' "$log" \
      | head -5 >&2 || true
    echo "fuzz: $t FAILED (exit $rc); input: ${input:-see $log}; log: $log" >&2
    echo "fuzz: reproduce with $bin ${input:-}" >&2
  fi
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$t" "$seconds" "${execs:-0}" \
    "${rate:-0}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$crashes" >>"$results"
  echo "fuzz: $t: ${execs:-0} runs, ${rate:-0} exec/s, cov ${cov:-?}, corpus ${corp:-?}," \
       "crashes $crashes"
done
echo "fuzz: total $(($(date +%s) - start)) s; table in $results"
[ "$failed" -eq 0 ] || { echo "fuzz: FAILED" >&2; exit 1; }
echo "fuzz: no crash, hang or out-of-memory in ${#targets[@]} targets"
