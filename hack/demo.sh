#!/usr/bin/env bash
# make demo: the product end to end on the local control plane. Brings the cluster up, deploys
# the CRDs, RBAC and operator, applies manifests/samples/llama3-8b-h100x8.yaml, follows the
# campaign live and prints the result (best configuration, improvement over the baseline, the
# report, where each trial's metrics were read and the accelerator-hours spent). Trials are
# `paratune trial-sim` pods that, like real frameworks, write no termination message: the
# operator reads their logs. When the cluster cannot come up here, it says so and runs the same
# campaign through `paratune simulate` instead.
# Usage: hack/demo.sh BUILD_DIR   (PARATUNE_DEMO_KEEP=1 leaves the cluster running)
set -uo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
sample="$root/manifests/samples/llama3-8b-h100x8.yaml"
name=llama3-8b-h100x8
ns=default
export KUBECONFIG="${PARATUNE_CLUSTER_DIR:-$build/local-cluster}/kubeconfig"

offline() {
  echo "demo: $1"
  echo "demo: running the same campaign offline instead: paratune simulate -f $sample"
  "$build/bin/paratune" simulate -f "$sample"
  exit $?
}

[ -x "$build/bin/paratune-operator" ] || offline "paratune-operator is not built"
command -v kubectl >/dev/null || offline "kubectl is not installed"
"$root/hack/local-cluster.sh" up "$build" || offline "the local control plane could not start"
"$root/hack/local-cluster.sh" deploy "$build" || offline "deploying the operator failed"
if [ "${PARATUNE_DEMO_KEEP:-}" != 1 ]; then
  trap '"$root/hack/local-cluster.sh" down "$build" >/dev/null 2>&1' EXIT
fi
for _ in $(seq 50); do kubectl -n "$ns" get serviceaccount default >/dev/null 2>&1 && break; sleep 0.2; done
kubectl -n "$ns" delete tc "$name" --ignore-not-found --wait=true >/dev/null
kubectl -n "$ns" apply -f "$sample"

echo "demo: following the campaign (kubectl get tc,tr), Ctrl-C stops following"
last=""
deadline=$(( $(date +%s) + ${PARATUNE_DEMO_TIMEOUT:-900} ))
while [ "$(date +%s)" -lt "$deadline" ]; do
  now=$(kubectl -n "$ns" get tc "$name" -o custom-columns='PHASE:.status.phase,ITER:.status.iteration,BEST:.status.best.objective,BASELINE:.status.baseline.objective,TRIALS:.status.trials.total' --no-headers 2>/dev/null)
  if [ "$now" != "$last" ]; then
    echo "---- $(date +%H:%M:%S)"
    kubectl -n "$ns" get tc,tr -l "tuning.paratune.dev/campaign=$name" 2>/dev/null | tail -n 6
    kubectl -n "$ns" get tc "$name" 2>/dev/null
    last=$now
  fi
  phase=$(kubectl -n "$ns" get tc "$name" -o jsonpath='{.status.phase}' 2>/dev/null)
  case "$phase" in Succeeded|Failed|Stopped) break ;; esac
  sleep 2
done

echo
echo "================ result ================"
kubectl -n "$ns" get tc,tr -l "tuning.paratune.dev/campaign=$name" 2>/dev/null
kubectl -n "$ns" get tc "$name" -o jsonpath='phase: {.status.phase} ({.status.message})
baseline: {.status.baseline.trialName} objective {.status.baseline.objective}
best:     {.status.best.trialName} objective {.status.best.objective}
improvement over baseline: {.status.best.improvementOverBaseline}
best config: {.status.best.config}
last analysis: {.status.lastAnalysis.summary}
accelerator-hours spent: {.status.acceleratorHours.total} (saved by early stopping: {.status.acceleratorHours.savedByEarlyStopping})
'
# trial-sim writes no termination message, like a real framework: every metric below was read
# from the log of the pod the framework prints throughput on (status.metricsSource).
echo "where each trial's metrics came from:"
kubectl -n "$ns" get tr -l "tuning.paratune.dev/campaign=$name" -o custom-columns='TRIAL:.metadata.name,PHASE:.status.phase,FROM:.status.metricsSource.from,POD:.status.metricsSource.pod,ACCEL-HOURS:.status.acceleratorHours' 2>/dev/null
out=$(kubectl -n "$ns" get tc "$name" -o jsonpath='{.spec.output.configMapName}')
[ -n "$out" ] && { echo "published ConfigMap $out:"; kubectl -n "$ns" get configmap "$out" -o jsonpath='{.data.config\.json}'; echo; }
echo "events:"
kubectl -n "$ns" get events --field-selector "involvedObject.name=$name" --sort-by=.lastTimestamp \
  -o custom-columns='REASON:.reason,MESSAGE:.message' 2>/dev/null | tail -n 15
# The report: the campaign's TrialRuns in the `paratune simulate -o json` shape, rendered by
# `paratune report --from` (Markdown and an SVG chart of the objective per iteration).
report_dir="${PARATUNE_CLUSTER_DIR:-$build/local-cluster}/report"
echo
echo "================ report ================"
PARATUNE_BIN="$build/bin/paratune" "$root/hack/campaign-report.sh" -n "$ns" "$name" "$report_dir" ||
  echo "demo: hack/campaign-report.sh could not render the report of $name"
