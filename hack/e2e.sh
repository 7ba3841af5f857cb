#!/usr/bin/env bash
# End to end, as a user would do it (contract section 9), on a fresh local control plane of its
# own (separate ports and state dir, so it can run beside a developer's cluster):
#   1. an invalid campaign is marked SpecValid=False naming the field, and creates nothing;
#   2. a GPU campaign (manifests/samples/llama3-8b-h100x8.yaml, smaller budget) and a TPU
#      campaign run to Succeeded with trial-sim trials and publish their best configuration;
#   3. the operator is killed (SIGKILL) mid-campaign and restarted: no trial is lost or
#      duplicated (every TrialRun has one Job, iterations are unique, the pool and status agree);
#   4. the operator ran under its ServiceAccount's token (RBAC of manifests/): no 403 in its log.
# Usage: hack/e2e.sh BUILD_DIR. Exit 0 when every check passes.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
export PARATUNE_CLUSTER_DIR=${PARATUNE_E2E_DIR:-$build/e2e-cluster}
export PARATUNE_API_PORT=${PARATUNE_E2E_API_PORT:-6743}
export PARATUNE_ETCD_PORT=${PARATUNE_E2E_ETCD_PORT:-2679}
export PARATUNE_HEALTH_PROBE_BIND_ADDRESS=127.0.0.1:${PARATUNE_E2E_PROBE_PORT:-18081}
export KUBECONFIG=$PARATUNE_CLUSTER_DIR/kubeconfig
ns=paratune-e2e
deadline_s=${PARATUNE_E2E_TIMEOUT:-420}
t0=$(date +%s)
failures=0

say() { echo "e2e [$(( $(date +%s) - t0 ))s]: $*"; }
fail() { say "FAIL: $*"; failures=$((failures + 1)); }
pass() { say "ok: $*"; }
cluster() { "$root/hack/local-cluster.sh" "$1" "$build"; }
jp() { kubectl -n "$ns" get "$1" "$2" -o "jsonpath=$3" 2>/dev/null; }

for bin in paratune paratune-operator paratune-kubelet-sim; do
  [ -x "$build/bin/$bin" ] || { echo "e2e: $build/bin/$bin not built" >&2; exit 1; }
done
cluster down >/dev/null 2>&1 || true
rm -rf "$PARATUNE_CLUSTER_DIR"
trap 'status=$?; [ $status -ne 0 ] && [ -f "$PARATUNE_CLUSTER_DIR/operator.log" ] && tail -40 "$PARATUNE_CLUSTER_DIR/operator.log"; cluster down >/dev/null 2>&1 || true; exit $status' EXIT
cluster up
cluster deploy
kubectl create namespace "$ns" >/dev/null
# The namespace's default ServiceAccount must exist before pods can be created.
for _ in $(seq 50); do kubectl -n "$ns" get serviceaccount default >/dev/null 2>&1 && break; sleep 0.2; done

# Samples, with budgets small enough for a 2-core machine.
gpu=llama3-8b-h100x8
sed -e 's/maxTrials: 20/maxTrials: 6/' -e 's/parallelTrials: 1/parallelTrials: 2/' \
  "$root/manifests/samples/$gpu.yaml" > "$PARATUNE_CLUSTER_DIR/gpu.yaml"
tpu_sample=$(ls "$root"/manifests/samples/*tpu*.yaml 2>/dev/null | head -1 || true)
if [ -n "$tpu_sample" ]; then
  tpu=$(awk '/^metadata:/{m=1} m && /name:/{print $2; exit}' "$tpu_sample")
  sed -e 's/maxTrials: [0-9]*/maxTrials: 4/' -e 's/parallelTrials: [0-9]*/parallelTrials: 1/' \
    "$tpu_sample" > "$PARATUNE_CLUSTER_DIR/tpu.yaml"
else
  tpu=gemma-tpu-v5e
  cat > "$PARATUNE_CLUSTER_DIR/tpu.yaml" <<'YAML'
apiVersion: tuning.paratune.dev/v1alpha1
kind: TuningCampaign
metadata: {name: gemma-tpu-v5e}
spec:
  model: {preset: llama3-8b}
  training: {framework: maxtext, seqLength: 2048, globalBatchSize: 64}
  hardware: {accelerator: tpu-v5e, tpuTopology: 4x4}
  searchSpace:
    parameters:
    - {name: iciFsdp, values: [4, 8, 16]}
    - {name: iciTensor, values: [1, 2, 4]}
    - {name: remat, values: [full, minimal]}
    - {name: perDeviceBatchSize, values: [1, 2, 4]}
  objective: {metric: tokensPerSecondPerDevice}
  budget: {maxTrials: 4, parallelTrials: 1, trialTimeout: 5m}
  metrics: {collector: maxtext}
  output: {configMapName: gemma-tpu-v5e-best}
YAML
fi

# 1. Invalid: tp is not a parameter value type the search space allows.
kubectl -n "$ns" apply -f - >/dev/null <<'YAML'
apiVersion: tuning.paratune.dev/v1alpha1
kind: TuningCampaign
metadata: {name: invalid}
spec:
  model: {preset: llama3-8b}
  training: {globalBatchSize: 512}
  hardware: {accelerator: nvidia-h100-80gb}
  searchSpace:
    parameters:
    - {name: tensorParallelism, values: [1, 2]}
YAML
kubectl -n "$ns" apply -f "$PARATUNE_CLUSTER_DIR/gpu.yaml" -f "$PARATUNE_CLUSTER_DIR/tpu.yaml" >/dev/null
say "applied $gpu, $tpu and invalid"

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: polls until COMMAND succeeds
  local until=$(( $(date +%s) + $1 )); local what=$2; shift 2
  while [ "$(date +%s)" -lt "$until" ]; do "$@" && return 0; sleep 1; done
  fail "timed out waiting for $what"; return 1
}

invalid_marked() { [ "$(jp tc invalid '{.status.conditions[?(@.type=="SpecValid")].status}')" = False ]; }
if wait_for 60 "invalid SpecValid=False" invalid_marked; then
  msg=$(jp tc invalid '{.status.conditions[?(@.type=="SpecValid")].message}')
  case "$msg" in *spec.searchSpace.parameters*tensorParallelism*) pass "invalid campaign: $msg" ;;
    *) fail "invalid campaign message does not name the field: $msg" ;; esac
  n=$(kubectl -n "$ns" get tr -l tuning.paratune.dev/campaign=invalid -o name | wc -l)
  [ "$n" -eq 0 ] && pass "invalid campaign created no trial" || fail "invalid campaign created $n trials"
fi

# 3. Kill the operator once the GPU campaign has launched trials, then restart it.
two_trials() { [ "$(kubectl -n "$ns" get tr -l tuning.paratune.dev/campaign=$gpu -o name | wc -l)" -ge 2 ]; }
if wait_for 120 "$gpu to launch two trials" two_trials; then
  kill -9 "$(cat "$PARATUNE_CLUSTER_DIR/operator.pid")"
  say "operator killed (SIGKILL) with $(kubectl -n "$ns" get tr -o name | wc -l) trials in flight"
  sleep 3
  cluster deploy >/dev/null
  say "operator restarted"
fi

finished() { local p; p=$(jp tc "$1" '{.status.phase}'); [ "$p" = Succeeded ] || [ "$p" = Failed ]; }
remaining=$(( deadline_s - ($(date +%s) - t0) ))
for c in "$gpu" "$tpu"; do
  wait_for "$remaining" "$c to finish" finished "$c" || true
  phase=$(jp tc "$c" '{.status.phase}')
  best=$(jp tc "$c" '{.status.best.trialName}')
  [ "$phase" = Succeeded ] && pass "$c Succeeded, best $best ($(jp tc "$c" '{.status.best.objective}'))" \
    || fail "$c ended $phase: $(jp tc "$c" '{.status.message}')"
  out=$(kubectl -n "$ns" get tc "$c" -o jsonpath='{.spec.output.configMapName}')
  if [ -n "$out" ]; then
    trial=$(jp configmap "$out" '{.data.trial}')
    [ -n "$trial" ] && [ "$trial" = "$best" ] && pass "$c best configuration published in ConfigMap $out" \
      || fail "$c: ConfigMap $out holds trial '$trial', status best is '$best'"
  fi
  # Nothing lost, nothing duplicated.
  total=$(jp tc "$c" '{.status.trials.total}')
  trs=$(kubectl -n "$ns" get tr -l tuning.paratune.dev/campaign="$c" -o name | wc -l)
  jobs=$(kubectl -n "$ns" get jobs -l tuning.paratune.dev/campaign="$c" -o name | wc -l)
  iters=$(kubectl -n "$ns" get tr -l tuning.paratune.dev/campaign="$c" -o jsonpath='{range .items[*]}{.spec.iteration}{"\n"}{end}')
  dup=$(echo "$iters" | sort | uniq -d | wc -l)
  [ "$total" = "$trs" ] && [ "$trs" = "$jobs" ] && [ "$dup" -eq 0 ] \
    && pass "$c: $trs TrialRuns = status total = $jobs Jobs, no duplicate iteration" \
    || fail "$c: status total $total, TrialRuns $trs, Jobs $jobs, duplicate iterations $dup"
  events=$(kubectl -n "$ns" get events --field-selector involvedObject.name="$c" -o jsonpath='{range .items[*]}{.reason}{" "}{end}')
  for r in Proposed Launched TrialSucceeded NewBest Converged; do
    case " $events " in *" $r "*) ;; *) fail "$c: no $r event (saw: $events)" ;; esac
  done
done
kubectl -n "$ns" get tc,tr

if grep -qE 'PermissionDenied|[Ff]orbidden|HTTP 403' "$PARATUNE_CLUSTER_DIR/operator.log"; then
  fail "the operator hit RBAC denials:"; grep -m5 -E 'PermissionDenied|[Ff]orbidden|HTTP 403' "$PARATUNE_CLUSTER_DIR/operator.log"
else
  pass "no RBAC denial in the operator log (it ran with its ServiceAccount's token)"
fi

say "done: $failures failure(s)"
[ "$failures" -eq 0 ]
