#!/usr/bin/env bash
# Installs the Debian packages paratune builds and tests with, only those that are missing.
set -euo pipefail
pkgs=(build-essential cmake ccache pkg-config libcpprest-dev libyaml-cpp-dev nlohmann-json3-dev
      libssl-dev libspdlog-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev clang-format
      clang-tidy)
need=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
[ ${#need[@]} -eq 0 ] && exit 0
echo "installing: ${need[*]}" >&2
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${need[@]}"
