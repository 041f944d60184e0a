#!/usr/bin/env bash
# Stops what start.sh started (the same $TOOLPLANE_LOCAL_DIR), gracefully and then for good.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
run="${TOOLPLANE_LOCAL_DIR:-$root/.local}/run"
for name in ferretdb nats-server; do
  pidfile="$run/$name.pid"
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "stopped $name (pid $pid)"
  fi
  rm -f "$pidfile"
done
