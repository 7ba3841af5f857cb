#!/usr/bin/env bash
# End to end, as a user would do it, on a fresh local control plane of its own (separate ports
# and state dir, so it can run beside a developer's cluster):
#   0. every campaign in manifests/samples/ parses (`paratune estimate -f`) and the API server
#      accepts every sample (`kubectl apply --dry-run=server`, CRD schema included);
#   1. install with the Helm chart: charts/paratune rendered by hack/render-chart (Helm's
#      text/template + Sprig) for this server's version and `kubectl apply`-ed, with
#      rdma.resourceName=rdma/rdma_shared_device_a (the simulated GPU nodes advertise it) and the LLM sample's
#      endpoint (moved to a closed loopback port) allowed; the operator runs
#      as a local process with the rendered Deployment's arguments and the token of the rendered
#      ServiceAccount (a real ServiceAccount token: RBAC is exactly the chart's);
#   2. an invalid campaign is marked SpecValid=False naming the field, and creates nothing;
#   3. the simulated sample (manifests/samples/simulated-llama3-8b-anywhere.yaml, smaller budget),
#      a 2-node GPU campaign (mixtral-8x7b-h100x16.yaml: an Indexed Job of 2 pods) and the 4-host
#      TPU campaign run to Succeeded with trial-sim trials and publish their best configuration;
#      status, events and the report (hack/campaign-report.sh) say so. trial-sim writes no
#      termination message (as real frameworks do not) and prints throughput only on the rank
#      the framework does: every successful trial must have its metrics from the log of the
#      right pod (status.metricsSource: the last rank for Megatron-LM, process 0 for MaxText),
#      and no pod may carry a termination message;
#   4. the operator is killed (SIGKILL) mid-campaign and restarted (it waits for the Lease): no
#      trial is lost or duplicated (every TrialRun has one Job, iterations are unique);
#   3c. every other sample in manifests/samples/ (a glob: new samples are covered without an
#      edit here) reaches its first trial, one at a time (see first_trial below for what that
#      means for images the kubelet stand-in cannot run), then is deleted and its per-campaign
#      series leave /metrics;
#   5. no RBAC denial in the operator log; its /metrics counted reconciles and API requests and
#      carries the per-campaign series (best objective, trials by phase, OOMs avoided,
#      accelerator-hours spent and saved, queue wait) of the finished campaigns;
#   6. uninstall: `kubectl delete` of the rendered objects, CRDs last; nothing of ours is left.
# Usage: hack/e2e.sh BUILD_DIR. Exit 0 when every check passes.
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
export PARATUNE_CLUSTER_DIR=${PARATUNE_E2E_DIR:-$build/e2e-cluster}
export PARATUNE_API_PORT=${PARATUNE_E2E_API_PORT:-6743}
export PARATUNE_ETCD_PORT=${PARATUNE_E2E_ETCD_PORT:-2679}
export PARATUNE_KUBELET_PORT=${PARATUNE_E2E_KUBELET_PORT:-10350}
probe=127.0.0.1:${PARATUNE_E2E_PROBE_PORT:-18081}
export PARATUNE_HEALTH_PROBE_BIND_ADDRESS=$probe
export KUBECONFIG=$PARATUNE_CLUSTER_DIR/kubeconfig
dir=$PARATUNE_CLUSTER_DIR
ns=paratune-e2e
opns=paratune-system
# Where the LLM sample's requests go here: a loopback port nothing listens on (the discard
# port), so the hybrid engine's calls fail at once and the built-in engine takes each iteration
# (agents/engines/llm_engine.h); a loopback endpoint may carry the key over http.
llm_endpoint=http://127.0.0.1:9/v1
deadline_s=${PARATUNE_E2E_TIMEOUT:-600}
t0=$(date +%s)
failures=0

say() { echo "e2e [$(( $(date +%s) - t0 ))s]: $*"; }
fail() { say "FAIL: $*"; failures=$((failures + 1)); }
pass() { say "ok: $*"; }
cluster() { "$root/hack/local-cluster.sh" "$1" "$build"; }
jp() { kubectl -n "$ns" get "$1" "$2" -o "jsonpath=$3" 2>/dev/null; }
wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: polls until COMMAND succeeds
  local until=$(( $(date +%s) + $1 )); local what=$2; shift 2
  while [ "$(date +%s)" -lt "$until" ]; do "$@" && return 0; sleep 1; done
  fail "timed out waiting for $what"; return 1
}

for bin in paratune paratune-operator paratune-kubelet-sim; do
  [ -x "$build/bin/$bin" ] || { echo "e2e: $build/bin/$bin not built" >&2; exit 1; }
done

# 0a. Every sample campaign parses.
for f in "$root"/manifests/samples/*.yaml; do
  grep -q '^kind: TuningCampaign' "$f" || continue
  if out=$("$build/bin/paratune" estimate -f "$f" -o json 2>&1) &&
     python3 -c 'import json,sys; assert "fits" in json.loads(sys.argv[1])' "$out" 2>/dev/null; then
    pass "sample $(basename "$f") parses (paratune estimate)"
  else
    fail "sample $(basename "$f"): paratune estimate -f: $out"
  fi
done

cluster down >/dev/null 2>&1 || true
rm -rf "$dir"
trap 'status=$?; [ $status -ne 0 ] && [ -f "$dir/operator.log" ] && tail -40 "$dir/operator.log"; cluster down >/dev/null 2>&1 || true; exit $status' EXIT
cluster up

# 1. Install with the chart, rendered for this server's version (1.20: PDB as policy/v1beta1),
#    diagnostics simulated (the simulated nodes run `paratune node-check`).
kube_version=$(kubectl version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
rc=$("$root/hack/render-chart/render.sh" --path)
"$rc" template "$root/charts/paratune" --name paratune -n "$opns" --kube-version "$kube_version" \
  --set namespace.create=true --set diagnostics.mode=simulated --set rdma.resourceName=rdma/rdma_shared_device_a \
  --set "llm.allowedEndpoints={${llm_endpoint%/v1}/}" > "$dir/paratune.yaml"
# Uninstall deletes the CRDs last: keep them apart.
python3 - "$dir/paratune.yaml" "$dir/paratune-crds.yaml" "$dir/paratune-objects.yaml" <<'PY'
import sys
docs = [d for d in open(sys.argv[1]).read().split("\n---\n") if "\nkind:" in "\n" + d]
crds = [d for d in docs if "\nkind: CustomResourceDefinition" in "\n" + d]
open(sys.argv[2], "w").write("\n---\n".join(crds) + "\n")
open(sys.argv[3], "w").write("\n---\n".join(d for d in docs if d not in crds) + "\n")
PY
kubectl apply -f "$dir/paratune.yaml" >/dev/null
kubectl wait --for condition=established --timeout=30s -f "$dir/paratune-crds.yaml" >/dev/null
pass "chart rendered for $kube_version and applied: $(grep -c '^kind:' "$dir/paratune.yaml") objects"

# The rendered ServiceAccount's token (the token controller fills its Secret).
sa_token() {
  local s; s=$(kubectl -n "$opns" get serviceaccount paratune-operator -o jsonpath='{.secrets[0].name}' 2>/dev/null)
  [ -n "$s" ] && kubectl -n "$opns" get secret "$s" -o jsonpath='{.data.token}' 2>/dev/null | base64 -d > "$dir/sa.token" &&
    [ -s "$dir/sa.token" ]
}
wait_for 30 "the token of ServiceAccount $opns/paratune-operator" sa_token
cat > "$dir/sa.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: $(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
    server: $(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}')
  name: paratune-local
contexts:
- context: {cluster: paratune-local, user: paratune-operator}
  name: paratune-local
current-context: paratune-local
users:
- name: paratune-operator
  user:
    token: $(cat "$dir/sa.token")
KC
chmod 600 "$dir/sa.kubeconfig"
# The Deployment's own arguments; only the listen addresses move to loopback ports of ours.
mapfile -t op_args < <("$rc" get "$dir/paratune.yaml" Deployment/paratune-operator \
  '.spec.template.spec.containers[0].args' | python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)))')
start_operator() {
  POD_NAMESPACE=$opns setsid "$build/bin/paratune-operator" "${op_args[@]}" --kubeconfig "$dir/sa.kubeconfig" \
    --metrics-bind-address=0 --health-probe-bind-address="$probe" >> "$dir/operator.log" 2>&1 < /dev/null &
  echo $! > "$dir/operator.pid"
  disown  # a SIGKILL below is on purpose: no "Killed" notice from the shell
}
start_operator
ready() { curl -sf "http://$probe/readyz" >/dev/null 2>&1; }
wait_for 30 "the operator's /readyz" ready && pass "operator up: ${op_args[*]} (ServiceAccount token)"

kubectl create namespace "$ns" >/dev/null
# The namespace's default ServiceAccount must exist before pods can be created.
for _ in $(seq 50); do kubectl -n "$ns" get serviceaccount default >/dev/null 2>&1 && break; sleep 0.2; done

# 0b. The API server (CRD schemas included) accepts every sample.
if out=$(kubectl -n "$ns" apply --dry-run=server -f "$root/manifests/samples/" 2>&1); then
  pass "the API server accepts every sample ($(echo "$out" | wc -l) objects, dry run)"
else
  fail "kubectl apply --dry-run=server -f manifests/samples/: $out"
fi

# Samples, with budgets small enough for a 2-core machine.
sim=llama3-8b-simulated
sed -e 's/maxTrials: [0-9]*/maxTrials: 6/' -e 's/parallelTrials: [0-9]*/parallelTrials: 2/' \
  "$root/manifests/samples/simulated-llama3-8b-anywhere.yaml" > "$dir/sim.yaml"
tpu=llama2-7b-tpu-v5e-4x4
sed -e 's/maxTrials: [0-9]*/maxTrials: 4/' -e 's/parallelTrials: [0-9]*/parallelTrials: 1/' \
  "$root/manifests/samples/$tpu.yaml" > "$dir/tpu.yaml"
gpu2=mixtral-8x7b-h100x16
sed -e 's/maxTrials: [0-9]*/maxTrials: 3/' -e 's/parallelTrials: [0-9]*/parallelTrials: 1/' \
  "$root/manifests/samples/$gpu2.yaml" > "$dir/gpu2.yaml"

# 2. Invalid: tensorParallelism is not a parameter of the vocabulary.
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
kubectl -n "$ns" apply -f "$dir/sim.yaml" -f "$dir/tpu.yaml" -f "$dir/gpu2.yaml" >/dev/null
say "applied $sim, $tpu, $gpu2 and invalid"

invalid_marked() { [ "$(jp tc invalid '{.status.conditions[?(@.type=="SpecValid")].status}')" = False ]; }
if wait_for 60 "invalid SpecValid=False" invalid_marked; then
  msg=$(jp tc invalid '{.status.conditions[?(@.type=="SpecValid")].message}')
  case "$msg" in *spec.searchSpace.parameters*tensorParallelism*) pass "invalid campaign: $msg" ;;
    *) fail "invalid campaign message does not name the field: $msg" ;; esac
  n=$(kubectl -n "$ns" get tr -l tuning.paratune.dev/campaign=invalid -o name | wc -l)
  [ "$n" -eq 0 ] && pass "invalid campaign created no trial" || fail "invalid campaign created $n trials"
fi

# 4. Kill the operator once the simulated campaign has launched trials, then restart it.
two_trials() { [ "$(kubectl -n "$ns" get tr -l tuning.paratune.dev/campaign=$sim -o name | wc -l)" -ge 2 ]; }
if wait_for 120 "$sim to launch two trials" two_trials; then
  kill -9 "$(cat "$dir/operator.pid")"
  say "operator killed (SIGKILL) with $(kubectl -n "$ns" get tr -o name | wc -l) trials in flight"
  sleep 1
  start_operator
  say "operator restarted (takes over the Lease when it expires)"
fi

# 3. Both campaigns finish; status, events, the published configuration and the report.
finished() { local p; p=$(jp tc "$1" '{.status.phase}'); [ "$p" = Succeeded ] || [ "$p" = Failed ]; }
remaining=$(( deadline_s - ($(date +%s) - t0) ))
for c in "$sim" "$tpu" "$gpu2"; do
  remaining=$(( deadline_s - ($(date +%s) - t0) ))
  [ "$remaining" -gt 0 ] || remaining=1
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
  # An early-stopped trial's Job is deleted when it is stopped (its TrialRun keeps the evidence).
  phases=$(kubectl -n "$ns" get tr -l tuning.paratune.dev/campaign="$c" -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}')
  stopped=$(echo "$phases" | grep -c '^EarlyStopped$' || true)
  [ "$total" = "$trs" ] && [ "$trs" = "$((jobs + stopped))" ] && [ "$dup" -eq 0 ] \
    && pass "$c: $trs TrialRuns = status total = $jobs Jobs + $stopped early-stopped, no duplicate iteration" \
    || fail "$c: status total $total, TrialRuns $trs, Jobs $jobs, early-stopped $stopped, duplicate iterations $dup (phases: $(echo $phases))"
  events=$(kubectl -n "$ns" get events --field-selector involvedObject.name="$c" -o jsonpath='{range .items[*]}{.reason}{" "}{end}')
  for r in Proposed TrialSucceeded NewBest Converged; do
    case " $events " in *" $r "*) ;; *) fail "$c: no $r event (saw: $events)" ;; esac
  done
  # A launch is announced in the Proposed Event of the reconcile that launched it (a Launched
  # Event only when the launch came in a later reconcile): some Event must say "launched:".
  launches=$(kubectl -n "$ns" get events --field-selector involvedObject.name="$c" \
    -o jsonpath='{range .items[*]}{.message}{"\n"}{end}' | grep -c ' launched: ' || true)
  [ "$launches" -gt 0 ] && pass "$c: $launches Events announce a launch" \
    || fail "$c: no Event announces a launch (reasons: $events)"
done

# 3b. Metrics from the right rank, with termination messages off (issue 13): every Succeeded
#     trial of the multi-pod campaigns read its metrics from the log of the pod whose rank the
#     framework prints throughput on, and no trial pod wrote a termination message.
check_ranks() {  # check_ranks CAMPAIGN EXPECTED_RANK PODS_PER_TRIAL
  local c=$1 want=$2 pods=$3 out
  if out=$(kubectl -n "$ns" get tr -l tuning.paratune.dev/campaign="$c" -o json | python3 -c '
import json, sys
want, per_trial = int(sys.argv[1]), int(sys.argv[2])
ok = bad = 0
for t in json.load(sys.stdin)["items"]:
    st = t.get("status", {})
    if st.get("phase") != "Succeeded":
        continue
    src = st.get("metricsSource", {})
    if src.get("from") == "log" and src.get("rank") == want:
        ok += 1
    else:
        bad += 1
        print("%s: metricsSource %s" % (t["metadata"]["name"], json.dumps(src)))
print("ok=%d bad=%d" % (ok, bad))
sys.exit(0 if ok > 0 and bad == 0 else 1)' "$want" "$pods"); then
    pass "$c: every successful trial read its metrics from the log of rank $want (${out##*$'\n'})"
  else
    fail "$c: metrics not from rank $want's log: $out"
  fi
  local msgs
  msgs=$(kubectl -n "$ns" get pods -l tuning.paratune.dev/campaign="$c" -o json | python3 -c '
import json, sys
pods = json.load(sys.stdin)["items"]
n = sum(1 for p in pods for cs in p.get("status", {}).get("containerStatuses", [])
        if cs.get("state", {}).get("terminated", {}).get("exitCode") == 0
        and cs["state"]["terminated"].get("message"))
print("%d/%d" % (n, len(pods)))')
  case "$msgs" in 0/*) pass "$c: no trial pod wrote a termination message ($msgs pods)" ;;
    *) fail "$c: pods with a termination message: $msgs" ;; esac
}
check_ranks "$gpu2" 1 2   # Megatron-LM: print_rank_last, the last of 2 nodes
check_ranks "$tpu" 0 4    # MaxText: process 0 of 4 hosts
kubectl -n "$ns" get tc,tr

if PARATUNE_BIN="$build/bin/paratune" "$root/hack/campaign-report.sh" -n "$ns" "$sim" "$dir/report" \
     > "$dir/report.txt" 2>&1 && grep -qF "$(jp tc "$sim" '{.status.best.trialName}')" "$dir/report/report.md" &&
   grep -q '<svg' "$dir/report/objective.svg"; then
  pass "report of $sim: $dir/report/report.md and objective.svg name the best trial"
else
  fail "hack/campaign-report.sh $sim: $(tail -5 "$dir/report.txt")"
fi

if "$build/bin/paratune" report "$sim" -n "$ns" --out "$dir/cli-report" > "$dir/cli-report.txt" 2>&1 &&
   grep -qF "$(jp tc "$sim" '{.status.best.trialName}')" "$dir/cli-report/report.md"; then
  pass "paratune report $sim -n $ns (live cluster, \$KUBECONFIG) names the best trial"
else
  fail "paratune report $sim -n $ns: $(tail -5 "$dir/cli-report.txt")"
fi

# 3d. Per-campaign metrics of the finished campaigns on /metrics.
metrics=$(curl -sf "http://$probe/metrics" || true)
series() {  # series NAME CAMPAIGN [EXTRA_LABEL_SUBSTRING]: the first value, or empty
  echo "$metrics" | grep "^$1{" | grep -F "namespace=\"$ns\",campaign=\"$2\"" | grep -F "${3:-}" |
    head -1 | awk '{print $2}'
}
for c in "$sim" "$tpu" "$gpu2"; do
  best=$(series paratune_campaign_best_objective "$c")
  ok=$(series paratune_campaign_trials "$c" 'phase="Succeeded"')
  spent=$(series paratune_campaign_accelerator_hours_spent_total "$c")
  all_there=1
  for m in paratune_campaign_ooms_avoided_total paratune_campaign_accelerator_hours_saved_total \
           paratune_campaign_queue_wait_seconds_total paratune_campaign_info paratune_campaign_baseline_objective; do
    [ -n "$(series "$m" "$c")" ] || { all_there=0; fail "/metrics: no $m for $c"; }
  done
  if python3 -c 'import sys; b, n, h = map(float, sys.argv[1:]); sys.exit(0 if b > 0 and n >= 1 and h > 0 else 1)' \
       "${best:-0}" "${ok:-0}" "${spent:-0}" && [ "$all_there" = 1 ]; then
    pass "$c on /metrics: best objective $best, $ok trials Succeeded, $spent accelerator-hours, OOMs avoided $(series paratune_campaign_ooms_avoided_total "$c")"
  else
    fail "$c per-campaign metrics: best '$best', succeeded '$ok', hours '$spent'"
  fi
done

# 3c. Every other sample reaches its first trial, one at a time after the others finished (the
#     4 simulated GPU nodes are free then). "First trial" means: the operator admits the
#     campaign and creates its first TrialRun and that trial's workload (a Job, JobSet or
#     TrainJob labelled with the campaign); the scheduler binds every pod of it to a simulated
#     node of the right pool (its GPU/TPU/RDMA requests and node selectors admitted); and the
#     kubelet stand-in runs it: a `paratune ...` command to its end (the TrialRun ends
#     Succeeded or Failed), a real framework image (NeMo, MaxText, torchtitan, ...) only as far
#     as a stand-in can, the container left Waiting with ErrImagePull (it cannot pull or run
#     real images). A workload kind with no controller on this control plane (TrainJob, JobSet)
#     is checked as created only.
covered=" $sim $tpu $gpu2 "
first_trial_ok() {  # first_trial_ok CAMPAIGN REAL_IMAGE: prints what it saw; true when reached
  local c=$1 real=$2 tr pods bound waiting phase
  tr=$(kubectl -n "$ns" get tr -l tuning.paratune.dev/campaign="$c" -o name 2>/dev/null | head -1)
  [ -n "$tr" ] || { echo "no TrialRun yet"; return 1; }
  local kinds=""
  for k in jobs jobsets.jobset.x-k8s.io trainjobs.trainer.kubeflow.org; do
    [ -n "$(kubectl -n "$ns" get "$k" -l tuning.paratune.dev/campaign="$c" -o name 2>/dev/null)" ] && kinds="$kinds ${k%%.*}"
  done
  [ -n "$kinds" ] || { echo "$tr, no workload yet"; return 1; }
  case "$kinds" in *jobs*) ;; *) echo "$tr,$kinds created (no controller here)"; return 0 ;; esac
  pods=$(kubectl -n "$ns" get pods -l tuning.paratune.dev/campaign="$c" -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{" "}{.status.containerStatuses[0].state.waiting.reason}{"\n"}{end}' 2>/dev/null)
  [ -n "$pods" ] || { echo "$tr,$kinds, no pod yet"; return 1; }
  bound=$(echo "$pods" | awk '$2 != "" {n++} END {print n + 0}')
  [ "$bound" -eq "$(echo "$pods" | wc -l)" ] || { echo "$tr: $bound of $(echo "$pods" | wc -l) pods bound"; return 1; }
  if [ "$real" = 1 ]; then
    waiting=$(echo "$pods" | grep -c ' ErrImagePull$' || true)
    [ "$waiting" -ge 1 ] || { echo "$tr: pods bound, stand-in has not reported them"; return 1; }
    echo "$tr:$kinds, $bound pods bound to $(echo "$pods" | awk '{print $2}' | sort -u | tr '\n' ' ')and left ErrImagePull by the stand-in"
    return 0
  fi
  phase=$(kubectl -n "$ns" get "$tr" -o jsonpath='{.status.phase}')
  case "$phase" in Succeeded|Failed|EarlyStopped) echo "$tr: $bound pods on $(echo "$pods" | awk '{print $2}' | sort -u | tr '\n' ' ')ran, $phase"; return 0 ;; esac
  echo "$tr: $bound pods bound, phase ${phase:-none}"; return 1
}
# What a sample file holds: its campaign's name, the Secret its apiKeySecretRef names ("-":
# none) and 1 when a trial container's command is not `paratune ...` (a real framework image).
sample_facts() {
  python3 - "$1" <<'PY'
import sys, yaml
def containers(o, out):
    if isinstance(o, dict):
        for c in o.get("containers") or [] if isinstance(o.get("containers"), list) else []:
            out.append(((c.get("command") or []) + (c.get("args") or []))[:1])
        for v in o.values():
            containers(v, out)
    elif isinstance(o, list):
        for v in o:
            containers(v, out)
for d in yaml.safe_load_all(open(sys.argv[1])):
    if isinstance(d, dict) and d.get("kind") == "TuningCampaign":
        spec = d.get("spec") or {}
        ref = ((spec.get("agents") or {}).get("llm") or {}).get("apiKeySecretRef") or {}
        cmds = []
        containers(spec.get("trialTemplate") or {}, cmds)
        real = 0 if cmds and all(c and str(c[0]).startswith("paratune") for c in cmds) else 1
        print(d["metadata"]["name"], ref.get("name") or "-", real)
        break
PY
}
for f in "$root"/manifests/samples/*.yaml; do
  read -r c secret real < <(sample_facts "$f") || continue
  [ -n "${c:-}" ] || continue
  case "$covered" in *" $c "*) continue ;; esac
  sed -e 's/maxTrials: [0-9]*/maxTrials: 2/' -e 's/parallelTrials: [0-9]*/parallelTrials: 1/' \
    -e "s|endpoint: http://[^ ]*|endpoint: $llm_endpoint|" "$f" > "$dir/sample-$c.yaml"
  if [ "$secret" != - ]; then
    # As the namespace's administrator would (docs/security.md): the Secret, its opt-in
    # label and the Role letting the operator `get` it by name.
    kubectl -n "$ns" create secret generic "$secret" --from-literal=apiKey=sk-e2e-not-a-real-key >/dev/null 2>&1 || true
    kubectl -n "$ns" label secret "$secret" tuning.paratune.dev/llm-api-key=true --overwrite >/dev/null
    sed -e "s/namespace: team-a/namespace: $ns/" -e "s/resourceNames: \[llm-key\]/resourceNames: [$secret]/" \
      "$root/manifests/examples/llm-api-key-reader.yaml" | kubectl apply -f - >/dev/null
  fi
  kubectl -n "$ns" apply -f "$dir/sample-$c.yaml" >/dev/null
  until=$(( $(date +%s) + ${PARATUNE_E2E_SAMPLE_TIMEOUT:-120} )); seen=""
  while [ "$(date +%s)" -lt "$until" ]; do
    if seen=$(first_trial_ok "$c" "$real"); then break; fi
    sv=$(jp tc "$c" '{.status.conditions[?(@.type=="SpecValid")].status}')
    if [ "$sv" = False ]; then seen="SpecValid=False: $(jp tc "$c" '{.status.conditions[?(@.type=="SpecValid")].message}')"; break; fi
    sleep 2
  done
  if first_trial_ok "$c" "$real" >/dev/null; then
    pass "sample $(basename "$f") ($c) reached its first trial: $seen"
  else
    fail "sample $(basename "$f") ($c) did not reach a first trial: $seen"
  fi
  [ -n "$(echo "$(curl -sf "http://$probe/metrics")" | grep -F "campaign=\"$c\"")" ] ||
    fail "$c: no per-campaign series on /metrics while it exists"
  kubectl -n "$ns" delete tc "$c" --wait=true --timeout=60s >/dev/null
  gone_series() { ! curl -sf "http://$probe/metrics" | grep -qF "campaign=\"$c\""; }
  wait_for 30 "$c's series to leave /metrics once deleted" gone_series && pass "$c deleted: its per-campaign series left /metrics"
done

# 5. RBAC and metrics.
if grep -qE 'PermissionDenied|[Ff]orbidden|HTTP 403' "$dir/operator.log"; then
  fail "the operator hit RBAC denials:"; grep -m5 -E 'PermissionDenied|[Ff]orbidden|HTTP 403' "$dir/operator.log"
else
  pass "no RBAC denial in the operator log (it ran with the chart's ServiceAccount token)"
fi
metrics=$(curl -sf "http://$probe/metrics" || true)
reconciles=$(echo "$metrics" | awk '/^controller_runtime_reconcile_total/ {s += $2} END {print s + 0}')
requests=$(echo "$metrics" | awk '/^rest_client_requests_total/ {s += $2} END {print s + 0}')
[ "${reconciles%.*}" -gt 0 ] && [ "${requests%.*}" -gt 0 ] \
  && pass "/metrics after the restart: $reconciles reconciles, $requests API requests" \
  || fail "/metrics lacks reconcile or request counts"

# 6. Uninstall as `helm uninstall` would: the release's objects, then the CRDs (which takes the
#    campaigns, and through owner references their trials, Jobs, pods and ConfigMaps, with them).
kubectl delete -f "$dir/paratune-objects.yaml" --wait=true --timeout=90s >/dev/null
kill "$(cat "$dir/operator.pid")" 2>/dev/null || true  # its Deployment is gone
kubectl delete -f "$dir/paratune-crds.yaml" --wait=true --timeout=90s >/dev/null
leftovers() {
  { kubectl get crd -o name | grep tuning.paratune.dev || true
    kubectl get namespace "$opns" -o name 2>/dev/null || true
    kubectl get clusterroles,clusterrolebindings -l app.kubernetes.io/name=paratune -o name
    kubectl get jobs,pods,services,configmaps -A -l tuning.paratune.dev/campaign -o name
    kubectl -n "$ns" get configmaps -o name | grep -v kube-root-ca.crt || true
  } 2>/dev/null
}
gone() { [ -z "$(leftovers)" ]; }
# The published best configurations are not owned by their campaigns (GitOps promotion reads
# them; the samples leave spec.output.deleteWithCampaign false): they must outlive the
# uninstall, and the user removes them when done.
published() { kubectl -n "$ns" get configmaps -o name 2>/dev/null | grep -- '-best$' || true; }
only_published_left() { [ -z "$(leftovers | grep -v -- '-best$')" ]; }
if wait_for 90 "the uninstall to remove everything but the published configurations" \
    only_published_left; then
  kept=$(published | tr '\n' ' ')
  [ -n "$kept" ] && pass "published configurations outlive their campaigns: $kept" \
    || fail "no published ConfigMap survived the uninstall"
  [ -n "$kept" ] && kubectl -n "$ns" delete $kept >/dev/null
fi
if wait_for 90 "the uninstall to remove everything" gone; then
  pass "uninstalled: no CRD, namespace, RBAC, trial Job, pod or ConfigMap of ours left"
else
  fail "left after uninstall: $(leftovers | tr '\n' ' ')"
fi

say "done: $failures failure(s)"
[ "$failures" -eq 0 ]
