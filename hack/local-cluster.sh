#!/usr/bin/env bash
# The local control plane of contract section 9: etcd, kube-apiserver (RBAC), kube-controller-manager,
# kube-scheduler and paratune-kubelet-sim on loopback.
#   hack/local-cluster.sh up|down|deploy|status|restart-apiserver [BUILD_DIR]
# Environment (so tests can run their own instance beside the default one):
#   PARATUNE_CLUSTER_DIR  state dir (default BUILD_DIR/local-cluster): certs, tokens, logs, pids
#   PARATUNE_API_PORT     kube-apiserver secure port (default 6443)
#   PARATUNE_ETCD_PORT    etcd client port (default 2379; peer port is this + 1)
#   PARATUNE_KUBELET_PORT paratune-kubelet-sim's HTTPS port for pod logs (default 10250)
#   PARATUNE_KUBE_BIN     directory holding kube-apiserver & co (default: hack/build-kube.sh)
#   PARATUNE_NO_KUBELET=1 do not start paratune-kubelet-sim
#   PARATUNE_SIM_GPU_NODES / PARATUNE_SIM_TPU_HOSTS  simulated pool sizes (default 4 / 4)
#   PARATUNE_SIM_NODE_FAULTS  sick simulated nodes, passed to paratune-kubelet-sim --node-faults
#                         (e.g. "paratune-gpu-2=throttle:0.5;paratune-gpu-1=flaky:0.4"; default none)
# Credentials written to the state dir: kubeconfig (admin, system:masters), operator.kubeconfig
# (system:serviceaccount:paratune-system:paratune-operator: only what RBAC grants it).
set -euo pipefail
cmd=${1:-up}
build=${2:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
case "$build" in /*) ;; *) build="$root/$build" ;; esac
dir=${PARATUNE_CLUSTER_DIR:-$build/local-cluster}
api_port=${PARATUNE_API_PORT:-6443}
etcd_port=${PARATUNE_ETCD_PORT:-2379}
kubelet_port=${PARATUNE_KUBELET_PORT:-10250}
server="https://127.0.0.1:$api_port"

log() { echo "local-cluster: $*" >&2; }

stop_pid() {  # stop_pid NAME: SIGTERM the recorded pid, SIGKILL after 10 s.
  local f="$dir/$1.pid"
  [ -f "$f" ] || return 0
  local pid; pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$f"
}

gen_certs() {
  local c="$dir/pki"
  [ -f "$c/apiserver.crt" ] && return 0
  mkdir -p "$c"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=paratune-local-ca" \
    -keyout "$c/ca.key" -out "$c/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
    -keyout "$c/apiserver.key" -out "$c/apiserver.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\n' > "$c/san.ext"
  openssl x509 -req -in "$c/apiserver.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" -CAcreateserial \
    -days 3650 -extfile "$c/san.ext" -out "$c/apiserver.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=paratune-kubelet-sim" \
    -keyout "$c/kubelet.key" -out "$c/kubelet.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' > "$c/kubelet.ext"
  openssl x509 -req -in "$c/kubelet.csr" -CA "$c/ca.crt" -CAkey "$c/ca.key" -CAcreateserial \
    -days 3650 -extfile "$c/kubelet.ext" -out "$c/kubelet.crt" 2>/dev/null
  openssl genrsa -out "$c/sa.key" 2048 2>/dev/null
  openssl rsa -in "$c/sa.key" -pubout -out "$c/sa.pub" 2>/dev/null
}

gen_tokens() {
  [ -f "$dir/tokens.csv" ] && return 0
  local t; t() { openssl rand -hex 16; }
  {
    echo "$(t),admin,admin,\"system:masters\""
    echo "$(t),system:kube-controller-manager,kcm,\"system:masters\""
    echo "$(t),system:kube-scheduler,sched,\"\""
    echo "$(t),paratune-kubelet-sim,kubelet-sim,\"system:masters\""
    echo "$(t),system:serviceaccount:paratune-system:paratune-operator,operator,\"system:serviceaccounts,system:serviceaccounts:paratune-system,system:authenticated\""
    echo "$(t),paratune-test-nobody,nobody,\"system:authenticated\""
    # An operator identity with no cluster-wide rights (tests grant it Roles per namespace).
    echo "$(t),system:serviceaccount:paratune-scoped:paratune-operator,scoped-operator,\"system:serviceaccounts,system:authenticated\""
  } > "$dir/tokens.csv"
  chmod 600 "$dir/tokens.csv"
}

token_of() { grep ",$1," "$dir/tokens.csv" | head -1 | cut -d, -f1; }

write_kubeconfig() {  # write_kubeconfig FILE USER
  local ca; ca=$(base64 -w0 < "$dir/pki/ca.crt")
  cat > "$1" <<KC
apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: $ca
    server: $server
  name: paratune-local
contexts:
- context:
    cluster: paratune-local
    user: $2
    namespace: default
  name: paratune-local
current-context: paratune-local
users:
- name: $2
  user:
    token: $(token_of "$2")
KC
  chmod 600 "$1"
}

kube_bin() {
  if [ -n "${PARATUNE_KUBE_BIN:-}" ]; then echo "$PARATUNE_KUBE_BIN"; else "$root/hack/build-kube.sh" | tail -1; fi
}

wait_ready() {  # wait_ready URL TOKEN SECONDS
  local deadline=$(( $(date +%s) + $3 ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    if curl -sk --max-time 2 -H "Authorization: Bearer $2" "$1" 2>/dev/null | grep -q '^ok'; then return 0; fi
    sleep 0.2
  done
  return 1
}

start_bg() {  # start_bg NAME CMD...: runs CMD detached, log in NAME.log, pid in NAME.pid
  local name=$1; shift
  setsid "$@" > "$dir/$name.log" 2>&1 < /dev/null &
  echo $! > "$dir/$name.pid"
}

# start_restarting NAME CMD...: as start_bg, but CMD is started again a second after it exits, as
# a kubelet restarts a static pod of the control plane or systemd a unit. NAME.pid is the
# supervising shell's; SIGTERM to it stops CMD and the shell. Each restart is logged in NAME.log.
start_restarting() {
  local name=$1; shift
  setsid bash -c 'child=
    trap "[ -n \"\$child\" ] && kill \$child 2>/dev/null; wait; exit 0" TERM INT
    while :; do
      "$@" & child=$!
      wait $child; rc=$?
      echo "local-cluster: exited with status $rc; started again in 1 s" >&2
      sleep 1
    done' restarting "$@" > "$dir/$name.log" 2>&1 < /dev/null &
  echo $! > "$dir/$name.pid"
}

start_etcd() {
  start_bg etcd etcd --name paratune --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((etcd_port + 1))" \
    --initial-cluster "paratune=http://127.0.0.1:$((etcd_port + 1))" \
    --unsafe-no-fsync --quota-backend-bytes 1073741824
}

start_apiserver() {
  local bin=$1 p="$dir/pki"
  start_bg kube-apiserver "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_port" --etcd-prefix /paratune \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" --insecure-port 0 \
    --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" --client-ca-file "$p/ca.crt" \
    --token-auth-file "$dir/tokens.csv" --authorization-mode Node,RBAC \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --service-account-issuer https://kubernetes.default.svc --api-audiences https://kubernetes.default.svc \
    --service-cluster-ip-range 10.0.0.0/24 --allow-privileged --cert-dir "$dir/pki" \
    --kubelet-preferred-address-types InternalIP \
    --profiling=false --logtostderr -v 1
}

start_controllers() {
  local bin=$1 p="$dir/pki"
  write_kubeconfig "$dir/kcm.kubeconfig" system:kube-controller-manager
  write_kubeconfig "$dir/scheduler.kubeconfig" system:kube-scheduler
  # Restarted when they exit: kube-controller-manager 1.20 can die on a nil-pointer race in its
  # node lifecycle controller (doNoExecuteTaintingPass), and every later test would lose its Jobs.
  start_restarting kube-controller-manager "$bin/kube-controller-manager" \
    --kubeconfig "$dir/kcm.kubeconfig" --authentication-kubeconfig "$dir/kcm.kubeconfig" \
    --authorization-kubeconfig "$dir/kcm.kubeconfig" --leader-elect=false --port 0 --secure-port 0 \
    --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
    --use-service-account-credentials=false --controllers '*,-nodeipam,-cloud-node-lifecycle,-route,-service' \
    --node-monitor-grace-period 40s --logtostderr -v 1
  start_restarting kube-scheduler "$bin/kube-scheduler" \
    --kubeconfig "$dir/scheduler.kubeconfig" --authentication-kubeconfig "$dir/scheduler.kubeconfig" \
    --authorization-kubeconfig "$dir/scheduler.kubeconfig" --leader-elect=false --port 0 --secure-port 0 \
    --logtostderr -v 1
}

start_kubelet() {
  [ "${PARATUNE_NO_KUBELET:-}" = 1 ] && return 0
  local sim="$build/bin/paratune-kubelet-sim"
  if [ ! -x "$sim" ]; then log "no $sim: nodes not simulated (build it first)"; return 0; fi
  write_kubeconfig "$dir/kubelet.kubeconfig" paratune-kubelet-sim
  start_bg kubelet-sim "$sim" --kubeconfig "$dir/kubelet.kubeconfig" \
    --paratune "$build/bin/paratune" --work-dir "$dir/pods" --kubelet-port "$kubelet_port" \
    --tls-cert "$dir/pki/kubelet.crt" --tls-key "$dir/pki/kubelet.key" \
    --gpu-nodes "${PARATUNE_SIM_GPU_NODES:-4}" --tpu-hosts "${PARATUNE_SIM_TPU_HOSTS:-4}" \
    --node-faults "${PARATUNE_SIM_NODE_FAULTS:-}"
}

up() {
  mkdir -p "$dir"
  if [ -f "$dir/kube-apiserver.pid" ] && kill -0 "$(cat "$dir/kube-apiserver.pid")" 2>/dev/null; then
    log "already running (kubeconfig: $dir/kubeconfig)"; return 0
  fi
  local bin; bin=$(kube_bin)
  local t0; t0=$(date +%s)
  gen_certs; gen_tokens
  write_kubeconfig "$dir/kubeconfig" admin
  write_kubeconfig "$dir/operator.kubeconfig" system:serviceaccount:paratune-system:paratune-operator
  write_kubeconfig "$dir/scoped-operator.kubeconfig" system:serviceaccount:paratune-scoped:paratune-operator
  start_etcd
  start_apiserver "$bin"
  if ! wait_ready "$server/readyz" "$(token_of admin)" 60; then
    log "kube-apiserver did not become ready; see $dir/kube-apiserver.log"; tail -20 "$dir/kube-apiserver.log" >&2; exit 1
  fi
  start_controllers "$bin"
  start_kubelet
  log "up in $(( $(date +%s) - t0 )) s: export KUBECONFIG=$dir/kubeconfig"
}

down() {
  for n in operator kubelet-sim kube-scheduler kube-controller-manager kube-apiserver etcd; do stop_pid "$n"; done
  log "stopped (state kept in $dir; rm -rf it for a fresh cluster)"
}

deploy() {
  [ -f "$dir/kubeconfig" ] || { log "no cluster: run make local-cluster-up first"; exit 1; }
  export KUBECONFIG="$dir/kubeconfig"
  kubectl create namespace paratune-system --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  if ls "$root"/crds/*.yaml >/dev/null 2>&1; then
    kubectl apply -f "$root/crds/"
    kubectl wait --for condition=established --timeout=30s -f "$root/crds/" >/dev/null || true
  fi
  if [ -d "$root/manifests" ] && find "$root/manifests" -maxdepth 1 -name '*.yaml' | grep -q .; then
    # manifests/pdb.yaml is policy/v1 (Kubernetes >= 1.21); the local 1.20 control plane lacks it.
    local policy_v1=1 f
    kubectl api-versions | grep -qx policy/v1 || policy_v1=0
    # manifests/flowschema.yaml is flowcontrol v1 (>= 1.29); the chart renders older versions.
    local flowcontrol_v1=1
    kubectl api-versions | grep -qx flowcontrol.apiserver.k8s.io/v1 || flowcontrol_v1=0
    for f in "$root"/manifests/*.yaml; do
      if [ "$policy_v1" = 0 ] && grep -q '^apiVersion: policy/v1$' "$f"; then
        log "$(basename "$f") skipped: this API server does not serve policy/v1"; continue
      fi
      if [ "$flowcontrol_v1" = 0 ] && grep -q '^apiVersion: flowcontrol.apiserver.k8s.io/v1$' "$f"; then
        log "$(basename "$f") skipped: this API server does not serve flowcontrol v1"; continue
      fi
      kubectl apply -f "$f"
    done
  fi
  stop_pid operator
  if [ -x "$build/bin/paratune-operator" ]; then
    # PARATUNE_OPERATOR_ARGS: extra operator flags (e.g. --llm-allowed-endpoints=...).
    # shellcheck disable=SC2086
    KUBECONFIG="$dir/operator.kubeconfig" start_bg operator "$build/bin/paratune-operator" \
      --kubeconfig "$dir/operator.kubeconfig" ${PARATUNE_OPERATOR_ARGS:-}
    log "operator pid $(cat "$dir/operator.pid"), log $dir/operator.log"
  else
    log "no $build/bin/paratune-operator built: CRDs and manifests applied only"
  fi
}

restart_apiserver() {  # stops kube-apiserver and starts it again (watch tests)
  stop_pid kube-apiserver
  start_apiserver "$(kube_bin)"
  wait_ready "$server/readyz" "$(token_of admin)" 60 || { log "kube-apiserver did not come back"; exit 1; }
}

case "$cmd" in
  up) up ;;
  restart-apiserver) restart_apiserver ;;
  down) down ;;
  deploy) deploy ;;
  status) for n in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet-sim operator; do
            # A dead child not yet reaped (ps state Z) answers kill -0: it is stopped all the same.
            if [ -f "$dir/$n.pid" ] && ps -o stat= -p "$(cat "$dir/$n.pid")" 2>/dev/null | grep -qv '^Z'; then echo "$n running"; else echo "$n stopped"; fi
          done ;;
  *) echo "usage: $0 up|down|deploy|status [BUILD_DIR]" >&2; exit 2 ;;
esac
