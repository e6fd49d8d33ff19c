#!/usr/bin/env bash
# Builds the node's binaries when their sources changed, cached like build.sh's API server:
#   bin/kubelet, bin/kube-proxy, bin/kube-scheduler: the same k8s.io/kubernetes v1.34.3 module and
#     replace lines as bin/testcluster (go.mod's tool directives pin them);
#   bin/coredns: CoreDNS from the Go module proxy (coredns/go.mod), with only the plugins it uses;
#   bin/pause: the pod sandbox's process, Kubernetes' own pause.c from the same module, static.
set -euo pipefail
cd "$(dirname "$0")"
K8S_VERSION=v1.34.3
PAUSE_VERSION=3.10
mkdir -p bin
go_build() { CGO_ENABLED=0 nice -n 15 go build -trimpath "$@"; }

stamp=bin/.stamp-node
digest=$(cat go.mod go.sum | sha256sum | cut -d' ' -f1)
if ! { [ -x bin/kubelet ] && [ -x bin/kube-proxy ] && [ -x bin/kube-scheduler ] && [ "$(cat "$stamp" 2>/dev/null)" = "$digest" ]; }; then
  start=$(date +%s)
  echo "testcluster: building kubelet, kube-proxy, kube-scheduler ${K8S_VERSION} (cached after the first build)..." >&2
  pkg=k8s.io/component-base/version
  go_build -o bin/ -ldflags "-s -w -X ${pkg}.gitVersion=${K8S_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=34 -X ${pkg}.gitTreeState=clean" \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kube-scheduler
  echo "$digest" > "$stamp"
  echo "testcluster: node binaries built in $(( $(date +%s) - start )) s" >&2
fi

stamp=bin/.stamp-coredns
digest=$(cat coredns/go.mod coredns/go.sum coredns/*.go | sha256sum | cut -d' ' -f1)
if ! { [ -x bin/coredns ] && [ "$(cat "$stamp" 2>/dev/null)" = "$digest" ]; }; then
  start=$(date +%s)
  echo "testcluster: building CoreDNS..." >&2
  (cd coredns && go_build -o ../bin/coredns -ldflags "-s -w" .)
  echo "$digest" > "$stamp"
  echo "testcluster: CoreDNS built in $(( $(date +%s) - start )) s" >&2
fi

if ! [ -x bin/pause ]; then
  src="$(go list -m -f '{{.Dir}}' k8s.io/kubernetes)/build/pause/linux/pause.c"
  nice -n 15 cc -Os -Wall -Werror -static -DVERSION="v${PAUSE_VERSION}-intake" -o bin/pause.tmp "$src"
  strip bin/pause.tmp
  mv bin/pause.tmp bin/pause
fi
