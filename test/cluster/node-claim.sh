# Sourced by node-check.sh and node-start.sh. The node cluster's names and address ranges are
# fixed, so one runs per machine; /run/intake-node.owner names the checkout whose cluster holds
# them. A cluster whose processes are gone (a test run killed half-way, a session that stopped
# before its cleanup ran) is not in anyone's way: it is stopped here, so the next checkout on the
# machine (a CI run beside a developer's tree) can start instead of failing on leftovers.
NODE_OWNER_FILE=/run/intake-node.owner

# node_cluster_alive OWNER_DIR: does a process of that cluster still run?
node_cluster_alive() {
  local owner="$1" pid
  [ -n "$(ip netns pids intake-node 2>/dev/null)" ] && return 0
  [ -n "$owner" ] || return 1
  for pid in $(cat "$owner/node-pids" "$owner/pid" 2>/dev/null); do
    kill -0 "$pid" 2>/dev/null && return 0
  done
  return 1
}

# node_claim DIR: succeeds when DIR may start the node cluster, after stopping a dead cluster of
# another checkout; fails, printing why, when a live one holds the names.
node_claim() {
  local dir="$1" owner=""
  ip netns list | grep -qw intake-node || return 0
  [ -f "$NODE_OWNER_FILE" ] && owner="$(cat "$NODE_OWNER_FILE")"
  # Ours (node-start.sh stops it before starting afresh).
  if [ "$owner" = "$dir" ] || { [ -z "$owner" ] && [ -f "$dir/netns" ]; }; then return 0; fi
  if node_cluster_alive "$owner"; then
    echo "the network namespace intake-node is in use by a running node cluster of ${owner:-another checkout}; stop it first (test/cluster/node-stop.sh ${owner:-DIR})"
    return 1
  fi
  echo "testcluster-node: stopping the dead node cluster of ${owner:-an unknown checkout} (no process of it runs)" >&2
  if [ -n "$owner" ] && [ -d "$owner" ]; then
    bash "$(dirname "${BASH_SOURCE[0]}")/node-stop.sh" "$owner" >&2
  else
    # Its directory is unknown: its mounts stay where they are (they hold nothing of ours); the
    # names and ranges are what block a new cluster. The routes go with the veth.
    ip link del intk-host 2>/dev/null
    ip netns del intake-node 2>/dev/null
    for n in $(ip netns list | awk '/^cni-/ {print $1}'); do ip netns del "$n" 2>/dev/null; done
  fi
  rm -f "$NODE_OWNER_FILE"
  ! ip netns list | grep -qw intake-node || { echo "the dead node cluster's network namespace intake-node could not be removed"; return 1; }
}
