#!/usr/bin/env bash
# Installs what infra/helm/check.sh needs: helm and kubeconform into .local/bin, built from the Go module proxy at the
# versions pinned in infra/local/versions.env, and the Kubernetes JSON schemas kubeconform validates against into
# .local/kubernetes-json-schema. Idempotent: what is already at the pinned version is kept.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../local/versions.env
source "$root/infra/local/versions.env"
bin="${TOOLPLANE_LOCAL_DIR:-$root/.local}/bin"
mkdir -p "$bin"

command -v go >/dev/null || { echo "infra/helm/install-tools.sh: Go is required to build helm and kubeconform (https://go.dev/dl)" >&2; exit 1; }
export GOTOOLCHAIN=auto GOFLAGS=-buildvcs=false

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
  command -v python3 >/dev/null || { echo "infra/helm/install-tools.sh: python3 with pip is required to fetch the Kubernetes JSON schemas" >&2; exit 1; }
  download=$(mktemp -d)
  python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$download" "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
  wheel="$download/kubernetes_validate-$KUBERNETES_VALIDATE_VERSION-py3-none-any.whl"
  echo "$KUBERNETES_VALIDATE_SHA256  $wheel" | sha256sum --check --quiet - \
    || { echo "infra/helm/install-tools.sh: kubernetes-validate $KUBERNETES_VALIDATE_VERSION does not have the pinned digest" >&2; exit 1; }
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
            sys.exit(f'infra/helm/install-tools.sh: the wheel has no strict schemas for Kubernetes {version}')
        os.makedirs(os.path.join(target, folder), exist_ok=True)
        for name in names:
            text = archive.read(name).decode()
            text = text.replace('"$ref": "/api/_definitions.json#', '"$ref": "_definitions.json#')
            text = text.replace('"$id": "https://kubernetes.io/api/', '"$comment": "https://kubernetes.io/api/')
            if re.search(r'"\$(id|ref)": "(?!#|_definitions\.json#)', text):
                sys.exit(f'infra/helm/install-tools.sh: {name} refers to a schema outside the wheel')
            with open(os.path.join(target, name[len(prefix):]), 'w') as out:
                out.write(text)
PY
  rm -rf "$download"
  echo "$stamp" > "$schemas/.installed"
fi

echo "helm $(module_version "$bin/helm"), kubeconform $(module_version "$bin/kubeconform")"
