#!/usr/bin/env bash
# Scale benchmark (issue 8): N simulated campaigns (default 200) with parallelTrials 2 on a
# private local control plane (its own state dir and free ports; hack/local-cluster.sh) with
# PARATUNE_SCALE_GPU_NODES simulated GPU nodes (default 32). The operator is installed from the
# chart (CRDs, RBAC, ServiceAccount) and runs as a local process with the rendered Deployment's
# arguments under the ServiceAccount's token, as in hack/e2e.sh. Measured:
#   - time from `kubectl apply` of all campaigns to every campaign's first trial Job, and to
#     every campaign's two first-round Jobs (2N);
#   - operator RSS (now and peak) and CPU seconds, from /proc;
#   - API requests per trial (rest_client_requests_total / TrialRuns) and reconcile p99 per
#     controller (controller_runtime_reconcile_time_seconds histogram), from its /metrics.
# Prints a Markdown "## Scale" section on stdout (progress on stderr) and tears everything down.
# Usage: hack/scale-bench.sh BUILD_DIR. Exit 0 when measured, 1 otherwise.
# Env: PARATUNE_SCALE_CAMPAIGNS (200), PARATUNE_SCALE_GPU_NODES (32), PARATUNE_SCALE_TIMEOUT
# (seconds to wait for the first round, 480), PARATUNE_KUBE_BIN (default hack/build-kube.sh).
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
n=${PARATUNE_SCALE_CAMPAIGNS:-200}
gpu_nodes=${PARATUNE_SCALE_GPU_NODES:-32}
timeout_s=${PARATUNE_SCALE_TIMEOUT:-480}
opns=paratune-system
ns=scale

log() { echo "scale-bench: $*" >&2; }
skip() {  # skip REASON: the section says why nothing was measured
  printf '## Scale\n\nNot measured: %s\n' "$1"
  exit 1
}
for b in paratune paratune-operator paratune-kubelet-sim; do
  [ -x "$build/bin/$b" ] || skip "$build/bin/$b is not built"
done
command -v kubectl >/dev/null || skip "kubectl is not installed"
PARATUNE_KUBE_BIN=${PARATUNE_KUBE_BIN:-$("$root/hack/build-kube.sh" 2>/dev/null | tail -1)} ||
  skip "no kube-apiserver binaries (hack/build-kube.sh failed)"
[ -x "$PARATUNE_KUBE_BIN/kube-apiserver" ] || skip "no kube-apiserver in $PARATUNE_KUBE_BIN"
free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
dir=$(mktemp -d /tmp/paratune-scale-XXXXXX)
export PARATUNE_KUBE_BIN PARATUNE_CLUSTER_DIR=$dir PARATUNE_SIM_GPU_NODES=$gpu_nodes
export PARATUNE_API_PORT PARATUNE_ETCD_PORT PARATUNE_KUBELET_PORT
PARATUNE_API_PORT=$(free_port); PARATUNE_ETCD_PORT=$(free_port); PARATUNE_KUBELET_PORT=$(free_port)
probe=127.0.0.1:$(free_port)
export KUBECONFIG=$dir/kubeconfig
cluster() { "$root/hack/local-cluster.sh" "$1" "$build"; }
teardown() { cluster down >/dev/null 2>&1 || true; rm -rf "$dir"; }
trap teardown EXIT
cluster up >&2 || skip "the local control plane did not start"

# Install as hack/e2e.sh does: chart rendering, the ServiceAccount's token, the Deployment's args.
rc=$("$root/hack/render-chart/render.sh" --path)
kube_version=$(kubectl version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
"$rc" template "$root/charts/paratune" --name paratune -n "$opns" --kube-version "$kube_version" \
  --set namespace.create=true --set diagnostics.mode=simulated > "$dir/paratune.yaml"
kubectl apply -f "$dir/paratune.yaml" >/dev/null
kubectl wait --for condition=established --timeout=30s crd/tuningcampaigns.tuning.paratune.dev \
  crd/trialruns.tuning.paratune.dev >/dev/null
token=""
for _ in $(seq 150); do
  s=$(kubectl -n "$opns" get serviceaccount paratune-operator -o jsonpath='{.secrets[0].name}' 2>/dev/null || true)
  [ -n "$s" ] && token=$(kubectl -n "$opns" get secret "$s" -o jsonpath='{.data.token}' | base64 -d) && break
  sleep 0.2
done
[ -n "$token" ] || skip "the ServiceAccount paratune-operator got no token"
cat > "$dir/sa.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: $(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
    server: $(kubectl config view --raw -o jsonpath='{.clusters[0].cluster.server}')
  name: local
contexts:
- context: {cluster: local, user: paratune-operator}
  name: local
current-context: local
users:
- name: paratune-operator
  user: {token: $token}
KC
mapfile -t op_args < <("$rc" get "$dir/paratune.yaml" Deployment/paratune-operator \
  '.spec.template.spec.containers[0].args' | python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)))')
POD_NAMESPACE=$opns setsid "$build/bin/paratune-operator" "${op_args[@]}" --kubeconfig "$dir/sa.kubeconfig" \
  --metrics-bind-address=0 --health-probe-bind-address="$probe" > "$dir/operator.log" 2>&1 < /dev/null &
op_pid=$!
op_start=$(date +%s.%N)
echo "$op_pid" > "$dir/operator.pid"
for _ in $(seq 150); do curl -sf "http://$probe/readyz" >/dev/null 2>&1 && break; sleep 0.2; done
curl -sf "http://$probe/readyz" >/dev/null 2>&1 || skip "the operator did not become ready"
kubectl create namespace "$ns" >/dev/null
for _ in $(seq 50); do kubectl -n "$ns" get serviceaccount default >/dev/null 2>&1 && break; sleep 0.2; done
nodes=$(kubectl get nodes -o name | wc -l)

# N copies of the simulated sample: parallelTrials 2, enough budget that the first round is
# never the last.
python3 - "$root/manifests/samples/simulated-llama3-8b-anywhere.yaml" "$n" > "$dir/campaigns.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = re.sub(r"maxTrials: \d+", "maxTrials: 6", text)
text = re.sub(r"parallelTrials: \d+", "parallelTrials: 2", text)
out = []
for i in range(int(sys.argv[2])):
    t = text.replace("name: llama3-8b-simulated", "name: scale-%03d" % i)
    out.append(t.replace("configMapName: llama3-8b-simulated-best", "configMapName: scale-%03d-best" % i))
print("\n---\n".join(out))
PY
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$op_pid/stat"; }
cpu0=$(cpu_s)
log "applying $n campaigns ($nodes nodes)"
t0=$(date +%s.%N)
kubectl -n "$ns" apply -f "$dir/campaigns.yaml" >/dev/null
t_applied=$(date +%s.%N)
# Jobs per campaign, by label, until every campaign has its first, then its two first-round Jobs.
t_first=""; t_round=""
while :; do
  counts=$(kubectl -n "$ns" get jobs -o jsonpath='{range .items[*]}{.metadata.labels.tuning\.paratune\.dev/campaign}{"\n"}{end}' |
           sort | uniq -c | awk -v n="$n" '{c++; if ($1 >= 2) r++} END {print c + 0, r + 0}')
  now=$(date +%s.%N)
  read -r with_one with_two <<<"$counts"
  [ -z "$t_first" ] && [ "$with_one" -ge "$n" ] && t_first=$now
  if [ "$with_two" -ge "$n" ]; then t_round=$now; break; fi
  if (( $(awk -v a="$now" -v b="$t0" 'BEGIN {printf "%d", a - b}') > timeout_s )); then
    log "timeout: $with_one campaigns with a Job, $with_two with two"; break
  fi
  sleep 0.5
done
cpu1=$(cpu_s)
rss_kib=$(awk '/^VmRSS/ {print $2}' "/proc/$op_pid/status")
hwm_kib=$(awk '/^VmHWM/ {print $2}' "/proc/$op_pid/status")
curl -sf "http://$probe/metrics" > "$dir/metrics.txt" || skip "the operator's /metrics did not answer"
trials=$(kubectl -n "$ns" get trialruns -o name | wc -l)
jobs=$(kubectl -n "$ns" get jobs -o name | wc -l)
events=$(kubectl -n "$ns" get events -o name | wc -l)
[ -n "$t_first" ] || skip "not every campaign got a trial Job within ${timeout_s}s ($with_one of $n)"

python3 - "$dir/metrics.txt" "$n" "$gpu_nodes" "$nodes" "$t0" "$t_applied" "$t_first" "${t_round:-}" \
  "$cpu0" "$cpu1" "$rss_kib" "$hwm_kib" "$trials" "$jobs" "$(nproc)" "${op_args[*]}" "$events" \
  "$(date +%s.%N)" "$op_start" <<'PY'
import re, sys
(metrics, n, gpu_nodes, nodes, t0, t_applied, t_first, t_round, cpu0, cpu1, rss, hwm, trials,
 jobs, cores, args, events, t_end, t_start) = sys.argv[1:]
text = open(metrics).read()
def series(name):
    for line in text.splitlines():
        if line.startswith(name):
            m = re.match(r'([a-z_]+)(\{[^}]*\})?\s+(\S+)', line)
            if m and m.group(1) == name:
                yield dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or "")), float(m.group(3))
requests = sum(v for _, v in series("rest_client_requests_total"))
by_verb = {}
for labels, v in series("rest_client_requests_total"):
    by_verb[labels.get("verb", "?")] = by_verb.get(labels.get("verb", "?"), 0) + v
reconciles = {}
for labels, v in series("controller_runtime_reconcile_total"):
    c = labels.get("controller", "?")
    reconciles[c] = reconciles.get(c, 0) + v
buckets = {}
for labels, v in series("controller_runtime_reconcile_time_seconds_bucket"):
    buckets.setdefault(labels.get("controller", "?"), []).append(
        (float("inf") if labels["le"] == "+Inf" else float(labels["le"]), v))
def quantile(bs, q):  # the upper bound of the bucket holding the q-quantile (Prometheus-style)
    bs = sorted(bs)
    total = bs[-1][1] if bs else 0
    if total == 0:
        return None
    prev_le, prev_c = 0.0, 0.0
    for le, c in bs:
        if c >= q * total:
            if le == float("inf"):
                return prev_le
            # linear interpolation inside the bucket, as histogram_quantile does
            return prev_le + (le - prev_le) * ((q * total - prev_c) / max(c - prev_c, 1e-9))
        prev_le, prev_c = le, c
    return prev_le
t0 = float(t0)
first = float(t_first) - t0
rnd = float(t_round) - t0 if t_round else None
trials = int(trials)
print("## Scale\n")
print(f"{n} simulated campaigns (`simulated-llama3-8b-anywhere.yaml`, parallelTrials 2) applied at "
      f"once to a private local control plane (kube-apiserver 1.20.2, etcd, scheduler, "
      f"controller-manager) with {gpu_nodes} simulated GPU nodes ({nodes} nodes in all, "
      f"`paratune-kubelet-sim`) on a {cores}-core machine shared with the control plane and the "
      f"trial-sim processes. One operator (`{args}`) under the chart's ServiceAccount token.\n")
print("| Figure | Value |")
print("|---|---|")
print(f"| `kubectl apply` of {n} campaigns | {float(t_applied) - t0:.1f} s |")
print(f"| apply -> every campaign has its first trial Job | {first:.1f} s |")
if rnd is not None:
    print(f"| apply -> all {2 * int(n)} first-round Jobs (2 per campaign) | {rnd:.1f} s |")
else:
    print(f"| apply -> all {2 * int(n)} first-round Jobs | not reached |")
print(f"| TrialRuns / Jobs at that moment | {trials} / {jobs} |")
print(f"| operator RSS at that moment (peak) | {int(rss) / 1024:.0f} MiB ({int(hwm) / 1024:.0f} MiB) |")
print(f"| operator CPU from apply to the last first-round Job | {float(cpu1) - float(cpu0):.1f} s |")
print(f"| API requests by the operator (all, since start) | {requests:.0f} "
      f"({', '.join(f'{k} {v:.0f}' for k, v in sorted(by_verb.items()))}) |")
if trials:
    print(f"| API requests per trial | {requests / trials:.1f} |")
print(f"| mean API request rate since the operator started | "
      f"{requests / (float(t_end) - float(t_start)):.1f}/s (client limit: 20 QPS, burst 30) |")
print(f"| Events in the campaigns' namespace | {events} |")
for c in sorted(buckets):
    p50, p99 = quantile(buckets[c], 0.5), quantile(buckets[c], 0.99)
    if p99 is not None:
        print(f"| reconcile p50 / p99, {c} ({reconciles.get(c, 0):.0f} reconciles) | "
              f"{p50 * 1000:.1f} ms / {p99 * 1000:.1f} ms |")
print("\nFrom `hack/scale-bench.sh` (run by `make bench` through `controllers_scale_bench`); "
      "p50/p99 interpolated within the operator's histogram buckets.")
PY
