#!/usr/bin/env bash
# Installs the Debian packages paratune builds and tests with, only those that are missing.
set -euo pipefail
pkgs=(build-essential cmake ccache pkg-config libcpprest-dev libyaml-cpp-dev nlohmann-json3-dev
      libssl-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev zlib1g-dev
      clang-format
      clang-tidy python3
      # The external tuning peer of the benchmark (bench/optuna_peer.py): Optuna's TPE.
      python3-optuna
      # A real training run on the CPU (tests/cli/tune_local_test.cc runs workloads/hf-llama/train.py).
      python3-torch
      # libFuzzer targets (hack/fuzz.sh): clang and its runtime (libFuzzer, ASan, UBSan).
      clang libclang-rt-14-dev llvm
      # The Helm chart renderer (hack/render-chart) and its check: Go and Debian's Sprig.
      golang-go golang-github-masterminds-sprig-dev golang-github-masterminds-semver-dev
      golang-gopkg-yaml.v2-dev golang-gopkg-yaml.v3-dev)
need=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
# kubectl ships with the machine; Debian's own is in kubernetes-client.
command -v kubectl >/dev/null 2>&1 || need+=(kubernetes-client)
[ ${#need[@]} -eq 0 ] && exit 0
echo "installing: ${need[*]}" >&2
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
