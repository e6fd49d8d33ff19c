#!/usr/bin/env bash
# Runs a command with the test cluster's node up (test/cluster/node-start.sh) and
# INTAKE_TEST_KUBECONFIG pointing at it; stops the node afterwards only if this script started it.
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/.testcluster-node"
started=0
if ! [ -f "$dir/node-pids" ] || ! kill -0 "$(head -1 "$dir/node-pids")" 2>/dev/null; then
  bash "$root/test/cluster/node-start.sh" "$dir" || exit 1
  started=1
fi
INTAKE_TEST_KUBECONFIG="$dir/kubeconfig" "$@"
rc=$?
if [ "$started" = 1 ]; then bash "$root/test/cluster/node-stop.sh" "$dir"; fi
exit $rc
