#!/usr/bin/env bash
# Builds hack/render-chart (offline, GOPATH mode, Debian's golang-go +
# golang-github-masterminds-sprig-dev, -semver-dev, golang-gopkg-yaml.v2-dev, -yaml.v3-dev) into build/render-chart/ when
# its sources changed, then runs it: hack/render-chart/render.sh template charts/paratune ...
# `render.sh --path` only builds and prints the binary's path.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="$root/build/render-chart/render-chart"
if [[ ! -x "$out" || -n "$(find "$root/hack/render-chart" -name '*.go' -newer "$out")" ]]; then
  mkdir -p "$root/build/render-chart"
  (cd "$root" && GOPATH=/usr/share/gocode GO111MODULE=off GOFLAGS='' \
    GOCACHE="$root/build/render-chart/go-cache" go build -o "$out" ./hack/render-chart) >&2
fi
if [[ "${1:-}" == --path ]]; then echo "$out"; exit 0; fi
exec "$out" "$@"
