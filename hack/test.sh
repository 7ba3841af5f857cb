#!/usr/bin/env bash
# Runs the test layers: unit (always), integration and e2e (real control plane, when it can be
# built here), plus brief fuzzing in `all`. Usage: hack/test.sh BUILD_DIR [unit|fuzz|integration|e2e|all]
set -euo pipefail
build=${1:-build}; layer=${2:-all}
cd "$(dirname "$0")/.."
jobs=$(nproc)
run_ctest() { (cd "$build" && ctest -L "$1" --output-on-failure -j "$jobs"); }
# The Helm chart's default rendering must equal manifests/ + crds/ (no cluster needed).
chart_check() { [ -x tests/chart/check_chart_test.sh ] && tests/chart/check_chart_test.sh; }
# libFuzzer targets, briefly (hack/fuzz.sh; a separate clang tree next to BUILD_DIR). Skipped
# only when PARATUNE_SKIP_FUZZ=1; a missing clang fails with the reason.
fuzz_check() {
  if [ "${PARATUNE_SKIP_FUZZ:-0}" = 1 ]; then echo "fuzz: skipped (PARATUNE_SKIP_FUZZ=1)"; return; fi
  # A fixed number of runs from a fixed seed: the same inputs on every machine, so a red CI is
  # a real regression, never a lucky find (open-ended fuzzing is make bench's job).
  PARATUNE_FUZZ_RUNS=${PARATUNE_FUZZ_RUNS:-3000} hack/fuzz.sh "${build%/}-fuzz" \
    "${PARATUNE_FUZZ_SECONDS:-20}"
}
case "$layer" in
  unit) run_ctest unit; chart_check ;;
  fuzz) fuzz_check ;;
  integration|e2e|all)
    if [ "$layer" = all ]; then run_ctest unit; chart_check; fuzz_check; fi
    if [ -x hack/local-cluster.sh ] && ls tests/integration/*.cc >/dev/null 2>&1; then
      export PARATUNE_KUBE_BIN
      PARATUNE_KUBE_BIN=$(hack/build-kube.sh | tail -1)
      if [ "$layer" != e2e ]; then
        # One private control plane on free ports for every integration test process.
        it_dir=$(mktemp -d /tmp/paratune-it-XXXXXX)
        free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
        export PARATUNE_IT_CLUSTER_ENV="PARATUNE_CLUSTER_DIR=$it_dir PARATUNE_API_PORT=$(free_port) PARATUNE_ETCD_PORT=$(free_port) PARATUNE_KUBELET_PORT=$(free_port) PARATUNE_KUBE_BIN=$PARATUNE_KUBE_BIN"
        # What a red CI run needs to be understood: which processes of the control plane
        # still live, the nodes, the pods not finished, and the tails of the process logs.
        it_postmortem() {
          echo "=== integration post-mortem ($it_dir)"
          env $PARATUNE_IT_CLUSTER_ENV hack/local-cluster.sh status "$build" || true
          local kc="$it_dir/kubeconfig"
          kubectl --kubeconfig "$kc" get nodes -o wide 2>&1 | head -20 || true
          kubectl --kubeconfig "$kc" get pods -A --field-selector=status.phase!=Succeeded,status.phase!=Failed \
            -o wide 2>&1 | head -40 || true
          for f in kubelet-sim kube-scheduler kube-controller-manager kube-apiserver; do
            echo "--- tail of $f.log"; tail -n 25 "$it_dir/$f.log" 2>/dev/null || true
          done
        }
        it_down() { env $PARATUNE_IT_CLUSTER_ENV hack/local-cluster.sh down "$build" >/dev/null 2>&1 || true; rm -rf "$it_dir"; }
        trap it_down EXIT
        env $PARATUNE_IT_CLUSTER_ENV hack/local-cluster.sh up "$build"
        if ! (cd "$build" && ctest -L integration --output-on-failure -j 1); then
          it_postmortem; exit 1
        fi
        it_down; trap - EXIT
      fi
      if [ "$layer" != integration ] && [ -x hack/e2e.sh ]; then hack/e2e.sh "$build"; fi
    fi ;;
  *) echo "unknown layer $layer" >&2; exit 2 ;;
esac
