#!/usr/bin/env bash
# Checks charts/paratune without Helm: renders it with hack/render-chart (text/template + Sprig)
# and checks that
#   1. the default rendering (release "paratune", namespace paratune-system) equals manifests/ and
#      crds/ as parsed YAML objects, the Namespace left to `helm install --create-namespace`;
#      with namespace.create=true it equals them exactly;
#   2. non-default values (replicas, leader election, log format, LLM Secret, knowledge
#      ConfigMaps, watched namespaces, metrics, CRD toggle, diagnostics mode, PodDisruptionBudget,
#      /tmp size, release name) reach the objects;
#   3. values the operator would refuse, and values values.schema.json does not know (typos),
#      fail the rendering with an error naming the value.
#   4. with --server-dry-run: the API server of $KUBECONFIG accepts the rendering
#      (`kubectl apply --dry-run=server`, into namespace "default", which exists everywhere).
# Usage: hack/check-chart.sh [--server-dry-run]
# Exit 0 when all hold; 1 with the differences otherwise. Env: MANIFESTS_DIR, CRDS_DIR, CHART_DIR
# (defaults: the repository's), RENDER_CHART (a prebuilt binary; default: built into
# build/render-chart/ by hack/render-chart/render.sh when its sources changed). Needs only Debian's golang-go,
# golang-github-masterminds-sprig-dev, golang-github-masterminds-semver-dev,
# golang-gopkg-yaml.v2-dev and golang-gopkg-yaml.v3-dev (hack/install-deps.sh).
set -euo pipefail
SERVER_DRY_RUN=0
case "${1:-}" in
  "") ;;
  --server-dry-run) SERVER_DRY_RUN=1 ;;
  *) echo "usage: hack/check-chart.sh [--server-dry-run]" >&2; exit 2 ;;
esac
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MANIFESTS_DIR="${MANIFESTS_DIR:-$ROOT/manifests}"
CRDS_DIR="${CRDS_DIR:-$ROOT/crds}"
CHART_DIR="${CHART_DIR:-$ROOT/charts/paratune}"

RC="${RENDER_CHART:-$("$ROOT/hack/render-chart/render.sh" --path)}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
FAILURES=0
fail() { echo "FAIL: $*" >&2; FAILURES=$((FAILURES + 1)); }

render() {  # render OUT [render-chart template flags...]
  local out="$1"; shift
  "$RC" template "$CHART_DIR" --name paratune -n paratune-system "$@" >"$out"
}

# expect FILE KIND/NAME PATH JSON: the field equals JSON exactly.
expect() {
  local got
  if ! got="$("$RC" get "$1" "$2" "$3" 2>&1)"; then
    fail "$2 $3: $got"
  elif [[ "$got" != "$4" ]]; then
    fail "$2 $3: want $4, got $got"
  fi
}
# expect_absent FILE KIND/NAME [PATH]: the object (or its field) is not rendered.
expect_absent() {
  if "$RC" get "$1" "$2" "${3:-.kind}" >/dev/null 2>&1; then fail "$2 ${3:-}: rendered, want absent"; fi
}
# expect_error SUBSTRING [flags...]: rendering fails and its error contains SUBSTRING.
expect_error() {
  local want="$1"; shift
  if render "$TMP/err.yaml" "$@" 2>"$TMP/err.txt"; then
    fail "rendering with $* succeeded, want an error about $want"
  elif ! grep -qF -- "$want" "$TMP/err.txt"; then
    fail "rendering with $*: error does not mention '$want': $(cat "$TMP/err.txt")"
  fi
}

# 1. The default rendering is manifests/ + crds/. The chart carries a copy of crds/ (a chart
#    cannot read outside its directory); say how to refresh it when they part.
for f in "$CRDS_DIR"/*.yaml; do
  if ! cmp -s "$f" "$CHART_DIR/files/crds/$(basename "$f")"; then
    fail "$CHART_DIR/files/crds/$(basename "$f") is not a copy of $f: cp $CRDS_DIR/*.yaml $CHART_DIR/files/crds/"
  fi
done
render "$TMP/default.yaml"
if ! "$RC" diff --want "$MANIFESTS_DIR" --want "$CRDS_DIR" --got "$TMP/default.yaml" \
  --except Namespace/paratune-system; then
  fail "default rendering differs from $MANIFESTS_DIR and $CRDS_DIR (above; 'manifests have' is the expected side)"
fi
render "$TMP/with-ns.yaml" --set namespace.create=true
if ! "$RC" diff --want "$MANIFESTS_DIR" --want "$CRDS_DIR" --got "$TMP/with-ns.yaml" >/dev/null; then
  "$RC" diff --want "$MANIFESTS_DIR" --want "$CRDS_DIR" --got "$TMP/with-ns.yaml" >&2 || true
  fail "rendering with namespace.create=true differs from $MANIFESTS_DIR and $CRDS_DIR"
fi

# 2. Non-default values reach the objects.
D=Deployment/paratune-operator
C='.spec.template.spec.containers[0]'
render "$TMP/single.yaml" --set replicas=1 --set leaderElection.enabled=false --set logFormat=text \
  --set 'watchNamespaces={team-a,team-b}' --set maxConcurrentReconciles=8
expect "$TMP/single.yaml" $D .spec.replicas 1
expect "$TMP/single.yaml" $D "$C.args" \
  '["--namespace=team-a,team-b","--metrics-bind-address=:8080","--health-probe-bind-address=:8081","--log-format=text","--max-concurrent-reconciles=8","--diagnostics=nvidia"]'
# Several watched namespaces: the operator runs one informer per namespace, so nothing
# namespaced is granted cluster-wide (tests/integration/watch_namespaces_test.cc runs it so).
expect "$TMP/single.yaml" ClusterRole/paratune-operator .rules \
  '[{"apiGroups":[""],"resources":["nodes"],"verbs":["get","list"]}]'
expect_absent "$TMP/single.yaml" PodDisruptionBudget/paratune-operator
expect_absent "$TMP/single.yaml" Role/paratune-leader-election
expect_absent "$TMP/single.yaml" RoleBinding/paratune-leader-election
expect "$TMP/single.yaml" $D "$C.env" '[{"name":"POD_NAMESPACE","valueFrom":{"fieldRef":{"fieldPath":"metadata.namespace"}}}]'

# The same through a values file (-f), as a GitOps overlay would pass it; null drops a default.
printf 'replicas: 1\nleaderElection: {enabled: false}\nnodeSelector: null\n' >"$TMP/values.yaml"
render "$TMP/file.yaml" -f "$TMP/values.yaml"
expect "$TMP/file.yaml" $D .spec.replicas 1
expect "$TMP/file.yaml" $D "$C.args[0]" '"--namespace="'
expect_absent "$TMP/file.yaml" $D .spec.template.spec.nodeSelector

render "$TMP/llm.yaml" --set logFormat=json --set llm.endpoint=http://vllm.llm.svc:8000/v1 \
  --set llm.model=qwen2.5-72b-instruct --set llm.apiKeySecret.name=llm-key \
  --set 'knowledgeConfigMaps={site-runbook,nccl-notes}' --set image.tag=v0.2.0 \
  --set image.pullPolicy=IfNotPresent
expect "$TMP/llm.yaml" $D "$C.args[4]" '"--log-format=json"'
expect "$TMP/llm.yaml" $D "$C.env[1]" '{"name":"PARATUNE_LLM_ENDPOINT","value":"http://vllm.llm.svc:8000/v1"}'
expect "$TMP/llm.yaml" $D "$C.env[2]" '{"name":"PARATUNE_LLM_MODEL","value":"qwen2.5-72b-instruct"}'
expect "$TMP/llm.yaml" $D "$C.env[3]" '{"name":"OPENAI_API_KEY","valueFrom":{"secretKeyRef":{"key":"apiKey","name":"llm-key"}}}'
expect "$TMP/llm.yaml" $D "$C.env[4].value" '"/etc/paratune/knowledge"'
expect "$TMP/llm.yaml" $D "$C.volumeMounts[1]" '{"mountPath":"/etc/paratune/knowledge/nccl-notes","name":"knowledge-1","readOnly":true}'
expect "$TMP/llm.yaml" $D "$C.volumeMounts[2]" '{"mountPath":"/tmp","name":"tmp"}'
expect "$TMP/llm.yaml" $D .spec.template.spec.volumes[0].configMap.name '"site-runbook"'
expect "$TMP/llm.yaml" $D .spec.template.spec.volumes[2] '{"emptyDir":{"sizeLimit":"64Mi"},"name":"tmp"}'
expect "$TMP/llm.yaml" $D "$C.image" '"paratune/paratune:v0.2.0"'
expect "$TMP/llm.yaml" $D "$C.imagePullPolicy" '"IfNotPresent"'

render "$TMP/lean.yaml" --set metrics.enabled=false --set crds.install=false --set image.tag= \
  --set resources.limits.memory=1Gi
expect_absent "$TMP/lean.yaml" Service/paratune-operator-metrics
expect_absent "$TMP/lean.yaml" CustomResourceDefinition/tuningcampaigns.tuning.paratune.dev
expect "$TMP/lean.yaml" $D "$C.args[2]" '"--metrics-bind-address=0"'
expect "$TMP/lean.yaml" $D "$C.ports" '[{"containerPort":8081,"name":"probes"}]'
expect "$TMP/lean.yaml" $D "$C.image" "\"paratune/paratune:$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$CHART_DIR/Chart.yaml")\""
expect "$TMP/lean.yaml" $D "$C.resources.limits" '{"cpu":"1","memory":"1Gi"}'

# Diagnostics mode, the PodDisruptionBudget (policy/v1beta1 before Kubernetes 1.21) and /tmp.
render "$TMP/ops.yaml" --set diagnostics.mode=simulated --set replicas=3 \
  --set podDisruptionBudget.maxUnavailable=2 --set tmpSizeLimit=1Gi --kube-version v1.20.2
expect "$TMP/ops.yaml" $D "$C.args[6]" '"--diagnostics=simulated"'
expect "$TMP/ops.yaml" PodDisruptionBudget/paratune-operator .apiVersion '"policy/v1beta1"'
expect "$TMP/ops.yaml" PodDisruptionBudget/paratune-operator .spec '{"maxUnavailable":2,"selector":{"matchLabels":{"app.kubernetes.io/component":"operator","app.kubernetes.io/name":"paratune"}}}'
expect "$TMP/ops.yaml" $D .spec.template.spec.volumes[0].emptyDir '{"sizeLimit":"1Gi"}'
render "$TMP/nopdb.yaml" --set podDisruptionBudget.enabled=false --set diagnostics.mode=off \
  --set nodeHealth.enabled=false
expect_absent "$TMP/nopdb.yaml" PodDisruptionBudget/paratune-operator
expect "$TMP/nopdb.yaml" $D "$C.args[6]" '"--diagnostics=off"'
expect "$TMP/nopdb.yaml" $D "$C.args[7]" '"--node-health=false"'
expect_absent "$TMP/ops.yaml" $D "$C.args[7]"

"$RC" template "$CHART_DIR" --name tuner -n ml-ops --set crds.keep=true >"$TMP/other.yaml"
expect "$TMP/other.yaml" Deployment/tuner-paratune-operator .metadata.namespace '"ml-ops"'
expect "$TMP/other.yaml" Deployment/tuner-paratune-operator "$C.args[1]" '"--leader-election-namespace=ml-ops"'
expect "$TMP/other.yaml" Role/tuner-paratune-leader-election .metadata.namespace '"ml-ops"'
expect "$TMP/other.yaml" ClusterRoleBinding/tuner-paratune-operator .subjects \
  '[{"kind":"ServiceAccount","name":"tuner-paratune-operator","namespace":"ml-ops"}]'
expect "$TMP/other.yaml" CustomResourceDefinition/trialruns.tuning.paratune.dev \
  .metadata.annotations '{"helm.sh/resource-policy":"keep"}'

# Multi-tenant safety (docs/security.md): with watchNamespaces the operator's rights are Roles
# in those namespaces (plus its own state), cluster-wide only Nodes; the policy values reach flags.
render "$TMP/tenant.yaml" --set 'watchNamespaces={team-a}' --set trialPodPolicy.allowHostPath=true \
  --set 'trialPodPolicy.allowedCapabilities={IPC_LOCK}' --set 'llm.allowedEndpoints={https://llm.corp/}' \
  --set nodeHealth.suspectMinCampaigns=1
expect "$TMP/tenant.yaml" Role/paratune-operator .metadata.namespace '"team-a"'
expect "$TMP/tenant.yaml" Role/paratune-operator-state .rules \
  '[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","list","watch","create","update"]}]'
expect "$TMP/tenant.yaml" ClusterRole/paratune-operator .rules \
  '[{"apiGroups":[""],"resources":["nodes"],"verbs":["get","list"]}]'
expect "$TMP/tenant.yaml" $D "$C.args[7]" '"--suspect-min-campaigns=1"'
expect "$TMP/tenant.yaml" $D "$C.args[8]" '"--llm-allowed-endpoints=https://llm.corp/"'
expect "$TMP/tenant.yaml" $D "$C.args[9]" '"--trial-allow-host-path=true"'
expect "$TMP/tenant.yaml" $D "$C.args[10]" '"--trial-allowed-capabilities=IPC_LOCK"'
expect_absent "$TMP/default.yaml" Role/paratune-operator-state
# Least privilege (issue 38): no Secret rule cluster-wide, a `get` (never list/watch) per watched
# namespace; no Node patch unless node remediation is enabled, then in its own ClusterRole.
expect "$TMP/tenant.yaml" Role/paratune-operator '.rules[14]' \
  '{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}'
if grep -q 'secrets' <("$RC" get "$TMP/default.yaml" ClusterRole/paratune-operator .rules); then
  fail "the default ClusterRole grants something on Secrets"
fi
expect_absent "$TMP/default.yaml" ClusterRole/paratune-operator-node-remediation
render "$TMP/remedy.yaml" --set nodeHealth.remediation.enabled=true
expect "$TMP/remedy.yaml" ClusterRole/paratune-operator-node-remediation .rules \
  '[{"apiGroups":[""],"resources":["nodes"],"verbs":["patch"]}]'
expect "$TMP/remedy.yaml" ClusterRoleBinding/paratune-operator-node-remediation .subjects \
  '[{"kind":"ServiceAccount","name":"paratune-operator","namespace":"paratune-system"}]'
expect "$TMP/remedy.yaml" $D "$C.args[7]" '"--node-remediation=true"'
# Observability (off by default): the ServiceMonitor selects the metrics Service; the dashboard
# ConfigMap carries files/dashboards/paratune-campaigns.json for Grafana's sidecar.
expect_absent "$TMP/default.yaml" ServiceMonitor/paratune-operator
expect_absent "$TMP/default.yaml" ConfigMap/paratune-dashboard
render "$TMP/obs.yaml" --set metrics.serviceMonitor.enabled=true --set metrics.grafanaDashboard.enabled=true \
  --set metrics.serviceMonitor.labels.release=prometheus --set metrics.grafanaDashboard.namespace=monitoring
expect "$TMP/obs.yaml" ServiceMonitor/paratune-operator .spec.endpoints \
  '[{"interval":"30s","path":"/metrics","port":"metrics"}]'
expect "$TMP/obs.yaml" ServiceMonitor/paratune-operator .spec.selector.matchLabels \
  '{"app.kubernetes.io/component":"operator","app.kubernetes.io/name":"paratune"}'
expect "$TMP/obs.yaml" ServiceMonitor/paratune-operator .metadata.labels.release '"prometheus"'
expect "$TMP/obs.yaml" ConfigMap/paratune-dashboard .metadata.namespace '"monitoring"'
expect "$TMP/obs.yaml" ConfigMap/paratune-dashboard .metadata.labels.grafana_dashboard '"1"'
if ! "$RC" get "$TMP/obs.yaml" ConfigMap/paratune-dashboard '.data' | python3 -c '
import json, sys
d = json.loads(json.load(sys.stdin)["paratune-campaigns.json"])
assert d["uid"] == "paratune-campaigns" and d["panels"]' 2>"$TMP/dash.txt"; then
  fail "the dashboard ConfigMap does not hold the dashboard JSON: $(cat "$TMP/dash.txt")"
fi
render "$TMP/rdma.yaml" --set rdma.resourceName=rdma/ib
expect "$TMP/rdma.yaml" $D "$C.args[7]" '"--rdma-resource=rdma/ib"'
expect_error "rdma.resourceName" --set rdma.resourceName=infiniband
expect_error "nodeHealth.remediation.enabled: needs nodeHealth.enabled=true" \
  --set nodeHealth.remediation.enabled=true --set nodeHealth.enabled=false
expect_error "trialPodPolicy.allowPrivileged" --set trialPodPolicy.allowPrivileged=yes

# 3. Values the operator refuses fail the rendering, naming the value.
expect_error "leaderElection.enabled" --set leaderElection.enabled=false
expect_error "logFormat: must be one of [json text], got xml" --set logFormat=xml
expect_error "replica: unknown value" --set replica=3
expect_error "replicas: invalid type: want integer, got string" --set replicas=two
expect_error "metrics.port: must be <= 65535" --set metrics.port=80800
expect_error "maxConcurrentReconciles" --set maxConcurrentReconciles=0
expect_error "diagnostics.mode: must be one of [off nvidia simulated], got dcgm" --set diagnostics.mode=dcgm
expect_error "podDisruptionBudget.maxUnavailable: must be >= 1" --set podDisruptionBudget.maxUnavailable=0
expect_error "serviceAccount.name is required" --set serviceAccount.create=false
expect_error "incompatible with Kubernetes v1.19.0" --kube-version v1.19.0

# 4. The API server accepts the objects (types, enums, names) of the default and a full rendering.
if ((SERVER_DRY_RUN)); then
  kube_version=$(kubectl version -o json | python3 -c 'import json,sys; print(json.load(sys.stdin)["serverVersion"]["gitVersion"])')
  for args in "" "--set llm.apiKeySecret.name=llm-key --set knowledgeConfigMaps={kb} --set watchNamespaces={default}"; do
    # shellcheck disable=SC2086
    "$RC" template "$CHART_DIR" --name paratune -n default --kube-version "$kube_version" $args >"$TMP/dry.yaml"
    if ! kubectl apply --dry-run=server -f "$TMP/dry.yaml" >"$TMP/dry.txt" 2>&1; then
      cat "$TMP/dry.txt" >&2
      fail "kubectl apply --dry-run=server refused the rendering ${args:-with default values}"
    fi
  done
fi

if ((FAILURES > 0)); then
  echo "check-chart: $FAILURES check(s) failed" >&2
  exit 1
fi
echo "check-chart: charts/paratune renders manifests/ and crds/; non-default values OK"
