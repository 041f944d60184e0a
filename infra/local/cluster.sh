#!/usr/bin/env bash
# A three-node NATS JetStream cluster on this machine, for running the services with replicated streams
# (NATS_STREAM_REPLICAS=3) and for testing what survives the loss of a node.
#
#   infra/local/cluster.sh start DIR   starts nodes n1, n2, n3 (each with infra/nats/cluster-node.conf, its file
#                                      store in DIR/n1 … DIR/n3, its log in DIR/nX.log) on 127.0.0.1, waits until
#                                      every node is healthy and the cluster has a JetStream meta leader, and prints
#                                        NATS_URL=nats://127.0.0.1:a,nats://127.0.0.1:b,nats://127.0.0.1:c
#                                        NATS_MONITOR_URLS=http://127.0.0.1:x,http://127.0.0.1:y,http://127.0.0.1:z
#                                      A cluster already running in DIR is left as it is and its URLs printed again.
#   infra/local/cluster.sh stop DIR    stops the nodes started in DIR (TERM, then KILL after 5 s); the data stays,
#                                      so a later start in DIR has the streams back.
#
# Ports: CLUSTER_CLIENT_PORTS, CLUSTER_ROUTE_PORTS and CLUSTER_MONITOR_PORTS, three comma-separated ports each
# (e.g. CLUSTER_CLIENT_PORTS=4222,4223,4224); each one not given is chosen free by the system at start. The ports of
# a start are kept in DIR/nodes (one line per node: name pid client-port route-port monitor-port) for stop and for
# tests that want to kill one node.
#
# Then run the services with NATS_URL as printed and NATS_STREAM_REPLICAS=3. The nodes flush to disk on the default
# interval, like infra/local/start.sh's single server: an acknowledged write is on a majority of the nodes, which
# survives one node dying, not the whole machine losing power (see infra/docker/nats.conf for sync_interval: always).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# The nats-server infra/local/install.sh built, where start.sh and the tests take it from.
bin="$root/.local/bin/nats-server"
conf="$root/infra/nats/cluster-node.conf"
names=(n1 n2 n3)

usage() { echo "usage: infra/local/cluster.sh start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
command=$1
dir=$2
nodes="$dir/nodes"

alive() { kill -0 "$1" 2>/dev/null; }

print_urls() {
  local clients=() monitors=() name pid client route monitor
  while read -r name pid client route monitor; do
    clients+=("nats://127.0.0.1:$client")
    monitors+=("http://127.0.0.1:$monitor")
  done <"$nodes"
  (IFS=,; echo "NATS_URL=${clients[*]}"; echo "NATS_MONITOR_URLS=${monitors[*]}")
}

# Three ports: the given list, or three the system says are free (held open together, so they are distinct).
ports() {
  if [ -n "${1:-}" ]; then
    IFS=, read -r -a given <<<"$1"
    [ "${#given[@]}" -eq 3 ] || { echo "infra/local/cluster.sh: $2 must be three comma-separated ports, not \"$1\"" >&2; exit 2; }
    echo "${given[*]}"
    return
  fi
  node -e '
    const net = require("node:net");
    const servers = [0, 1, 2].map(() => net.createServer());
    Promise.all(servers.map((s) => new Promise((ok) => s.listen(0, "127.0.0.1", ok)))).then(() => {
      console.log(servers.map((s) => s.address().port).join(" "));
      servers.forEach((s) => s.close());
    });'
}

start() {
  [ -x "$bin" ] || { echo "infra/local/cluster.sh: $bin is missing; run: npm run infra:install" >&2; exit 1; }
  mkdir -p "$dir"
  if [ -f "$nodes" ]; then
    local running=0 name pid rest
    while read -r name pid rest; do alive "$pid" && running=$((running + 1)); done <"$nodes"
    if [ "$running" -eq 3 ]; then
      echo "cluster already running in $dir" >&2
      print_urls
      return
    fi
    [ "$running" -eq 0 ] || { echo "infra/local/cluster.sh: only $running of 3 nodes of $dir are running; run: infra/local/cluster.sh stop $dir" >&2; exit 1; }
  fi
  local client_ports route_ports monitor_ports
  read -r -a client_ports <<<"$(ports "${CLUSTER_CLIENT_PORTS:-}" CLUSTER_CLIENT_PORTS)"
  read -r -a route_ports <<<"$(ports "${CLUSTER_ROUTE_PORTS:-}" CLUSTER_ROUTE_PORTS)"
  read -r -a monitor_ports <<<"$(ports "${CLUSTER_MONITOR_PORTS:-}" CLUSTER_MONITOR_PORTS)"

  # Job control: each node gets a process group of its own, so a terminal's Ctrl-C does not reach it.
  set -m
  : >"$nodes.new"
  local i
  for i in 0 1 2; do
    mkdir -p "$dir/${names[$i]}"
    TP_NODE_NAME="${names[$i]}" TP_CLIENT_PORT="${client_ports[$i]}" TP_CLUSTER_PORT="${route_ports[$i]}" \
      TP_MONITOR_PORT="${monitor_ports[$i]}" TP_STORE_DIR="$dir/${names[$i]}" \
      TP_ROUTE_1="nats-route://127.0.0.1:${route_ports[0]}" TP_ROUTE_2="nats-route://127.0.0.1:${route_ports[1]}" \
      TP_ROUTE_3="nats-route://127.0.0.1:${route_ports[2]}" \
      nohup "$bin" -c "$conf" </dev/null >"$dir/${names[$i]}.log" 2>&1 &
    echo "${names[$i]} $! ${client_ports[$i]} ${route_ports[$i]} ${monitor_ports[$i]}" >>"$nodes.new"
  done
  mv "$nodes.new" "$nodes"

  # Ready: every node healthy (JetStream up and current with the meta leader) and a meta leader elected.
  local name pid client route monitor healthy leader
  for _ in $(seq 1 300); do
    healthy=0
    while read -r name pid client route monitor; do
      alive "$pid" || { echo "infra/local/cluster.sh: node $name exited; see $dir/$name.log" >&2; tail -5 "$dir/$name.log" >&2; stop; exit 1; }
      curl -fsS "http://127.0.0.1:$monitor/healthz?js-enabled-only=true" >/dev/null 2>&1 &&
        curl -fsS "http://127.0.0.1:$monitor/healthz" >/dev/null 2>&1 && healthy=$((healthy + 1))
    done <"$nodes"
    leader=$(curl -fsS "http://127.0.0.1:${monitor_ports[0]}/jsz" 2>/dev/null | sed -n 's/.*"leader": *"\([^"]*\)".*/\1/p' | head -1)
    if [ "$healthy" -eq 3 ] && [ -n "$leader" ]; then
      print_urls
      return
    fi
    sleep 0.1
  done
  echo "infra/local/cluster.sh: the cluster in $dir did not elect a JetStream meta leader in 30 s; see $dir/n*.log" >&2
  stop
  exit 1
}

stop() {
  [ -f "$nodes" ] || return 0
  local name pid rest
  while read -r name pid rest; do
    if alive "$pid"; then kill -TERM "$pid"; fi
  done <"$nodes"
  while read -r name pid rest; do
    for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then kill -KILL "$pid"; fi
    echo "stopped $name (pid $pid)" >&2
  done <"$nodes"
  rm -f "$nodes"
}

case "$command" in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
