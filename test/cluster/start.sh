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

free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
port_free() { node -e "const s=require('net').createServer();s.once('error',()=>process.exit(1));s.listen($1,'127.0.0.1',()=>s.close(()=>process.exit(0)))"; }
# etcd's peer listener takes the port after its client port: both must be free.
etcd_ports_free() { port_free "$1" && port_free $(($1 + 1)); }
free_etcd_port() { local p; for _ in $(seq 1 20); do p=$(free_port); etcd_ports_free "$p" && { echo "$p"; return; }; done; echo "no free pair of ports for etcd" >&2; return 1; }
# Kept ports are only kept while nothing else took them (an outgoing connection's ephemeral port
# can land on one between runs): then this cluster starts afresh on new ports.
if [ -f "$dir/port" ] && ! { port_free "$(cat "$dir/port")" && etcd_ports_free "$(cat "$dir/etcd-port")"; }; then
  echo "testcluster: a kept port is in use by another process; starting afresh on new ports" >&2
  find "$dir" -mindepth 1 -delete
fi
[ -f "$dir/port" ] || free_port > "$dir/port"
[ -f "$dir/etcd-port" ] || free_etcd_port > "$dir/etcd-port"
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
