#!/usr/bin/env bash
# CI's check of the Helm chart (infra/helm/toolplane): `helm lint`, then `helm template` with the default values and
# with each production-like values file in the chart's ci/ folder, every rendering validated by kubeconform -strict
# against the Kubernetes JSON schemas infra/helm/install-tools.sh fetched, for every version in KUBERNETES_VERSIONS. Then
# it proves the check can fail: renderings with a wrong type, an unknown field, an unknown kind and a secret in a
# ConfigMap setting must each be rejected. Needs only what install-tools.sh installs; reads nothing from the network.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
# shellcheck source=../local/versions.env
source "$root/infra/local/versions.env"
local_dir="${TOOLPLANE_LOCAL_DIR:-$root/.local}"
helm="$local_dir/bin/helm"
kubeconform="$local_dir/bin/kubeconform"
schemas="$local_dir/kubernetes-json-schema"
chart="$here/toolplane"

for tool in "$helm" "$kubeconform"; do
  [ -x "$tool" ] || { echo "infra/helm/check.sh: $tool is missing; run infra/helm/install-tools.sh" >&2; exit 1; }
done
[ -f "$schemas/.installed" ] || { echo "infra/helm/check.sh: no Kubernetes JSON schemas in $schemas; run infra/helm/install-tools.sh" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Helm refuses to render a chart whose dependencies are not in charts/, whatever their condition says, and the NATS
# chart's repository cannot be reached from CI. So the chart is rendered from a copy without the `dependencies:` block:
# exactly what an install with nats.enabled=false renders, since the condition leaves the NATS chart out then.
cp -R "$chart" "$work/toolplane"
awk '/^dependencies:/ { skip = 1; next } skip && /^[^[:space:]#-]/ { skip = 0 } !skip' "$chart/Chart.yaml" > "$work/toolplane/Chart.yaml"
grep -q '^dependencies:' "$work/toolplane/Chart.yaml" && { echo "infra/helm/check.sh: could not drop the dependencies from the chart's copy" >&2; exit 1; }
rendered="$work/toolplane"

# The ServiceMonitor is the Prometheus Operator's CRD, whose schema the Kubernetes schemas do not have: it alone is
# skipped (and counted below); any other kind without a schema fails the check.
validate() {
  "$kubeconform" -strict -summary -kubernetes-version "$1" \
    -skip monitoring.coreos.com/v1/ServiceMonitor \
    -schema-location "$schemas/{{ .NormalizedKubernetesVersion }}-local{{ .StrictSuffix }}/{{ .ResourceKind }}{{ .KindSuffix }}.json" -
}

# The settings CI renders the defaults with: no NATS chart (see above), so an external NATS.
external_nats=(--set nats.enabled=false --set externalNats.url=nats://nats.toolplane.svc:4222)

count_kind() { grep -c "^kind: $2\$" "$1" || true; }

expect_count() {
  local file=$1 kind=$2 want=$3 got
  got=$(count_kind "$file" "$kind")
  [ "$got" = "$want" ] || { echo "infra/helm/check.sh: $(basename "$file"): $got $kind, expected $want" >&2; exit 1; }
}

echo "-- helm lint"
# The chart as published: only the missing NATS dependency may be warned about.
"$helm" lint "$chart" "${external_nats[@]}"
"$helm" lint --strict "$rendered" "${external_nats[@]}"
for values in "$chart"/ci/*.yaml; do
  "$helm" lint --strict "$rendered" -f "$values"
done

for version in $KUBERNETES_VERSIONS; do
  echo "-- Kubernetes $version: default values (external NATS)"
  out="$work/default-$version.yaml"
  "$helm" template toolplane "$rendered" --kube-version "$version" "${external_nats[@]}" > "$out"
  validate "$version" < "$out"
  for kind in Deployment ConfigMap Service PodDisruptionBudget; do expect_count "$out" "$kind" 8; done
  expect_count "$out" ServiceMonitor 0

  echo "-- Kubernetes $version: default values with the NATS chart's cluster"
  out="$work/nats-$version.yaml"
  "$helm" template toolplane "$rendered" --kube-version "$version" > "$out"
  validate "$version" < "$out"
  [ "$(grep -c 'NATS_STREAM_REPLICAS: "3"' "$out")" = 8 ] || { echo "infra/helm/check.sh: with the NATS cluster every service must keep 3 stream replicas" >&2; exit 1; }
  [ "$(grep -c 'NATS_URL: "nats://toolplane-nats:4222"' "$out")" = 8 ] || { echo "infra/helm/check.sh: with the NATS chart every service must use its Service" >&2; exit 1; }

  for values in "$chart"/ci/*.yaml; do
    echo "-- Kubernetes $version: $(basename "$values")"
    out="$work/$(basename "$values" .yaml)-$version.yaml"
    "$helm" template toolplane "$rendered" --kube-version "$version" -f "$values" > "$out"
    validate "$version" < "$out"
    for kind in Deployment ConfigMap Service; do expect_count "$out" "$kind" 8; done
  done
  # production.yaml: the ServiceMonitors kubeconform skipped are there, and NATS credentials stay in the Secrets.
  out="$work/production-$version.yaml"
  expect_count "$out" ServiceMonitor 8
  ! grep -q '^  NATS_URL:' "$out" || { echo "infra/helm/check.sh: production.yaml: NATS_URL must come from the Secret, not a ConfigMap" >&2; exit 1; }
  grep -q 'ADAPTER_CONCURRENCY: "64"' "$out" || { echo "infra/helm/check.sh: production.yaml: a component's env must reach its ConfigMap" >&2; exit 1; }
done

# The check must be able to fail. Each rendering below is broken in one way, and the check passes only if it is
# rejected, for the reason named.
expect_rejected() {
  local label=$1 pattern=$2 output
  shift 2
  if output=$("$@" 2>&1); then
    echo "infra/helm/check.sh: self-test \"$label\" was accepted; it must be rejected" >&2
    echo "$output" >&2
    exit 1
  fi
  grep -q -- "$pattern" <<<"$output" || {
    echo "infra/helm/check.sh: self-test \"$label\" was rejected, but not for the expected reason ($pattern)" >&2
    echo "$output" >&2
    exit 1
  }
  echo "rejected as it must be: $label"
}

render_and_validate() {
  local version=$1
  shift
  "$helm" template toolplane "$rendered" --kube-version "$version" "${external_nats[@]}" "$@" | validate "$version"
}

with_unknown_kind() {
  local version=$1
  { "$helm" template toolplane "$rendered" --kube-version "$version" "${external_nats[@]}"
    printf -- '---\napiVersion: toolplane.example.com/v1\nkind: Widget\nmetadata:\n  name: unknown\n'
  } | validate "$version"
}

echo "-- self-test: broken renderings are rejected"
newest=${KUBERNETES_VERSIONS##* }
expect_rejected "a port that is not a number" "got string, want integer" \
  render_and_validate "$newest" --set-string httpPort=eighty
expect_rejected "an unknown field in the pod's securityContext" "runAsUsr" \
  render_and_validate "$newest" --set-json 'podSecurityContext={"runAsNonRoot":true,"runAsUsr":1000}'
expect_rejected "a kind without a schema" "could not find schema for Widget" \
  with_unknown_kind "$newest"
expect_rejected "a key among the ConfigMap settings" "CONSOLE_SESSION_KEY is a secret setting" \
  "$helm" template toolplane "$rendered" "${external_nats[@]}" --set components.console.env.CONSOLE_SESSION_KEY=not-here
expect_rejected "a NATS URL with a password among the ConfigMap settings" "carries credentials" \
  "$helm" template toolplane "$rendered" --set nats.enabled=false --set externalNats.url=nats://adapter:hunter2@nats:4222

echo "helm chart: valid for Kubernetes $KUBERNETES_VERSIONS"
