#!/usr/bin/env bash
# The drift edits are single-quoted on purpose: $M and $C expand in the child shell.
# shellcheck disable=SC2016
# Tests of the chart check: hack/render-chart's Go unit tests, hack/check-chart.sh on the
# repository (must pass), and check-chart.sh against altered copies of manifests/ and crds/ (each
# must fail and name the difference), so a chart that drifts from manifests/ cannot go unnoticed.
# Exit 0 when all hold. Run: tests/chart/check_chart_test.sh
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CHECK="$ROOT/hack/check-chart.sh"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
FAILURES=0
fail() { echo "FAIL: $*" >&2; FAILURES=$((FAILURES + 1)); }

(cd "$ROOT" && GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS='' \
  GOCACHE="$ROOT/build/render-chart/go-cache" go test ./hack/render-chart) || fail "go test ./hack/render-chart"

"$CHECK" >"$TMP/ok.txt" 2>&1 || { cat "$TMP/ok.txt" >&2; fail "check-chart.sh fails on the repository"; }

# expect_drift NAME WANT_SUBSTRING EDIT...: apply the edit to fresh copies of manifests/ and crds/
# (in $M and $C); check-chart.sh must fail and print WANT_SUBSTRING.
expect_drift() {
  local name="$1" want="$2"; shift 2
  M="$TMP/$name/manifests" C="$TMP/$name/crds"
  mkdir -p "$TMP/$name" && cp -r "$ROOT/manifests" "$M" && cp -r "$ROOT/crds" "$C"
  (M="$M" C="$C" bash -c "$*")
  if MANIFESTS_DIR="$M" CRDS_DIR="$C" "$CHECK" >"$TMP/$name.txt" 2>&1; then
    fail "$name: check-chart.sh passed, want a failure"
  elif ! grep -qF -- "$want" "$TMP/$name.txt"; then
    fail "$name: output lacks '$want':"; cat "$TMP/$name.txt" >&2
  fi
}
expect_drift replicas '.spec.replicas: manifests have 3, the chart renders 2' \
  'sed -i "s/^  replicas: 2/  replicas: 3/" "$M/operator.yaml"'
expect_drift verb '.rules[' \
  'sed -i "0,/verbs: \[get, list, watch\]/s//verbs: [get, list]/" "$M/rbac.yaml"'
expect_drift quoted-limit '.cpu: manifests have 1, the chart renders "1"' \
  "sed -i 's/cpu: \"1\"/cpu: 1/' \"\$M/operator.yaml\""
expect_drift pdb '.spec.maxUnavailable: manifests have 2, the chart renders 1' \
  'sed -i "s/maxUnavailable: 1/maxUnavailable: 2/" "$M/pdb.yaml"'
expect_drift image-tag '.image: manifests have "paratune/paratune:latest", the chart renders "paratune/paratune:' \
  'sed -i "s|image: paratune/paratune:.*|image: paratune/paratune:latest|" "$M/operator.yaml"'
expect_drift new-object 'missing from the chart: v1 ConfigMap paratune-system/extra' \
  'printf "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: paratune-system}\n" >"$M/extra.yaml"'
expect_drift crd-field 'CustomResourceDefinition /trialruns.tuning.paratune.dev' \
  'sed -i "s/shortNames: \[tr\]/shortNames: [trial]/" "$C/tuning.paratune.dev_trialruns.yaml"'
expect_drift crd-copy 'files/crds/tuning.paratune.dev_tuningcampaigns.yaml is not a copy of' \
  'echo "# edited" >>"$C/tuning.paratune.dev_tuningcampaigns.yaml"'
expect_drift removed-object 'only in the chart: v1 Service paratune-system/paratune-operator-metrics' \
  'python3 - "$M/operator.yaml" <<PY
import sys; p = sys.argv[1]; s = open(p).read(); open(p, "w").write(s.split("\n---\n")[0] + "\n")
PY'

if ((FAILURES > 0)); then
  echo "check_chart_test: $FAILURES failure(s)" >&2
  exit 1
fi
echo "check_chart_test: OK"
