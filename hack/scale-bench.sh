#!/usr/bin/env bash
# Scale benchmark (issues 8 and 17): for each size N in PARATUNE_SCALE_CAMPAIGNS (default
# "200 1000"), N simulated campaigns with parallelTrials 2 on a fresh private local control plane
# (its own state dir and free ports; hack/local-cluster.sh) with PARATUNE_SCALE_GPU_NODES
# simulated GPU nodes (default 32). The operator is installed from the chart (CRDs, RBAC,
# ServiceAccount, FlowSchema) and runs as a local process with the rendered Deployment's
# arguments under the ServiceAccount's token, as in hack/e2e.sh. Measured per size:
#   - per campaign, from its creationTimestamp to its first trial Job's, and to its second
#     (the first round): p50, p99, max (server timestamps, 1 s resolution);
#   - from the start of `kubectl apply` to every campaign's first Job and to all 2N first-round
#     Jobs (a watch on the Jobs, each event stamped on arrival);
#   - operator RSS (now and peak) and CPU seconds; over the same interval the CPU seconds of
#     kube-apiserver, etcd, kube-controller-manager, kube-scheduler, paratune-kubelet-sim with the
#     trial processes it starts, `kubectl apply`, and every core's busy time, from /proc;
#   - whether the operator saw the server's priority and fairness, and the seconds its requests
#     waited in the client-side bucket (its /metrics);
#   - API requests per trial, by verb and resource, for the first round (from the operator's
#     start until all 2N first-round Jobs exist, divided by the 2N first-round trials; /metrics
#     scraped the moment the poll sees the last of them) and overall (once every campaign has
#     finished or PARATUNE_SCALE_SETTLE seconds later, divided by the TrialRuns then);
#     reconcile p50/p99 per controller and reconcile errors, from the operator's /metrics;
#   - every client's requests over the first round as the API server counted them
#     (apiserver_request_total before the apply and when the last first-round Job appears), the
#     operator's beside them: the control plane's own work per trial (Pods, bindings, the
#     garbage collector's owner lookups, kubelet status, Events) is what the operator's share is
#     of.
# Prints a Markdown "## Scale" section on stdout (progress on stderr) and tears everything down.
# Usage: hack/scale-bench.sh BUILD_DIR. Exit 0 when measured, 1 otherwise (also when a size
# could only be measured in part: its part says what was measured and what failed).
# Trials are paced like short measurement runs (PARATUNE_SCALE_TRIAL_PACE seconds per progress
# line of trial-sim's log; default 9 up to 200 campaigns, 60 above: about 10 lines, so 90 s or
# 10 min a trial; at 1,000 campaigns kubectl alone takes minutes to create them). Unpaced simulated
# trials end in ~3 s, and their campaigns' later rounds then compete with other campaigns' first
# round for the API server and the 2 cores: the first round's figures measured that churn, not
# the cost of launching a round (pace 0.3 gives the unpaced runs of earlier sections). The
# campaigns' trialTimeout is twice a paced trial's length (at least the sample's 5m), so a long
# pace that keeps later rounds out of the first does not time its trials out.
# Env: PARATUNE_SCALE_CAMPAIGNS ("200 1000"), PARATUNE_SCALE_GPU_NODES (32),
# PARATUNE_SIM_NODE_FAULTS (sick simulated nodes, as hack/local-cluster.sh; unset: none),
# PARATUNE_SCALE_TIMEOUT (seconds from the start of apply to wait for the first round; 600 up
# to 200 campaigns, 1500 above), PARATUNE_SCALE_SETTLE (seconds to wait after it for every
# campaign to finish; 420, 30 above 200), PARATUNE_SCALE_TRIAL_PACE (9 up to 200 campaigns, 60
# above),
# PARATUNE_KUBE_BIN (default
# hack/build-kube.sh).
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
sizes=${PARATUNE_SCALE_CAMPAIGNS:-200 1000}
gpu_nodes=${PARATUNE_SCALE_GPU_NODES:-32}
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
# Lists are read in pages of 100 (--chunk-size): at 1,000 campaigns a single LIST of them timed
# out at the API server's 60 s five times in a row on a saturated machine.
retry() {  # retry CMD...: a busy API server times a request out now and then; try 5 times
  local i
  for i in 1 2 3 4 5; do "$@" && return 0; sleep 3; done
  return 1
}
cpu_of() {  # cpu_of PID: user+system CPU seconds of a process (0 when it is gone)
  awk -v hz="$(getconf CLK_TCK)" '{print ($14 + $15) / hz}' "/proc/$1/stat" 2>/dev/null || echo 0
}
# cpu_tree_of PID: CPU seconds of a process, its children that ended and those still running
# (paratune-kubelet-sim and the trial processes it starts).
cpu_tree_of() {
  python3 - "$1" <<'PY'
import glob, os, sys
hz, root, total = os.sysconf("SC_CLK_TCK"), sys.argv[1], 0
for path in glob.glob("/proc/[0-9]*/stat"):
    try:
        pid, rest = open(path).read().split(" ", 1)
    except OSError:
        continue  # ended meanwhile
    f = rest[rest.rindex(")") + 2:].split()  # the fields after the command name
    if pid == root:
        total += sum(int(x) for x in f[11:15])  # utime stime cutime cstime
    elif f[1] == root:
        total += sum(int(x) for x in f[11:15])
print(total / hz)
PY
}
machine_cpu() {  # machine_cpu: "BUSY TOTAL" CPU seconds of every core since boot (/proc/stat)
  awk -v hz="$(getconf CLK_TCK)" '/^cpu / {t = 0; for (i = 2; i <= NF; i++) t += $i
    print (t - $5 - $6) / hz, t / hz}' /proc/stat
}
shell_children_cpu() {  # shell_children_cpu VAR: CPU seconds of this shell's ended children
  # (bash `times`, second line), into VAR; `times` runs in this shell, not a subshell.
  times > "$dir/times.txt"
  printf -v "$1" '%s' "$(tail -1 "$dir/times.txt" | awk '{t = 0
    for (i = 1; i <= 2; i++) {split($i, a, /[ms]/); t += a[1] * 60 + a[2]}; print t}')"
}
export PARATUNE_KUBE_BIN PARATUNE_SIM_GPU_NODES=$gpu_nodes
export PARATUNE_CLUSTER_DIR PARATUNE_API_PORT PARATUNE_ETCD_PORT PARATUNE_KUBELET_PORT KUBECONFIG
dir=""
partial_sizes=""  # the sizes measured only in part
cluster() { "$root/hack/local-cluster.sh" "$1" "$build"; }
teardown() {
  [ -n "$dir" ] || return 0
  [ -f "$dir/job-watch.pid" ] && kill -- "-$(cat "$dir/job-watch.pid")" 2>/dev/null || true
  [ -f "$dir/operator.pid" ] && kill "$(cat "$dir/operator.pid")" 2>/dev/null || true
  cluster down >/dev/null 2>&1 || true
  rm -rf "$dir"; dir=""
}
trap teardown EXIT
# A command that fails under `set -e` ends the run: say which (one that prints nothing, as a
# process killed by a signal, would otherwise end it silently).
set -E
trap 'log "failed (exit $?) at line $LINENO: $BASH_COMMAND"' ERR

# measure N: one fresh control plane and operator, N campaigns; prints a "### N campaigns" part.
measure() {
n=$1
# Above 200 campaigns: 10-minute trials, so the first campaigns' later rounds do not run during
# the last campaigns' first round; a longer wait for it (kubectl alone takes minutes); and no
# wait for campaigns of 10-minute trials to finish.
trial_pace=${PARATUNE_SCALE_TRIAL_PACE:-$(( n > 200 ? 60 : 9 ))}
timeout_s=${PARATUNE_SCALE_TIMEOUT:-$(( n > 200 ? 1500 : 600 ))}
settle_s=${PARATUNE_SCALE_SETTLE:-$(( n > 200 ? 30 : 420 ))}
dir=$(mktemp -d /tmp/paratune-scale-XXXXXX)
PARATUNE_CLUSTER_DIR=$dir
PARATUNE_API_PORT=$(free_port); PARATUNE_ETCD_PORT=$(free_port); PARATUNE_KUBELET_PORT=$(free_port)
probe=127.0.0.1:$(free_port)
KUBECONFIG=$dir/kubeconfig
cluster up >&2 || skip "the local control plane did not start"

# Install as hack/e2e.sh does: chart rendering, the ServiceAccount's token, the Deployment's args.
rc=$("$root/hack/render-chart/render.sh" --path)
kube_version=$(kubectl version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
"$rc" template "$root/charts/paratune" --name paratune -n "$opns" --kube-version "$kube_version" \
  --set namespace.create=true --set diagnostics.mode=simulated > "$dir/paratune.yaml"
kubectl apply -f "$dir/paratune.yaml" >/dev/null
kubectl wait --for condition=established --timeout=30s crd/tuningcampaigns.tuning.paratune.dev \
  crd/trialruns.tuning.paratune.dev >/dev/null
flowschema=$(kubectl get flowschema paratune-operator -o name 2>/dev/null || echo "none")
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
python3 - "$root/manifests/samples/simulated-llama3-8b-anywhere.yaml" "$n" "$trial_pace" > "$dir/campaigns.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = re.sub(r"maxTrials: \d+", "maxTrials: 6", text)
text = re.sub(r"parallelTrials: \d+", "parallelTrials: 2", text)
timeout_s = max(300, int(float(sys.argv[3]) * 10 * 2))
text, timeouts = re.subn(r"trialTimeout: \S+", "trialTimeout: %ds" % timeout_s, text)
assert timeouts == 1, "the sample's trialTimeout was not found"
paced = re.sub(r"(\n( +)command: \[paratune, trial-sim\]\n)",
               r'\1\2env: [{name: PARATUNE_SIM_SECONDS_PER_LINE, value: "%s"}]\n' % sys.argv[3], text)
assert paced != text, "the sample's trial-sim container was not found"
text = paced
out = []
for i in range(int(sys.argv[2])):
    t = text.replace("name: llama3-8b-simulated", "name: scale-%04d" % i)
    out.append(t.replace("configMapName: llama3-8b-simulated-best", "configMapName: scale-%04d-best" % i))
print("\n---\n".join(out))
PY
api_pid=$(cat "$dir/kube-apiserver.pid" 2>/dev/null || echo 0)
etcd_pid=$(cat "$dir/etcd.pid" 2>/dev/null || echo 0)
cpu0=$(cpu_of "$op_pid"); api0=$(cpu_of "$api_pid"); etcd0=$(cpu_of "$etcd_pid")
# The rest of the machine over the same interval: the other control-plane processes, the
# simulated kubelet with its trial processes, kubectl, and every core's busy time.
kcm_pid=$(cat "$dir/kube-controller-manager.pid" 2>/dev/null || echo 0)
sched_pid=$(cat "$dir/kube-scheduler.pid" 2>/dev/null || echo 0)
kubelet_pid=$(cat "$dir/kubelet-sim.pid" 2>/dev/null || echo 0)
# kube-controller-manager's and kube-scheduler's pid files name the shell that restarts them
# (hack/local-cluster.sh start_restarting): their CPU is that shell's child's.
kcm0=$(cpu_tree_of "$kcm_pid"); sched0=$(cpu_tree_of "$sched_pid"); kubelet0=$(cpu_tree_of "$kubelet_pid")
read -r busy0 total0 <<<"$(machine_cpu)"
load=$(cut -d' ' -f1-3 /proc/loadavg)
log "applying $n campaigns ($nodes nodes, load $load)"
# The Jobs are followed by one watch, each event stamped as it arrives: the first time a Job's
# name is seen is when it appeared. Polling LISTs instead (every second, all Jobs, in pages that
# bypass the API server's watch cache) was itself a large share of the load at 1,000 campaigns:
# kubectl apply of 1,000 campaigns takes 19 s on an idle control plane of this machine. A watch
# that ends (the server closes watches after a while) is started again; it lists what exists.
stamp='import sys, time
for line in sys.stdin:
    sys.stdout.write("%.3f %s" % (time.time(), line))
    sys.stdout.flush()'
setsid bash -c 'while :; do kubectl -n "$0" get jobs --watch -o "$1"; sleep 1; done | python3 -u -c "$2"' \
  "$ns" 'jsonpath={.metadata.name} {.metadata.labels.tuning\.paratune\.dev/campaign}{"\n"}' "$stamp" \
  > "$dir/job-watch.txt" 2> "$dir/job-watch.err" < /dev/null &
echo $! > "$dir/job-watch.pid"
sleep 1
# Every client's requests as the API server counts them (apiserver_request_total), before and at
# the first round, so that the operator's share of the control plane's work is visible.
kubectl get --raw /metrics > "$dir/api-metrics0.txt" 2>/dev/null || true
t0=$(date +%s.%N)
shell_children_cpu kubectl0
kubectl -n "$ns" apply -f "$dir/campaigns.yaml" >/dev/null
shell_children_cpu kubectl1
kubectl_cpu=$(awk -v a="$kubectl1" -v b="$kubectl0" 'BEGIN {printf "%.1f", a - b}')
t_applied=$(date +%s.%N)
# watched_jobs: "CAMPAIGNS_WITH_ONE CAMPAIGNS_WITH_TWO T_FIRST T_ROUND" from the watch so far,
# the times being when the last campaign got its first Job and its second ("" until then).
watched_jobs() {
  awk -v n="$n" '
    NF >= 3 && !($2 in seen) {
      seen[$2] = 1; k = ++jobs[$3]
      if (k == 1 && ++one == n) t1 = $1
      if (k == 2 && ++two == n) t2 = $1
    }
    END { printf "%d %d %s %s\n", one, two, (t1 == "" ? "-" : t1), (t2 == "" ? "-" : t2) }' \
    "$dir/job-watch.txt"
}
t_first=""; t_round=""; with_one=0; with_two=0
while :; do
  read -r with_one with_two w_first w_round <<<"$(watched_jobs)"
  now=$(date +%s.%N)
  [ "$w_first" != "-" ] && t_first=$w_first
  if [ "$w_round" != "-" ]; then
    t_round=$w_round
    curl -sf "http://$probe/metrics" > "$dir/metrics-round.txt" || true
    break
  fi
  if (( $(awk -v a="$now" -v b="$t0" 'BEGIN {printf "%d", a - b}') > timeout_s )); then
    log "timeout: $with_one campaigns with a Job, $with_two with two"; break
  fi
  sleep 1
done
kill -- "-$(cat "$dir/job-watch.pid")" 2>/dev/null || true
rm -f "$dir/job-watch.pid"
kubectl get --raw /metrics > "$dir/api-metrics1.txt" 2>/dev/null || true
cpu1=$(cpu_of "$op_pid"); api1=$(cpu_of "$api_pid"); etcd1=$(cpu_of "$etcd_pid")
kcm1=$(cpu_tree_of "$kcm_pid"); sched1=$(cpu_tree_of "$sched_pid"); kubelet1=$(cpu_tree_of "$kubelet_pid")
read -r busy1 total1 <<<"$(machine_cpu)"
rss_kib=$(awk '/^VmRSS/ {print $2}' "/proc/$op_pid/status")
hwm_kib=$(awk '/^VmHWM/ {print $2}' "/proc/$op_pid/status")
[ -s "$dir/metrics-round.txt" ] || curl -sf "http://$probe/metrics" > "$dir/metrics-round.txt" ||
  skip "the operator's /metrics did not answer"
# What the poll has measured so far, printed as the size's part when a later LIST of thousands
# of objects times out five times on a saturated API server (as at 1,000 campaigns on 2 cores):
# the figures taken up to here are never lost with the rest.
partial() {  # partial REASON
  local requests elapsed
  requests=$(awk '/^rest_client_requests_total\{/ {s += $NF} END {printf "%d", s}' \
             "$dir/metrics-round.txt")
  elapsed=$(awk -v a="$now" -v b="$t0" 'BEGIN {printf "%.1f", a - b}')
  log "partial figures for $n campaigns: $1"
  partial_sizes+=" $n"
  printf '### %s campaigns (partial: %s)\n\n' "$n" "$1"
  printf '| measure | value |\n|---|---:|\n'
  printf '| campaigns with their first Job / both first-round Jobs, %s s after `kubectl apply` | %s / %s of %s |\n' \
    "$elapsed" "$with_one" "$with_two" "$n"
  printf '| API requests by the operator by then / per first-round Job then existing | %s / %s |\n' \
    "$requests" "$(awk -v r="$requests" -v a="$with_one" -v b="$with_two" \
                   'BEGIN {printf "%.2f", r / ((a + b) > 0 ? a + b : 1)}')"
  printf '| operator RSS / peak RSS | %s / %s MiB |\n' "$((rss_kib / 1024))" "$((hwm_kib / 1024))"
  printf '| operator CPU seconds | %s |\n\n' \
    "$(awk -v a="$cpu1" -v b="$cpu0" 'BEGIN {printf "%.1f", a - b}')"
  kill "$op_pid" 2>/dev/null || true
  teardown
}
retry kubectl -n "$ns" get --chunk-size=100 jobs -o json > "$dir/jobs.json" ||
  { partial "listing the Jobs failed 5 times"; return 0; }
retry kubectl -n "$ns" get --chunk-size=100 tuningcampaigns -o json > "$dir/campaigns.json" ||
  { partial "listing the campaigns failed 5 times"; return 0; }
trials=$(retry kubectl -n "$ns" get --chunk-size=100 trialruns -o name | wc -l) ||
  { partial "listing the TrialRuns failed 5 times"; return 0; }
jobs=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$dir/jobs.json")
events=$(retry kubectl -n "$ns" get --chunk-size=100 events -o name | wc -l) ||
  { partial "listing the Events failed 5 times"; return 0; }
# Overall: until every campaign has finished (or settle_s), then the whole run's requests.
t_settle=$(date +%s)
while :; do
  running=$(retry kubectl -n "$ns" get --chunk-size=100 tuningcampaigns -o jsonpath='{range .items[*]}{.status.phase}{"\n"}{end}' |
            grep -cv -e '^Succeeded$' -e '^Failed$' || true)
  [ "$running" -eq 0 ] && break
  (( $(date +%s) - t_settle > settle_s )) && break
  sleep 5
done
curl -sf "http://$probe/metrics" > "$dir/metrics.txt" || skip "the operator's /metrics did not answer"
trials_all=$(retry kubectl -n "$ns" get --chunk-size=100 trialruns -o name | wc -l) ||
  { partial "listing the TrialRuns after the first round failed 5 times"; return 0; }
events_all=$(retry kubectl -n "$ns" get --chunk-size=100 events -o json | python3 -c 'import json,sys
n = 0
for e in json.load(sys.stdin)["items"]:
    n += (e.get("source", {}).get("component") or e.get("reportingComponent")) == "paratune-operator"
print(n)') || { partial "listing the Events after the first round failed 5 times"; return 0; }
settled_s=$(( $(date +%s) - t_settle ))
# Diagnostic Jobs the operator created (its log names each) and the (node, check) pairs they
# ran: one Job per pair is the aim, whatever the number of campaigns that used a suspect node.
diag=$({ grep -o 'running diagnostic check [^ ]* on suspect node [^ ]*' "$dir/operator.log" || true; } |
       awk '{c++; u[$4 "|" $8] = 1} END {printf "%d %d", c + 0, length(u)}')
[ -n "$t_first" ] || log "not every campaign got a trial Job within ${timeout_s}s ($with_one of $n)"
python3 - "$dir" "$n" "$gpu_nodes" "$nodes" "$t0" "$t_applied" "${t_first:-}" "${t_round:-}" \
  "$cpu0" "$cpu1" "$rss_kib" "$hwm_kib" "$trials" "$jobs" "$(nproc)" "${op_args[*]}" "$events" \
  "$(date +%s.%N)" "$op_start" "$api0" "$api1" "$etcd0" "$etcd1" "$load" "$flowschema" \
  "$trials_all" "$running" "$settled_s" "$events_all" "$trial_pace" "$diag" \
  "${PARATUNE_SIM_NODE_FAULTS:-}" "$kcm0 $kcm1 $sched0 $sched1 $kubelet0 $kubelet1" \
  "$busy0 $total0 $busy1 $total1" "$kubectl_cpu" <<'PY'
import datetime, json, re, sys
(d, n, gpu_nodes, nodes, t0, t_applied, t_first, t_round, cpu0, cpu1, rss, hwm, trials, jobs,
 cores, args, events, t_end, t_start, api0, api1, etcd0, etcd1, load, flowschema, trials_all,
 unfinished, settled_s, events_all, trial_pace, diag, faults, rest_cpu, machine,
 kubectl_cpu) = sys.argv[1:]
kcm0, kcm1, sched0, sched1, kubelet0, kubelet1 = map(float, rest_cpu.split())
busy0, total0, busy1, total1 = map(float, machine.split())
n = int(n)
text = open(d + "/metrics.txt").read()
round_text = open(d + "/metrics-round.txt").read()
def series(name, source=None):
    for line in (text if source is None else source).splitlines():
        m = re.match(r'([a-z_]+)(\{[^}]*\})?\s+(\S+)', line)
        if m and m.group(1) == name:
            yield dict(re.findall(r'(\w+)="([^"]*)"', m.group(2) or "")), float(m.group(3))
def by_verb(source):
    out = {}
    for labels, v in series("rest_client_requests_total", source):
        k = (labels.get("verb", "?"), labels.get("resource", "?"))
        out[k] = out.get(k, 0) + v
    return out
by_kind = by_verb(text)
by_kind_round = by_verb(round_text)
requests = sum(by_kind.values())
requests_round = sum(by_kind_round.values())
reconciles, errors = {}, {}
for labels, v in series("controller_runtime_reconcile_total"):
    c = labels.get("controller", "?")
    reconciles[c] = reconciles.get(c, 0) + v
for labels, v in series("controller_runtime_reconcile_errors_total"):
    errors[labels.get("controller", "?")] = v
def histogram(family):
    out = {}
    for labels, v in series(family + "_bucket"):
        out.setdefault(labels.get("controller", "?"), []).append(
            (float("inf") if labels["le"] == "+Inf" else float(labels["le"]), v))
    return out
buckets = histogram("controller_runtime_reconcile_time_seconds")
compute = histogram("paratune_reconcile_compute_seconds")
api = histogram("paratune_reconcile_api_seconds")
def quantile(bs, q):  # histogram_quantile: linear interpolation inside the bucket
    bs = sorted(bs)
    total = bs[-1][1] if bs else 0
    if total == 0:
        return None
    prev_le, prev_c = 0.0, 0.0
    for le, c in bs:
        if c >= q * total:
            if le == float("inf"):
                return prev_le
            return prev_le + (le - prev_le) * ((q * total - prev_c) / max(c - prev_c, 1e-9))
        prev_le, prev_c = le, c
    return prev_le
def ts(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()
created = {c["metadata"]["name"]: ts(c["metadata"]["creationTimestamp"])
           for c in json.load(open(d + "/campaigns.json"))["items"]}
job_times = {}
for j in json.load(open(d + "/jobs.json"))["items"]:
    c = j["metadata"].get("labels", {}).get("tuning.paratune.dev/campaign")
    if c in created:
        job_times.setdefault(c, []).append(ts(j["metadata"]["creationTimestamp"]))
def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else None
first = [min(v) - created[c] for c, v in job_times.items()]
second = [sorted(v)[1] - created[c] for c, v in job_times.items() if len(v) >= 2]
def dist(xs):
    if len(xs) < n:
        return f"{len(xs)} of {n} campaigns reached it"
    return f"{pct(xs, 0.5):.0f} s / {pct(xs, 0.99):.0f} s / {max(xs):.0f} s"
t0 = float(t0)
trials = int(trials)
print(f"### {n} campaigns\n")
print(f"{n} simulated campaigns (`simulated-llama3-8b-anywhere.yaml`, parallelTrials 2) applied at "
      f"once to a fresh private local control plane (kube-apiserver 1.20.2 with API Priority and "
      f"Fairness, etcd, scheduler, controller-manager; the chart's FlowSchema: {flowschema}) with "
      f"{gpu_nodes} simulated GPU nodes ({nodes} nodes in all, `paratune-kubelet-sim`) on a "
      f"{cores}-core machine shared with the control plane, the trial-sim processes and other "
      f"work (load average {load} when applied). Trials paced at {trial_pace} s per progress "
      f"line of trial-sim's log (about 10 lines a trial). "
      + (f"Sick simulated nodes: `{faults}`. " if faults else "")
      + f"One operator (`{args}`) under the chart's ServiceAccount token.\n")
print("| Figure | Value |")
print("|---|---|")
print(f"| `kubectl apply` of {n} campaigns | {float(t_applied) - t0:.1f} s |")
print(f"| per campaign, created -> first trial Job (p50 / p99 / max) | {dist(first)} |")
print(f"| per campaign, created -> second trial Job (p50 / p99 / max) | {dist(second)} |")
print(f"| start of apply -> every campaign has its first trial Job | "
      f"{(float(t_first) - t0):.1f} s |" if t_first else "| start of apply -> every first Job | not reached |")
print(f"| start of apply -> all {2 * n} first-round Jobs | {(float(t_round) - t0):.1f} s |"
      if t_round else f"| start of apply -> all {2 * n} first-round Jobs | not reached |")
print(f"| TrialRuns / Jobs at that moment | {trials} / {jobs} |")
print(f"| operator RSS at that moment (peak) | {int(rss) / 1024:.0f} MiB ({int(hwm) / 1024:.0f} MiB) |")
print(f"| CPU from apply to that moment: operator / kube-apiserver / etcd | "
      f"{float(cpu1) - float(cpu0):.1f} s / {float(api1) - float(api0):.1f} s / "
      f"{float(etcd1) - float(etcd0):.1f} s |")
print(f"| ... kube-controller-manager / kube-scheduler / paratune-kubelet-sim with its trial "
      f"processes / `kubectl apply` | {kcm1 - kcm0:.1f} s / {sched1 - sched0:.1f} s / "
      f"{kubelet1 - kubelet0:.1f} s / {float(kubectl_cpu):.1f} s |")
print(f"| ... every core of the machine: busy / available | {busy1 - busy0:.1f} s / "
      f"{total1 - total0:.1f} s ({100 * (busy1 - busy0) / max(total1 - total0, 1e-9):.0f}% busy) |")
print(f"| API requests by the operator until all first-round Jobs exist | {requests_round:.0f} |")
print(f"| API requests per first-round trial ({2 * n} trials) | {requests_round / (2 * n):.2f} |")
print(f"| ... per TrialRun existing at that moment ({trials}; more than {2 * n} when trials "
      f"ended and later rounds began) | {requests_round / max(trials, 1):.2f} |")
trials_all = int(trials_all)
print(f"| overall: campaigns finished / TrialRuns, {int(settled_s)} s after the first round | "
      f"{n - int(unfinished)} of {n} / {trials_all} |")
print(f"| overall: API requests / per TrialRun | {requests:.0f} / "
      f"{requests / max(trials_all, 1):.2f} |")
diag_jobs, diag_pairs = diag.split()
print(f"| overall: diagnostic Jobs created / (suspect node, check) pairs they ran | "
      f"{diag_jobs} / {diag_pairs} |")
print(f"| mean API request rate since the operator started | "
      f"{requests / (float(t_end) - float(t_start)):.1f}/s |")
apf = sum(v for _, v in series("paratune_rest_client_server_flow_control"))
bucket_s = sum(v for _, v in series("paratune_rest_client_rate_limiter_wait_seconds_total"))
print(f"| the API server's priority and fairness, as the operator saw it / seconds its requests "
      f"waited in the client-side bucket | {'on' if apf >= 1 else 'not seen'} / {bucket_s:.1f} s |")
print(f"| Events in the campaigns' namespace at the first round (all components) | {events} |")
print(f"| overall: the operator's Events / per TrialRun | {int(events_all)} / "
      f"{int(events_all) / max(trials_all, 1):.2f} |")
for c in sorted(buckets):
    p50, p99 = quantile(buckets[c], 0.5), quantile(buckets[c], 0.99)
    if p99 is not None:
        print(f"| reconcile p50 / p99, {c} ({reconciles.get(c, 0):.0f} reconciles, "
              f"{errors.get(c, 0):.0f} errors) | {p50 * 1000:.1f} ms / {p99 * 1000:.1f} ms |")
    for what, h in (("its own work (planning for tuningcampaign)", compute), ("API waits", api)):
        if c in h and quantile(h[c], 0.99) is not None:
            print(f"| ... of which {what}, p50 / p99 | {quantile(h[c], 0.5) * 1000:.1f} ms / "
                  f"{quantile(h[c], 0.99) * 1000:.1f} ms |")
def total(name, source=None):
    return sum(v for _, v in series(name, source))
print(f"| the campaigns' planning, first round / overall: performance models and search spaces "
      f"built / reconciles that planned from the operator's cache | "
      f"{total('paratune_planning_cache_builds_total', round_text):.0f} / "
      f"{total('paratune_planning_cache_hits_total', round_text):.0f}, "
      f"{total('paratune_planning_cache_builds_total'):.0f} / "
      f"{total('paratune_planning_cache_hits_total'):.0f} |")
print(f"| ... the cache's search spaces at the end (approximate) | "
      f"{total('paratune_planning_cache_bytes') / 1024:.0f} KiB |")
print("\nRequests by verb and resource: first round (from the operator's start until all "
      f"{2 * n} first-round Jobs exist, per first-round trial) and overall (until "
      f"{n - int(unfinished)} of {n} campaigns finished, per TrialRun of the {trials_all}):\n")
print("| verb | resource | first round | per first-round trial | overall | per TrialRun |")
print("|---|---|---:|---:|---:|---:|")
for (verb, res), v in sorted(by_kind.items(), key=lambda kv: -kv[1]):
    r = by_kind_round.get((verb, res), 0)
    print(f"| {verb} | {res} | {r:.0f} | {r / (2 * n):.2f} | {v:.0f} | "
          f"{v / max(trials_all, 1):.2f} |")
print()
# Every client's requests, as the API server counted them from just before the apply to the
# moment all first-round Jobs existed: the control plane's own work (the Job controller's Pods,
# the scheduler's bindings, the kubelet's status, everyone's Events) beside the operator's.
def served(path):
    try:
        source = open(path).read()
    except OSError:
        return None
    out = {}
    for labels, v in series("apiserver_request_total", source):
        res = labels.get("resource", "?")
        if labels.get("group"):
            res += "." + labels["group"]
        if labels.get("subresource"):
            res += "/" + labels["subresource"]
        k = (labels.get("verb", "?"), res)
        out[k] = out.get(k, 0) + v
    return out
served0, served1 = served(d + "/api-metrics0.txt"), served(d + "/api-metrics1.txt")
if served0 is not None and served1:
    delta = {k: v - served0.get(k, 0) for k, v in served1.items()}
    delta = {k: v for k, v in delta.items() if v >= 1}
    total = sum(delta.values())
    ours = sum(min(by_kind_round.get(k, 0), v) for k, v in delta.items())
    print(f"Requests the API server served from the start of the apply until all {2 * n} "
          f"first-round Jobs existed, every client: {total:.0f} ({total / (2 * n):.2f} per "
          f"first-round trial); the operator's {ours:.0f} of them ({100 * ours / max(total, 1):.0f}%; "
          f"its requests before the apply are not in either figure). The largest:\n")
    print("| verb | resource | every client | per first-round trial | the operator |")
    print("|---|---|---:|---:|---:|")
    for (verb, res), v in sorted(delta.items(), key=lambda kv: -kv[1])[:14]:
        print(f"| {verb} | {res} | {v:.0f} | {v / (2 * n):.2f} | "
              f"{min(by_kind_round.get((verb, res), 0), v):.0f} |")
    print()
# Where reconciles wait: the operator's request latency by verb and resource (all codes), the
# whole run; watches are long polls by design and left out.
latency = {}
for labels, v in series("rest_client_request_duration_seconds_bucket"):
    k = (labels.get("verb", "?"), labels.get("resource", "?"))
    le = float("inf") if labels["le"] == "+Inf" else float(labels["le"])
    latency.setdefault(k, {})
    latency[k][le] = latency[k].get(le, 0) + v
rows = []
for k, bs in latency.items():
    bs = sorted(bs.items())
    if k[0] == "WATCH" or not bs or bs[-1][1] < 10:
        continue
    rows.append((quantile(bs, 0.99), k, bs[-1][1], quantile(bs, 0.5)))
if rows:
    print("Request latency by verb and resource (the whole run; 10 requests or more, slowest p99 "
          "first):\n")
    print("| verb | resource | requests | p50 | p99 |")
    print("|---|---|---:|---:|---:|")
    for p99, (verb, res), count, p50 in sorted(rows, key=lambda r: -r[0]):
        print(f"| {verb} | {res} | {count:.0f} | {p50 * 1000:.1f} ms | {p99 * 1000:.1f} ms |")
    print()
PY
kill "$op_pid" 2>/dev/null || true
teardown
}

echo "## Scale"
echo
for n in $sizes; do measure "$n"; done
echo "From \`hack/scale-bench.sh\` (run by \`make bench\` through \`controllers_scale_bench\`); reconcile"
echo "p50/p99 interpolated within the operator's histogram buckets (whole run, to the overall"
echo "snapshot); RSS and CPU at the first round; per-campaign times from the API server's"
echo "creationTimestamps (1 s resolution)."
[ -z "$partial_sizes" ] || { log "measured only in part:$partial_sizes campaigns"; exit 1; }
