#!/usr/bin/env bash
# Runs the test layers: unit (always), integration and e2e (real control plane, when it can be
# built here). Usage: hack/test.sh BUILD_DIR [unit|integration|e2e|all]
set -euo pipefail
build=${1:-build}; layer=${2:-all}
cd "$(dirname "$0")/.."
jobs=$(nproc)
run_ctest() { (cd "$build" && ctest -L "$1" --output-on-failure -j "$jobs"); }
case "$layer" in
  unit) run_ctest unit ;;
  integration|e2e|all)
    [ "$layer" = all ] && run_ctest unit
    if [ -x hack/local-cluster.sh ] && ls tests/integration/*.cc >/dev/null 2>&1; then
      export PARATUNE_KUBE_BIN
      PARATUNE_KUBE_BIN=$(hack/build-kube.sh | tail -1)
      if [ "$layer" != e2e ]; then run_ctest integration; fi
      if [ "$layer" != integration ] && [ -x hack/e2e.sh ]; then hack/e2e.sh "$build"; fi
    fi ;;
  *) echo "unknown layer $layer" >&2; exit 2 ;;
esac
