# Sourced by start.sh and node-start.sh: the control plane's ports, picked once per DIR and kept
# (a restart in the same DIR keeps its address, as an API server restart does).
free_port() { node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"; }
port_free() { node -e "const s=require('net').createServer();s.once('error',()=>process.exit(1));s.listen($1,'127.0.0.1',()=>s.close(()=>process.exit(0)))"; }
# etcd's peer listener takes the port after its client port: both must be free.
etcd_ports_free() { port_free "$1" && port_free $(($1 + 1)); }
free_etcd_port() { local p; for _ in $(seq 1 20); do p=$(free_port); etcd_ports_free "$p" && { echo "$p"; return; }; done; echo "no free pair of ports for etcd" >&2; return 1; }
# Whether DIR keeps ports that another process has taken since (an outgoing connection's
# ephemeral port can land on one between runs).
kept_ports_taken() { [ -f "$1/port" ] && ! { port_free "$(cat "$1/port")" && etcd_ports_free "$(cat "$1/etcd-port")"; }; }
pick_ports() {
  [ -f "$1/port" ] || free_port > "$1/port"
  [ -f "$1/etcd-port" ] || free_etcd_port > "$1/etcd-port"
}
