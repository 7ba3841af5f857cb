#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kube-scheduler (1.20.2) from Debian's own
# source package, and caches them in $PARATUNE_KUBE_CACHE (default ~/.cache/paratune/kube-1.20.2).
# Idempotent: exits at once when the cached binaries exist. Prints the cache's bin directory.
set -euo pipefail
cache="${PARATUNE_KUBE_CACHE:-$HOME/.cache/paratune/kube-1.20.2}"
bins=(kube-apiserver kube-controller-manager kube-scheduler)
have_all() { for b in "${bins[@]}"; do [ -x "$cache/bin/$b" ] || return 1; done; }
if have_all; then echo "$cache/bin"; exit 0; fi

export DEBIAN_FRONTEND=noninteractive
need=()
for p in golang-go etcd-server dpkg-dev golang-github-modern-go-reflect2-dev rsync; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq >&2
  apt-get install -y -qq "${need[@]}" >&2
fi
if ! grep -rqs "^Types:.*deb-src" /etc/apt/sources.list.d/ && ! grep -qs "^deb-src" /etc/apt/sources.list; then
  cat > /etc/apt/sources.list.d/paratune-deb-src.sources <<'SRC'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  apt-get update -qq >&2
fi
mkdir -p "$cache/src" "$cache/bin"
cd "$cache/src"
if ! ls -d kubernetes-*/ >/dev/null 2>&1; then
  apt-get source -qq kubernetes >&2
fi
cd "$(find . -maxdepth 1 -type d -name "kubernetes-*" | head -1)"
# The vendored reflect2 1.0.1 crashes under Go 1.19; Debian's 1.0.2 works.
rsync -a --delete /usr/share/gocode/src/github.com/modern-go/reflect2/ vendor/github.com/modern-go/reflect2/ >&2
export GOFLAGS=-mod=vendor
make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler" >&2
for b in "${bins[@]}"; do
  cp "$(find _output -type f -name "$b" -perm -u+x | head -1)" "$cache/bin/$b"
done
have_all
echo "$cache/bin"
