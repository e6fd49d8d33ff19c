#!/usr/bin/env bash
# Starts the test control plane in the background on loopback (building it first if needed) and
# waits until it serves and the controllers run. Usage: start.sh [DIR] (default <repo>/.testcluster).
# Writes DIR/kubeconfig, DIR/pid, DIR/log. A restart with the same DIR keeps data and port.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../.testcluster}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"

if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
  echo "testcluster already running (pid $(cat "$dir/pid")); kubeconfig $dir/kubeconfig"
  exit 0
fi
bash "$here/build.sh"

source "$here/ports.sh"
if kept_ports_taken "$dir"; then
  # etcd's data names its peer address: new ports need new data.
  echo "testcluster: a kept port is in use by another process; starting afresh on new ports" >&2
  find "$dir" -mindepth 1 -delete
fi
pick_ports "$dir"
port=$(cat "$dir/port")
rm -f "$dir/kubeconfig"
start=$(date +%s)
nohup "$here/bin/testcluster" --data-dir "$dir" --port "$port" --etcd-port "$(cat "$dir/etcd-port")" >"$dir/log" 2>&1 &
echo $! > "$dir/pid"

fail() { echo "testcluster: $1; last log lines:" >&2; tail -n 40 "$dir/log" >&2; bash "$here/stop.sh" "$dir" >/dev/null 2>&1 || true; exit 1; }
for _ in $(seq 1 600); do
  kill -0 "$(cat "$dir/pid")" 2>/dev/null || fail "exited during start"
  if [ -f "$dir/kubeconfig" ] && kubectl --kubeconfig "$dir/kubeconfig" get serviceaccount default -n default >/dev/null 2>&1; then
    echo "testcluster ready in $(( $(date +%s) - start )) s: https://127.0.0.1:$port; export KUBECONFIG=$dir/kubeconfig"
    exit 0
  fi
  sleep 0.2
done
fail "not ready after 120 s"
