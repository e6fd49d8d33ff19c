#!/usr/bin/env bash
# Stops the test control plane started by start.sh [DIR]: SIGTERM, then SIGKILL after 20 s.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../.testcluster}"
[ -f "$dir/pid" ] || { echo "testcluster not running"; exit 0; }
pid=$(cat "$dir/pid")
if kill -0 "$pid" 2>/dev/null; then
  kill -TERM "$pid"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
  kill -0 "$pid" 2>/dev/null && { echo "testcluster did not stop in 20 s; killing" >&2; kill -KILL "$pid"; }
fi
rm -f "$dir/pid"
echo "testcluster stopped"
