#!/usr/bin/env bash
# Stops what node-start.sh [DIR] started and removes what it created: the pods' containers
# (through containerd), kubelet, kube-proxy, containerd, kube-scheduler, the API server, the mounts
# under DIR, the cgroups, the routes, the veth and the network namespace, and DIR's data but its
# ports (each start is a new cluster).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${1:-$here/../../.testcluster-node}"
dir="$(cd "$dir" 2>/dev/null && pwd)" || { echo "testcluster node not running"; exit 0; }
NETNS=intake-node HOST_IF=intk-host
CGROUP_ROOT=/intake-testcluster

# SIGTERM to all of them at once, then up to 10 s for each to exit, then SIGKILL.
stop_pids() {
  local alive=() still pid
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null && alive+=("$pid"); done
  for _ in $(seq 1 50); do
    still=()
    for pid in "${alive[@]}"; do kill -0 "$pid" 2>/dev/null && still+=("$pid"); done
    [ "${#still[@]}" = 0 ] && return 0
    alive=("${still[@]}")
    sleep 0.2
  done
  kill -KILL "${alive[@]}" 2>/dev/null
  return 0
}

# kubelet and kube-proxy first (they would restart what containerd stops), then every pod's
# containers and sandboxes while containerd still runs, then containerd itself.
if [ -f "$dir/node-pids" ]; then
  mapfile -t pids < "$dir/node-pids"
  # spawn order: kube-scheduler, containerd, kubelet, kube-proxy
  stop_pids ${pids[3]:-} ${pids[2]:-} ${pids[0]:-}
  if [ -S "$dir/containerd/sock" ]; then
    ctr_() { ctr --address "$dir/containerd/sock" --namespace k8s.io "$@"; }
    for t in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks kill -s SIGKILL "$t" >/dev/null 2>&1; done
    sleep 1
    for t in $(ctr_ tasks ls -q 2>/dev/null); do ctr_ tasks delete -f "$t" >/dev/null 2>&1; done
    for c in $(ctr_ containers ls -q 2>/dev/null); do ctr_ containers delete "$c" >/dev/null 2>&1; done
  fi
  stop_pids ${pids[1]:-}
  # containerd-shim processes outlive containerd by design; they are ours when their -address is.
  # shellcheck disable=SC2046
  stop_pids $(pgrep -f "containerd-shim.*-address $dir/containerd/sock" || true)
  rm -f "$dir/node-pids"
fi
[ -f "$dir/pid" ] && bash "$here/stop.sh" "$dir" >/dev/null

# Mounts under DIR (overlay snapshots, pod volumes, netns bind mounts), deepest first.
for _ in 1 2 3; do
  mapfile -t mounts < <(awk -v d="$dir/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r)
  [ "${#mounts[@]}" = 0 ] && break
  for m in "${mounts[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
done
# Every start is a fresh cluster: only the chosen ports stay.
find "$dir" -mindepth 1 -maxdepth 1 ! -name port ! -name etcd-port -exec rm -rf {} +

# cgroups the kubelet created under CGROUP_ROOT, deepest first (empty once the processes are gone).
for c in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
  [ -d "$c${CGROUP_ROOT#/}" ] && find "$c${CGROUP_ROOT#/}" -depth -type d -exec rmdir {} \; 2>/dev/null
done

# The pods' network namespaces: containerd's CRI names them cni-<uuid> under /run/netns; killing
# the tasks does not remove them (only a StopPodSandbox would). This machine runs no other CRI.
for n in $(ip netns list | awk '/^cni-/ {print $1}'); do ip netns del "$n" 2>/dev/null; done
ip link del "$HOST_IF" 2>/dev/null
ip netns del "$NETNS" 2>/dev/null
rm -f "$dir/netns"
[ "$(cat /run/intake-node.owner 2>/dev/null)" = "$dir" ] && rm -f /run/intake-node.owner
echo "testcluster node stopped"
