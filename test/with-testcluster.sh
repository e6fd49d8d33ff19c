#!/usr/bin/env bash
# Runs a command with the test API server up: starts it if it is not running, and stops it
# afterwards only if this script started it (a developer's running cluster is left alone).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/.testcluster"
started=0
if ! [ -f "$dir/pid" ] || ! kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
  bash "$root/test/cluster/start.sh" "$dir" || exit 1
  started=1
fi
"$@"
rc=$?
if [ "$started" = 1 ]; then bash "$root/test/cluster/stop.sh" "$dir"; fi
exit $rc
