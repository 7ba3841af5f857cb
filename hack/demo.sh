#!/usr/bin/env bash
# make demo: the product end to end on the local control plane. Brings the cluster up, deploys
# the CRDs, RBAC and operator, applies manifests/samples/llama3-8b-h100x8.yaml, follows the
# campaign live and prints the result (best configuration, improvement over the baseline, the
# report). When the cluster cannot come up here, it says so and runs the same campaign through
# `paratune simulate` instead.
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
'
out=$(kubectl -n "$ns" get tc "$name" -o jsonpath='{.spec.output.configMapName}')
[ -n "$out" ] && { echo "published ConfigMap $out:"; kubectl -n "$ns" get configmap "$out" -o jsonpath='{.data.config\.json}'; echo; }
echo "events:"
kubectl -n "$ns" get events --field-selector "involvedObject.name=$name" --sort-by=.lastTimestamp \
  -o custom-columns='REASON:.reason,MESSAGE:.message' 2>/dev/null | tail -n 15
# The report: the campaign's TrialRuns in the `paratune simulate -o json` shape, rendered by
# `paratune report --from` (Markdown and an SVG chart of the objective per iteration).
report_dir="${PARATUNE_CLUSTER_DIR:-$build/local-cluster}/report"
mkdir -p "$report_dir"
if command -v python3 >/dev/null &&
   kubectl -n "$ns" get tr -l "tuning.paratune.dev/campaign=$name" -o json > "$report_dir/trials.json" &&
   kubectl -n "$ns" get tc "$name" -o json > "$report_dir/campaign.json"; then
  python3 - "$report_dir" <<'PY'
import json, sys
d = sys.argv[1]
trs = json.load(open(d + "/trials.json"))["items"]
tc = json.load(open(d + "/campaign.json"))
def row(t):
    st = t.get("status", {})
    return {"name": t["metadata"]["name"], "iteration": t["spec"].get("iteration", 0),
            "config": t["spec"].get("config", {}), "phase": st.get("phase", "Pending"),
            "metrics": st.get("metrics", {}), "failure": st.get("failure"),
            "rationale": t["spec"].get("proposal", {}).get("rationale", "")}
trials = sorted((row(t) for t in trs), key=lambda r: r["iteration"])
by = {r["name"]: r for r in trials}
s = tc.get("status", {})
metric = tc["spec"].get("objective", {}).get("metric", "mfu")
def pick(key):
    r = dict(by.get(s.get(key, {}).get("trialName"), {}))
    if r:
        r["trialName"] = r["name"]
        r["objective"] = s[key].get("objective", 0)
        r["improvementOverBaseline"] = s[key].get("improvementOverBaseline", 0)
    return r
out = {"campaign": tc["metadata"]["name"], "trials": trials,
       "objective": {"metric": metric, "maximize": metric != "stepTimeSeconds"},
       "strategy": tc["spec"].get("agents", {}).get("engine", "builtin"),
       "trialCounts": s.get("trials", {}), "lastAnalysis": s.get("lastAnalysis", {}),
       "best": pick("best"), "baseline": pick("baseline")}
json.dump(out, open(d + "/campaign-result.json", "w"), indent=1)
PY
  echo
  echo "================ report ================"
  (cd "$report_dir" && "$build/bin/paratune" report --from campaign-result.json) ||
    echo "demo: paratune report could not render $report_dir/campaign-result.json"
fi
