#!/usr/bin/env bash
# Installs nats-server and FerretDB (SQLite backend) into .local/bin, built from the Go module proxy at the versions
# pinned in versions.env. Idempotent: what is already at the pinned version is kept. (The Helm chart's check has its
# own installer, infra/helm/install-tools.sh, so `npm start` and `npm test` do not build helm.)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
bin="${TOOLPLANE_LOCAL_DIR:-$root/.local}/bin"
mkdir -p "$bin"

command -v go >/dev/null || { echo "infra/local/install.sh: Go is required to build nats-server and FerretDB (https://go.dev/dl)" >&2; exit 1; }
# A module that asks for a newer Go than the one installed gets that toolchain from the module proxy.
export GOTOOLCHAIN=auto GOFLAGS=-buildvcs=false

if [ "$("$bin/nats-server" --version 2>/dev/null)" = "nats-server: $NATS_SERVER_VERSION" ]; then
  echo "nats-server $NATS_SERVER_VERSION already installed"
else
  echo "building nats-server $NATS_SERVER_VERSION"
  GOBIN="$bin" go install "$NATS_SERVER_MODULE@$NATS_SERVER_VERSION"
fi

if [ "$("$bin/ferretdb" --version 2>/dev/null | sed -n 1p)" = "version: $FERRETDB_VERSION" ]; then
  echo "ferretdb $FERRETDB_VERSION already installed"
else
  echo "building ferretdb $FERRETDB_VERSION"
  # FerretDB reads its own version from build/version/version.txt, which its release process writes from
  # `git describe` and the module archive lacks; a plain `go install` therefore builds a binary that panics
  # at start. Build from a copy of the module source with that file written, as FerretDB's docs ask.
  src=$(go mod download -json "$FERRETDB_MODULE@$FERRETDB_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$src" ] || { echo "infra/local/install.sh: could not download $FERRETDB_MODULE@$FERRETDB_VERSION" >&2; exit 1; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  cp -R "$src/." "$work/"
  chmod -R u+w "$work"
  echo "$FERRETDB_VERSION" > "$work/build/version/version.txt"
  (cd "$work" && go build -trimpath -o "$bin/ferretdb" ./cmd/ferretdb)
fi

"$bin/nats-server" --version
"$bin/ferretdb" --version | sed -n 1p
