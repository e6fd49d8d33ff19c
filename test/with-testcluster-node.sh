#!/usr/bin/env bash
# Runs a command with the test cluster's node up (test/cluster/node-start.sh) and
# INTAKE_TEST_KUBECONFIG pointing at it; stops the node afterwards only if this script started it,
# whatever the command's outcome, and also when this script is interrupted (Ctrl-C, a CI job
# cancelled: SIGINT or SIGTERM stop the command first): node-stop.sh removes the node's processes,
# mounts, cgroups, veth and network namespaces.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/.testcluster-node"
started=0
child=""
finish() {
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    kill -TERM "$child" 2>/dev/null
    wait "$child" 2>/dev/null
  fi
  if [ "$started" = 1 ]; then
    started=0
    bash "$root/test/cluster/node-stop.sh" "$dir"
  fi
}
trap finish EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
if ! [ -f "$dir/node-pids" ] || ! kill -0 "$(head -1 "$dir/node-pids")" 2>/dev/null; then
  # Set first: a start that fails or is interrupted half-way is stopped too (node-stop.sh undoes what exists).
  started=1
  bash "$root/test/cluster/node-start.sh" "$dir" || exit 1
elif [ -f "$root/build/intake-image.tar" ]; then
  # A node kept running from an earlier run holds the intake image it was started with, under the
  # same tag: import this build's, so the pods the command creates run what was just built.
  ctr --address "$dir/containerd/sock" --namespace k8s.io images import --base-name intake.local/intake \
    "$root/build/intake-image.tar" >/dev/null || exit 1
fi
# In the background and waited for: a signal to this script is handled at once, not when the command ends.
INTAKE_TEST_KUBECONFIG="$dir/kubeconfig" "$@" &
child=$!
wait "$child"
