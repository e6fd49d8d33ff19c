#!/usr/bin/env bash
# Can this machine run the test cluster's node (node-start.sh)? Tries each thing the node needs, the
# way the node uses it, and fails naming the first that is missing: make test and make
# test-cluster run it first, so a machine that cannot run the chart tests fails at once and says
# why, instead of skipping them. Usage: node-check.sh [DIR] (default <repo>/.testcluster-node: the
# overlay mount is tried on DIR's filesystem, where containerd keeps its snapshots). Leaves nothing
# behind. What each item is for: test/cluster/README.md, "What it needs".
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="${1:-$root/.testcluster-node}"
probe_ns="intake-check-$$"
probe_dir=""

fail() {
  echo "make test-cluster cannot run on this machine: $1" >&2
  echo "  (the chart tests run a real Kubernetes node; test/cluster/README.md, \"What it needs\", lists its requirements)" >&2
  exit 1
}
cleanup() {
  ip netns del "$probe_ns" 2>/dev/null
  if [ -n "$probe_dir" ]; then
    umount "$probe_dir/merged" 2>/dev/null
    rm -rf "$probe_dir"
  fi
  for c in /sys/fs/cgroup/*/"$probe_ns" "/sys/fs/cgroup/$probe_ns"; do [ -d "$c" ] && rmdir "$c" 2>/dev/null; done
  return 0
}
trap cleanup EXIT

[ "$(id -u)" = 0 ] || fail "it needs root (network namespaces, mounts, iptables, containerd); this is uid $(id -u)"

for b in ip nsenter containerd containerd-shim-runc-v2 runc ctr iptables umoci mmdebstrap cc; do
  command -v "$b" >/dev/null || fail "$b is missing (make debian-tools installs the Debian packages; nsenter is util-linux, cc a C compiler)"
done
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] && [ -x /usr/lib/cni/portmap ] ||
  fail "the CNI plugins are missing in /usr/lib/cni (Debian containernetworking-plugins; make debian-tools)"

# Network namespace, veth pair into it, a bridge inside: the node's network.
ip netns add "$probe_ns" 2>/dev/null || fail "cannot create a network namespace (ip netns add): kernel without CONFIG_NET_NS, or no CAP_SYS_ADMIN"
in_probe() { nsenter --net="/run/netns/$probe_ns" "$@"; }
in_probe ip link add intk-chk0 type veth peer name intk-chk1 2>/dev/null || fail "cannot create a veth pair (CONFIG_VETH)"
in_probe ip link add intk-chkbr type bridge 2>/dev/null || fail "cannot create a bridge (CONFIG_BRIDGE)"
in_probe ip link set intk-chk1 master intk-chkbr 2>/dev/null || fail "cannot attach a veth to a bridge"
# Bridged traffic through iptables, per network namespace (a pod reaching a Service whose endpoint is on the same bridge).
modprobe br_netfilter 2>/dev/null || true # built in, or no modprobe: the sysctl below tells
in_probe sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null ||
  fail "net.bridge.bridge-nf-call-iptables cannot be set in a network namespace (br_netfilter, kernel 5.3 or later)"
in_probe sysctl -qw net.ipv4.ip_forward=1 2>/dev/null || fail "cannot enable IPv4 forwarding in a network namespace"
# kube-proxy's rules: nat table, conntrack state, in the namespace.
in_probe iptables -w 5 -t nat -N INTAKE-CHECK 2>/dev/null &&
  in_probe iptables -w 5 -t nat -A INTAKE-CHECK -p tcp -d 10.0.0.10 --dport 53 -j DNAT --to-destination 10.244.0.2:53 2>/dev/null ||
  fail "iptables cannot write NAT rules in a network namespace (netfilter nat, nft or legacy)"
in_probe iptables -w 5 -t filter -A FORWARD -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT 2>/dev/null ||
  fail "iptables cannot match conntrack state (nf_conntrack, xt_conntrack)"

# overlayfs on DIR's filesystem: containerd's snapshotter keeps its upper directories there.
mkdir -p "$dir"
probe_dir="$(mktemp -d "$dir/.check-XXXXXX")"
mkdir -p "$probe_dir"/{lower,upper,work,merged}
modprobe overlay 2>/dev/null || true
mount -t overlay overlay -o "lowerdir=$probe_dir/lower,upperdir=$probe_dir/upper,workdir=$probe_dir/work" "$probe_dir/merged" 2>/dev/null ||
  fail "cannot mount overlayfs with its upper directory on $(stat -f -c %T "$dir") ($dir): containerd's snapshotter needs overlayfs on ext4 or xfs"
touch "$probe_dir/merged/file" 2>/dev/null || fail "cannot write through an overlayfs mount on $dir"

# cgroups: v2 with cpu, memory and pids, or v1 with cpu, memory, pids, devices and freezer; writable.
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  for c in cpu memory pids; do
    grep -qw "$c" /sys/fs/cgroup/cgroup.controllers || fail "the cgroup v2 controller $c is not available"
  done
  mkdir "/sys/fs/cgroup/$probe_ns" 2>/dev/null || fail "cannot create a cgroup under /sys/fs/cgroup (read-only cgroupfs?)"
else
  for c in cpu memory pids devices freezer; do
    [ -d "/sys/fs/cgroup/$c" ] || fail "the cgroup v1 hierarchy $c is not mounted at /sys/fs/cgroup/$c"
    mkdir "/sys/fs/cgroup/$c/$probe_ns" 2>/dev/null || fail "cannot create a cgroup in /sys/fs/cgroup/$c (read-only cgroupfs?)"
  done
fi

# seccomp: the chart's pods ask for the RuntimeDefault profile.
grep -q '^Seccomp:' /proc/self/status && [ -f /proc/sys/kernel/seccomp/actions_avail ] ||
  fail "the kernel has no seccomp filter support (CONFIG_SECCOMP_FILTER): the chart's pods use the RuntimeDefault profile"

# One node cluster per machine: its namespace and addresses are fixed. A dead one is stopped.
source "$here/node-claim.sh"
why="$(node_claim "$dir")" || fail "$why"
echo "node-check: this machine can run the test cluster's node"
