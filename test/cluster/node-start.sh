#!/usr/bin/env bash
# Starts the test cluster with a real node (make testcluster-node): the control plane of start.sh
# plus kube-scheduler, containerd + runc, a CNI bridge, kubelet, kube-proxy, CoreDNS, and
# nats-server and Alertmanager as pods. Usage: node-start.sh [DIR] (default <repo>/.testcluster-node).
#
# Network: everything stays on this machine. The node is a network namespace (intake-node) joined
# to this one by a veth pair (10.244.255.1 here, 10.244.255.2 there); the API server listens on
# 10.244.255.1 only. containerd, kubelet and kube-proxy run inside the namespace, so the pods'
# bridge (10.244.0.0/24) and kube-proxy's iptables rules live there, not in this namespace's
# tables. Two routes here send the pod and Service ranges (10.244.0.0/24, 10.0.0.0/24) to the
# veth so tests reach pods and Services directly. No default route inside: nothing leaves.
# One node cluster per machine (the names and ranges are fixed). node-stop.sh undoes all of it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
dir="${1:-$root/.testcluster-node}"
mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
NETNS=intake-node
HOST_IF=intk-host NODE_IF=intk-node
HOST_IP=10.244.255.1 NODE_IP=10.244.255.2
POD_CIDR=10.244.0.0/24 SERVICE_CIDR=10.0.0.0/24
NODE_NAME=intake-node
CGROUP_ROOT=/intake-testcluster
LOCAL_VOLUMES=6
# nsenter joins only the network namespace: `ip netns exec` would also give each process its own
# mount namespace (and a new /sys), and the kubelet's volume mounts must be seen by containerd.
in_node() { nsenter --net="/run/netns/$NETNS" "$@"; }
log() { echo "testcluster-node: $*" >&2; }
fail() {
  log "$1"
  [ -f "$dir/kubeconfig" ] && { kubectl --kubeconfig "$dir/kubeconfig" get pods -A -o wide >&2; kubectl --kubeconfig "$dir/kubeconfig" get events -A --field-selector type=Warning >&2; } 2>/dev/null
  for f in "${@:2}"; do [ -f "$f" ] && { echo "--- $f" >&2; grep -v "filesystem info\|HasDedicatedImageFs" "$f" | tail -n 25 >&2; }; done; bash "$here/node-stop.sh" "$dir" >&2 || true; exit 1; }

if [ -f "$dir/node-pids" ] && kill -0 "$(head -1 "$dir/node-pids")" 2>/dev/null; then
  echo "testcluster node already running; kubeconfig $dir/kubeconfig"; exit 0
fi
[ "$(id -u)" = 0 ] || { log "needs root (network namespace, mounts, containerd)"; exit 1; }
source "$here/node-claim.sh"
why="$(node_claim "$dir")" || { log "$why"; exit 1; }
if ip netns list | grep -qw "$NETNS"; then bash "$here/node-stop.sh" "$dir" >&2; fi
for b in containerd runc ctr iptables /usr/lib/cni/bridge umoci; do
  command -v "$b" >/dev/null || { log "$b is missing (make debian-tools)"; exit 1; }
done
start=$(date +%s)
bash "$here/build.sh"
bash "$here/build-node.sh"
mapfile -t images < <(bash "$here/images.sh")

# --- network namespace and veth
ip netns add "$NETNS"
touch "$dir/netns"
echo "$dir" > "$NODE_OWNER_FILE"
ip link add "$HOST_IF" type veth peer name "$NODE_IF" netns "$NETNS"
ip addr add "$HOST_IP/30" dev "$HOST_IF"
ip link set "$HOST_IF" up
in_node ip link set lo up
in_node ip addr add "$NODE_IP/30" dev "$NODE_IF"
in_node ip link set "$NODE_IF" up
ip route add "$POD_CIDR" via "$NODE_IP" dev "$HOST_IF"
ip route add "$SERVICE_CIDR" via "$NODE_IP" dev "$HOST_IF"
# Per namespace: forward between the veth and the pods' bridge; let bridged traffic pass iptables
# (a pod reaching a Service whose endpoint is on the same bridge).
in_node sysctl -qw net.ipv4.ip_forward=1
modprobe br_netfilter 2>/dev/null || true
in_node sysctl -qw net.bridge.bridge-nf-call-iptables=1 || log "net.bridge.bridge-nf-call-iptables not settable (no br_netfilter): pod-to-Service-on-same-node may fail"

# --- control plane on the host side of the veth
source "$here/ports.sh"
# node-stop.sh keeps only the port files: new ones are all it takes.
if kept_ports_taken "$dir"; then log "a kept port is in use by another process; picking new ports"; rm -f "$dir/port" "$dir/etcd-port"; fi
pick_ports "$dir"
port=$(cat "$dir/port")
rm -f "$dir/kubeconfig" "$dir/node-pids"
nohup "$here/bin/testcluster" --data-dir "$dir" --port "$port" --etcd-port "$(cat "$dir/etcd-port")" \
  --bind-address "$HOST_IP" --workloads >"$dir/log" 2>&1 &
echo $! > "$dir/pid"
export KUBECONFIG="$dir/kubeconfig"
for _ in $(seq 1 600); do
  kill -0 "$(cat "$dir/pid")" 2>/dev/null || fail "the API server exited" "$dir/log"
  [ -f "$dir/kubeconfig" ] && kubectl get serviceaccount default -n default >/dev/null 2>&1 && break
  sleep 0.2
done
kubectl get serviceaccount default -n default >/dev/null 2>&1 || fail "the API server is not ready" "$dir/log"
pids=()
spawn() { local name=$1; shift; nohup "$@" >"$dir/$name.log" 2>&1 & pids+=($!); printf '%s\n' "${pids[@]}" > "$dir/node-pids"; }
spawn kube-scheduler "$here/bin/kube-scheduler" --kubeconfig "$KUBECONFIG" --leader-elect=false --secure-port=0 --v=1

# --- containerd inside the node
mkdir -p "$dir/containerd" "$dir/cni/net.d" "$dir/kubelet" "$dir/pods-log"
cat > "$dir/containerd/config.toml" <<EOF
version = 2
root = "$dir/containerd/root"
state = "$dir/containerd/state"
[grpc]
  address = "$dir/containerd/sock"
[ttrpc]
  address = "$dir/containerd/sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/containerd/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "registry.k8s.io/pause:3.10"
  stream_server_address = "127.0.0.1"
  enable_selinux = false
  # A pod sandbox asks for oom_score_adj -998; lowering it needs CAP_SYS_RESOURCE beyond what a
  # sandboxed root may have (runc: "failed to update /proc/self/oom_score_adj: Permission
  # denied"). Clamp every container's to containerd's own instead.
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$dir/cni/net.d"
EOF
cat > "$dir/cni/net.d/10-intake.conflist" <<EOF
{
  "cniVersion": "0.4.0",
  "name": "intake",
  "plugins": [
    {"type": "bridge", "bridge": "intk-br0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": "$dir/cni/ipam", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
spawn containerd nsenter --net="/run/netns/$NETNS" containerd --config "$dir/containerd/config.toml"
ctr_() { ctr --address "$dir/containerd/sock" --namespace k8s.io "$@"; }
for _ in $(seq 1 100); do ctr_ version >/dev/null 2>&1 && break; sleep 0.2; done
ctr_ version >/dev/null 2>&1 || fail "containerd did not start" "$dir/containerd.log"
# Images, from the archives (no registry). The intake image when make image built one.
for line in "${images[@]}"; do
  read -r _ archive ref <<< "$line"
  ctr_ images import --base-name "${ref%:*}" "$archive" >/dev/null
done
if [ -f "$root/build/intake-image.tar" ]; then
  ctr_ images import --base-name intake.local/intake "$root/build/intake-image.tar" >/dev/null
fi

# --- kubelet inside the node (cgroups under $CGROUP_ROOT in every v1 hierarchy, or v2's)
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then
  mkdir -p "/sys/fs/cgroup$CGROUP_ROOT"
else
  for c in /sys/fs/cgroup/*/; do [ "$(basename "$c")" = unified ] || mkdir -p "$c${CGROUP_ROOT#/}"; done
  # A new v1 cpuset starts with no CPUs and no memory nodes: give it its parent's.
  if [ -d /sys/fs/cgroup/cpuset ]; then
    for f in cpuset.cpus cpuset.mems; do cat "/sys/fs/cgroup/cpuset/$f" > "/sys/fs/cgroup/cpuset$CGROUP_ROOT/$f"; done
  fi
fi
: > "$dir/resolv.conf"
cat > "$dir/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
cgroupDriver: cgroupfs
cgroupRoot: $CGROUP_ROOT
clusterDNS: [10.0.0.10]
clusterDomain: cluster.local
resolvConf: $dir/resolv.conf
failSwapOn: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
localStorageCapacityIsolation: false
serializeImagePulls: false
maxPods: 60
volumePluginDir: $dir/kubelet/volume-plugins
podLogsDir: $dir/pods-log
containerRuntimeEndpoint: unix://$dir/containerd/sock
syncFrequency: 10s
fileCheckFrequency: 10s
EOF
spawn kubelet nsenter --net="/run/netns/$NETNS" "$here/bin/kubelet" --config "$dir/kubelet.yaml" --kubeconfig "$KUBECONFIG" \
  --root-dir "$dir/kubelet" --node-ip "$NODE_IP" --hostname-override "$NODE_NAME" --v=1

# --- kube-proxy inside the node
cat > "$dir/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $KUBECONFIG}
hostnameOverride: $NODE_NAME
mode: iptables
clusterCIDR: $POD_CIDR
bindAddress: $NODE_IP
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: [$NODE_IP/32]
iptables: {localhostNodePorts: false}
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
EOF
spawn kube-proxy nsenter --net="/run/netns/$NETNS" "$here/bin/kube-proxy" --config "$dir/kube-proxy.yaml" --v=1

for _ in $(seq 1 300); do
  kubectl get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -q True && break
  for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null || fail "a node process exited" "$dir/kubelet.log" "$dir/containerd.log" "$dir/kube-proxy.log" "$dir/kube-scheduler.log"; done
  sleep 0.5
done
kubectl get node "$NODE_NAME" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' | grep -q True || fail "the node is not Ready after 150 s" "$dir/kubelet.log"
# The kubelet registers the node tainted not-ready; the node-lifecycle controller would lift it
# once Ready, and it does not run here (it would also evict pods from a node it finds NotReady).
kubectl taint node "$NODE_NAME" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true

# Volumes for StatefulSets' claims: local PersistentVolumes on the node (the kubelet gives a local
# volume to the pod's fsGroup, so a non-root pod can write it), in the default StorageClass local.
for i in $(seq 1 $LOCAL_VOLUMES); do mkdir -p "$dir/volumes/pv$i"; done
{
  echo 'apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local, annotations: {storageclass.kubernetes.io/is-default-class: "true"}}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer'
  for i in $(seq 1 $LOCAL_VOLUMES); do
    echo "---
apiVersion: v1
kind: PersistentVolume
metadata: {name: local-pv$i}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Delete
  storageClassName: local
  local: {path: $dir/volumes/pv$i}
  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [$NODE_NAME]}]}]}}"
  done
} | kubectl apply -f - >/dev/null
kubectl apply -f "$here/manifests/coredns.yaml" -f "$here/manifests/infra.yaml" >/dev/null
kubectl -n kube-system rollout status deployment/coredns --timeout=180s >&2 || fail "CoreDNS is not ready" "$dir/kubelet.log" "$dir/containerd.log"
kubectl -n infra rollout status deployment/nats --timeout=180s >&2 || fail "nats is not ready" "$dir/kubelet.log"
kubectl -n infra rollout status deployment/alertmanager --timeout=180s >&2 || fail "Alertmanager is not ready" "$dir/kubelet.log"
echo "testcluster node ready in $(( $(date +%s) - start )) s: https://$HOST_IP:$port; export KUBECONFIG=$dir/kubeconfig"
