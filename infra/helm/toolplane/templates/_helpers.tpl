{{/*
What each service is, from its code rather than from values: its entry point, whether it reads MongoDB
(each services/NAME/src/service.ts: `store: 'none'` does not), and the Secret keys its configuration reads (required ones
stop the pod from starting when missing; optional ones may be absent).
*/}}
{{- define "toolplane.catalog" -}}
registry:
  mongodb: true
  secretKeys: []
  optionalSecretKeys: []
tool-adapter:
  mongodb: true
  secretKeys: [ADAPTER_SIGNING_KEY, TOOL_ADAPTER_SECRET_KEY]
  optionalSecretKeys: []
approval:
  mongodb: true
  secretKeys: []
  optionalSecretKeys: [APPROVAL_WEBHOOKS]
secret-broker:
  mongodb: true
  secretKeys: [SECRET_BROKER_KEKS, SECRET_BROKER_RECIPIENTS]
  optionalSecretKeys: []
audit-projector:
  mongodb: true
  secretKeys: []
  optionalSecretKeys: []
flow-runner:
  mongodb: false
  secretKeys: [FLOW_RUNNER_SIGNING_KEY]
  optionalSecretKeys: []
mcp-endpoint:
  mongodb: false
  secretKeys: []
  optionalSecretKeys: []
console:
  mongodb: false
  secretKeys: [CONSOLE_SESSION_KEY]
  optionalSecretKeys: []
{{- end -}}

{{- define "toolplane.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "toolplane.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "toolplane.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "toolplane.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* A component's resource name: <fullname>-<component>, within the 63 characters a Service name may have. */}}
{{- define "toolplane.componentName" -}}
{{- printf "%s-%s" (include "toolplane.fullname" .root) .name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "toolplane.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/part-of: toolplane
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{- define "toolplane.selectorLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{- define "toolplane.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "toolplane.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The enabled components, in the catalog's order, as a list of names. */}}
{{- define "toolplane.enabledComponents" -}}
{{- $catalog := include "toolplane.catalog" . | fromYaml -}}
{{- $names := list -}}
{{- range $name := list "registry" "tool-adapter" "approval" "secret-broker" "audit-projector" "flow-runner" "mcp-endpoint" "console" -}}
{{- $values := index $.Values.components $name | default dict -}}
{{- if and (hasKey $catalog $name) (ne (toString (dig "enabled" true $values)) "false") -}}
{{- $names = append $names $name -}}
{{- end -}}
{{- end -}}
{{- toYaml $names -}}
{{- end -}}

{{/*
Settings that are secrets, or may hold one: never rendered into a ConfigMap. The chart fails instead, naming the
setting, so a key pasted into values does not end up readable by anyone who may read ConfigMaps.
*/}}
{{- define "toolplane.refuseSecretSettings" -}}
{{- $secretNames := list "MONGODB_URL" "TOOLPLANE_TRUSTED_KEYS" "ADAPTER_SIGNING_KEY" "TOOL_ADAPTER_SECRET_KEY" "SECRET_BROKER_KEKS" "SECRET_BROKER_RECIPIENTS" "FLOW_RUNNER_SIGNING_KEY" "CONSOLE_SESSION_KEY" "APPROVAL_WEBHOOKS" "OTEL_EXPORTER_OTLP_HEADERS" "OTEL_EXPORTER_OTLP_TRACES_HEADERS" -}}
{{- range $key, $value := .env -}}
{{- if or (has $key $secretNames) (regexMatch "(PASSWORD|_SECRET|_KEY|_KEYS|_KEKS|_HEADERS|_CREDENTIALS)$" $key) -}}
{{- fail (printf "%s: %s is a secret setting; give it through the Secret (existingSecret or secretEnv), not env" $.where $key) -}}
{{- end -}}
{{- if and (eq $key "NATS_URL") (contains "@" (toString $value)) -}}
{{- fail (printf "%s: NATS_URL carries credentials; give it through the Secret (externalNats.urlFromSecret)" $.where) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The NATS URL when it is a plain setting (empty when it comes from the Secret). */}}
{{- define "toolplane.natsUrl" -}}
{{- if .Values.nats.enabled -}}
{{- /* The NATS chart's client Service: its fullname, computed as that chart does. */ -}}
{{- $nats := .Values.nats.fullnameOverride | default (ternary .Release.Name (printf "%s-nats" .Release.Name) (contains "nats" .Release.Name)) -}}
{{- printf "nats://%s:4222" ($nats | trunc 63 | trimSuffix "-") -}}
{{- else if .Values.externalNats.urlFromSecret -}}
{{- else if .Values.externalNats.url -}}
{{- if contains "@" .Values.externalNats.url -}}
{{- fail "externalNats.url carries credentials; put NATS_URL in the Secret and set externalNats.urlFromSecret=true" -}}
{{- end -}}
{{- .Values.externalNats.url -}}
{{- else -}}
{{- fail "no NATS: set nats.enabled=true (the NATS chart), externalNats.url, or externalNats.urlFromSecret=true" -}}
{{- end -}}
{{- end -}}

{{/* NATS_STREAM_REPLICAS: three on the chart's NATS cluster, else what externalNats says. */}}
{{- define "toolplane.streamReplicas" -}}
{{- if .Values.nats.enabled -}}
{{- if and .Values.nats.config.cluster.enabled (ge (int .Values.nats.config.cluster.replicas) 3) -}}3{{- else -}}1{{- end -}}
{{- else -}}
{{- $replicas := toString .Values.externalNats.streamReplicas -}}
{{- if not (has $replicas (list "1" "3")) -}}
{{- fail "externalNats.streamReplicas must be 1 (one NATS server) or 3 (a three-node cluster)" -}}
{{- end -}}
{{- $replicas -}}
{{- end -}}
{{- end -}}
