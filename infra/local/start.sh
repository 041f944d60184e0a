#!/usr/bin/env bash
# Starts the local nats-server (JetStream, file storage) and FerretDB (SQLite) in the background, each in a process
# group of its own, with their data under $TOOLPLANE_LOCAL_DIR (default .local), and waits until both accept connections.
# Ports: NATS_PORT (4222), NATS_MONITOR_PORT (8222), MONGO_PORT (27017), FERRETDB_DEBUG_PORT (8088).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
local_dir="${TOOLPLANE_LOCAL_DIR:-$root/.local}"
bin="$root/.local/bin"
nats_port="${NATS_PORT:-4222}"
monitor_port="${NATS_MONITOR_PORT:-8222}"
mongo_port="${MONGO_PORT:-27017}"
debug_port="${FERRETDB_DEBUG_PORT:-8088}"
run="$local_dir/run"
data="$local_dir/data"
mkdir -p "$run" "$data/nats" "$data/ferretdb" "$local_dir/logs"

for b in nats-server ferretdb; do
  [ -x "$bin/$b" ] || { echo "infra/local/start.sh: $bin/$b is missing; run: npm run infra:install" >&2; exit 1; }
done

# Job control: each background server gets a process group of its own, so a terminal's Ctrl-C (sent to the
# foreground group, `npm start` included) does not reach them; `npm start` stops them after the services drained.
set -m

alive() { [ -f "$run/$1.pid" ] && kill -0 "$(cat "$run/$1.pid")" 2>/dev/null; }

if alive nats-server; then
  echo "nats-server already running (pid $(cat "$run/nats-server.pid"))"
else
  # JetStream flushes to disk every sync_interval (default 2 minutes); production sets `sync_interval: always`
  # (see docker-compose.yml). The local server keeps the default: a power cut is not what it is for.
  nohup "$bin/nats-server" --jetstream --store_dir "$data/nats" --addr 127.0.0.1 --port "$nats_port" \
    --http_port "$monitor_port" --server_name "toolplane-local-$nats_port" \
    >"$local_dir/logs/nats-server.log" 2>&1 &
  echo $! >"$run/nats-server.pid"
fi

if alive ferretdb; then
  echo "ferretdb already running (pid $(cat "$run/ferretdb.pid"))"
else
  nohup "$bin/ferretdb" --handler=sqlite --sqlite-url="file:$data/ferretdb/" --state-dir="$data/ferretdb" \
    --listen-addr="127.0.0.1:$mongo_port" --debug-addr="127.0.0.1:$debug_port" --telemetry=disable \
    --log-level=warn >"$local_dir/logs/ferretdb.log" 2>&1 &
  echo $! >"$run/ferretdb.pid"
fi

wait_for() { # name, probe command
  for _ in $(seq 1 100); do
    if eval "$2" >/dev/null 2>&1; then return 0; fi
    alive "$1" || { echo "infra/local/start.sh: $1 exited; see $local_dir/logs/$1.log" >&2; tail -5 "$local_dir/logs/$1.log" >&2; exit 1; }
    sleep 0.1
  done
  echo "infra/local/start.sh: $1 did not become ready in 10 s; see $local_dir/logs/$1.log" >&2
  exit 1
}
wait_for nats-server "curl -fsS 'http://127.0.0.1:$monitor_port/healthz?js-enabled-only=true'"
wait_for ferretdb "exec 3<>/dev/tcp/127.0.0.1/$mongo_port"

echo "NATS_URL=nats://127.0.0.1:$nats_port"
echo "MONGODB_URL=mongodb://127.0.0.1:$mongo_port"
