#!/usr/bin/env bash
# The loop on a real GPU (issue 37): runs `paratune tune --local` on the Hugging Face sample
# campaign, an exhaustive sweep of the same search space measured in the same run (the same
# trials, through `paratune tune --local --strategy grid`), and the whitelisted node diagnostic
# checks (`paratune node-diagnose`), then prints one summary: trials, OOMs, the tuner's best
# against the sweep's best, diagnostic verdicts, and the issue's three criteria.
#
# Usage:
#   hack/gpu/real-campaign.sh bundle [BUILD_DIR] [DEST]
#       Here, where paratune was built: copies build/bin/paratune (stripped) with every shared
#       library `ldd` lists, the C library and the dynamic loader included, into DEST (default
#       gpu-bundle/, git-ignored), so it runs on a machine with no compiler and an older glibc.
#   hack/gpu/real-campaign.sh [run] [--mode auto|gpu|torch-cpu|sim] [--out DIR]
#       Runs everything. paratune comes from $PARATUNE_BIN when set, else gpu-bundle/ (run
#       through the bundled loader), else build/bin/. Modes (auto picks the first that applies):
#         gpu        nvidia-smi lists a GPU and python3's torch sees CUDA: the sample as written
#         torch-cpu  torch without CUDA: the same script on CPU with --tiny (a 2-layer model)
#         sim        no torch: every trial is `paratune trial-sim` (contract section 8)
#       DIR (default $OUT, else a temporary folder) receives every JSON, log and summary.txt.
# Needs: bash, coreutils, sed, python3 (the summary; torch for the gpu/torch-cpu modes, and
# transformers for the Trainer path), nvidia-smi for the gpu mode. No network.
# Exit: 0 when every step produced its result (the criteria are reported, not enforced, unless
# STRICT=1), 1 otherwise, 2 on bad usage.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SAMPLE=$ROOT/manifests/samples/hf-trainer-qwen2.5-0.5b-h100x1.yaml

bundle() {
  local build=${1:-$ROOT/build} dest=${2:-$ROOT/gpu-bundle}
  [ -x "$build/bin/paratune" ] || { echo "bundle: $build/bin/paratune not built" >&2; exit 2; }
  rm -rf "$dest" && mkdir -p "$dest/lib"
  cp "$build/bin/paratune" "$dest/paratune"
  strip --strip-unneeded "$dest/paratune" 2>/dev/null || true
  # ldd lines: "libX.so => /path (0x...)" and the loader "/lib64/ld-linux-x86-64.so.2 (0x...)".
  ldd "$build/bin/paratune" | awk '/=> \//{print $3} /^[ \t]*\/.*ld-linux/{print $1}' |
    while read -r lib; do cp -L "$lib" "$dest/lib/"; done
  local loader
  loader=$(cd "$dest/lib" && ls ld-linux* 2>/dev/null | head -n1)
  [ -n "$loader" ] || { echo "bundle: no dynamic loader in ldd's list" >&2; exit 1; }
  echo "$loader" >"$dest/LOADER"
  du -sh "$dest" | sed 's/^/bundle: /'
}

# $WORK/bin/paratune: the bundled binary through its own loader and libraries, or the build's.
# It is first in PATH, so `command: [paratune, trial-sim]` trials find it too.
make_paratune() {
  mkdir -p "$WORK/bin"
  local b=$ROOT/gpu-bundle
  if [ -n "${PARATUNE_BIN:-}" ]; then
    ln -sf "$PARATUNE_BIN" "$WORK/bin/paratune"
  elif [ -x "$b/paratune" ] && [ -f "$b/LOADER" ]; then
    printf '#!/bin/sh\nexec "%s/lib/%s" --library-path "%s/lib" "%s/paratune" "$@"\n' \
      "$b" "$(cat "$b/LOADER")" "$b" "$b" >"$WORK/bin/paratune"
    chmod +x "$WORK/bin/paratune"
  elif [ -x "$ROOT/build/bin/paratune" ]; then
    ln -sf "$ROOT/build/bin/paratune" "$WORK/bin/paratune"
  else
    echo "real-campaign: no paratune (run '$0 bundle' where it was built, or build it)" >&2
    exit 1
  fi
  export PATH="$WORK/bin:$PATH"
  paratune help >/dev/null
}

detect_mode() {
  local gpus torch
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  torch=$(python3 -c 'import torch; print(int(torch.cuda.is_available()))' 2>/dev/null || echo none)
  if [ "${gpus:-0}" -gt 0 ] && [ "$torch" = 1 ]; then echo gpu
  elif [ "$torch" = 0 ] || [ "$torch" = 1 ]; then echo torch-cpu
  else echo sim; fi
}

# The sample for the mode: as written on a GPU; on CPU no GPU request (and --tiny); in sim mode
# trial-sim as the container command (it prints the Hugging Face Trainer's output for a
# transformers workload, which the sample's hf-trainer collector reads).
make_campaign() {
  local c=$WORK/campaign.yaml
  case $MODE in
    gpu) sed -e "s|accelerator: nvidia-h100-80gb|accelerator: $ACCEL|" "$SAMPLE" >"$c" ;;
    torch-cpu) sed -e 's|nvidia.com/gpu: "1"|nvidia.com/gpu: "0"|' \
                   -e 's|args: \["--steps", "4"\]|args: ["--steps", "3", "--tiny"]|' "$SAMPLE" >"$c" ;;
    sim) sed -e 's|nvidia.com/gpu: "1"|nvidia.com/gpu: "0"|' \
             -e 's|command: \[python3, workloads/hf-llama/train.py\]|command: [paratune, trial-sim]|' \
             -e 's|args: \["--steps", "4"\]|args: []|' "$SAMPLE" >"$c" ;;
  esac
  grep -q "nvidia.com/gpu" "$c" || { echo "real-campaign: sample edit failed" >&2; exit 1; }
}

step() {  # step NAME SECONDS CMD...: stdout to $WORK/NAME.json, stderr to $WORK/NAME.err
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS rc=0
  timeout --kill-after=10 "$limit" "$@" >"$WORK/$name.json" 2>"$WORK/$name.err" || rc=$?
  echo "$name: exit $rc in $((SECONDS - t0)) s" | tee -a "$WORK/steps.txt"
  return 0
}

run() {
  MODE=auto
  WORK=${OUT:-}
  while [ $# -gt 0 ]; do
    case $1 in
      --mode) MODE=$2; shift 2 ;;
      --out) WORK=$2; shift 2 ;;
      *) echo "usage: $0 [run] [--mode auto|gpu|torch-cpu|sim] [--out DIR]" >&2; exit 2 ;;
    esac
  done
  [ -n "$WORK" ] || WORK=$(mktemp -d /tmp/paratune-real-campaign.XXXXXX)
  mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd)
  rm -rf "$WORK/tune" "$WORK/sweep" "$WORK/steps.txt"
  make_paratune
  [ "$MODE" = auto ] && MODE=$(detect_mode)
  case $MODE in gpu|torch-cpu|sim) ;; *) echo "--mode: gpu, torch-cpu or sim" >&2; exit 2 ;; esac
  local devices=() diag=(--simulated)
  ACCEL=nvidia-h100-80gb
  if [ "$MODE" = gpu ]; then
    nvidia-smi -L | tee "$WORK/gpus.txt"
    # The campaign and the checks' expectations follow the GPU at hand (catalog names,
    # agents/model/catalog.cc); anything else is judged as an H100.
    case $(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1) in
      *H200*) ACCEL=nvidia-h200 ;;
      *H100*) ACCEL=nvidia-h100-80gb ;;
      *) echo "real-campaign: not an H100/H200; judged against the H100's figures" ;;
    esac
    diag=(--accelerator "$ACCEL" --timeout 45)
  else
    devices=(--devices none)
  fi
  make_campaign
  export PARATUNE_SIM_SECONDS_PER_LINE=${PARATUNE_SIM_SECONDS_PER_LINE:-0.02}
  echo "mode: $MODE; results in $WORK" | tee "$WORK/steps.txt"
  cd "$ROOT"  # the sample's command is relative to the repository root
  # Step limits add up to under 8 minutes; a step past its limit gets SIGTERM, on which
  # `paratune tune` ends its trials and still prints what it measured.
  step diagnose 60 paratune node-diagnose "${diag[@]}" -o json
  step tune 170 paratune tune -f "$WORK/campaign.yaml" --local "${devices[@]}" \
    --out "$WORK/tune" -o json
  local space
  space=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["searchSpace"]["valid"])' \
    "$WORK/tune.json" 2>/dev/null || echo 8)
  step sweep 230 paratune tune -f "$WORK/campaign.yaml" --local "${devices[@]}" \
    --strategy grid --max-trials "$space" --out "$WORK/sweep" -o json
  python3 "$ROOT/hack/gpu/summarize.py" "$WORK" "$MODE" | tee "$WORK/summary.txt"
}

case ${1:-run} in
  bundle) shift; bundle "$@" ;;
  run) [ $# -gt 0 ] && shift; run "$@" ;;
  *) run "$@" ;;
esac
