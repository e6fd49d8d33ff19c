{{/* Chart name, truncated to 63 characters (DNS label). */}}
{{- define "intake.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: release-chart unless the release name already contains the chart name. */}}
{{- define "intake.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A component's name: <fullname>-<component>, truncated to 63. */}}
{{- define "intake.componentName" -}}
{{- printf "%s-%s" (include "intake.fullname" .root) .component | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "intake.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "intake.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "intake.selectorLabels" -}}
app.kubernetes.io/name: {{ include "intake.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "intake.serviceAccountName" -}}
{{- $sa := index .root.Values .component "serviceAccount" -}}
{{- if $sa.create -}}
{{- default (include "intake.componentName" .) $sa.name -}}
{{- else -}}
{{- default "default" $sa.name -}}
{{- end -}}
{{- end -}}

{{- define "intake.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The ingester's settings file (no routes: in a cluster they come from route Secrets). */}}
{{- define "intake.ingesterConfig" -}}
listen: 0.0.0.0:8080
adminListen: 0.0.0.0:8081
logLevel: {{ .Values.ingester.logLevel }}
{{- with .Values.ingester.trustProxy }}
trustProxy: {{ . | quote }}
{{- end }}
limits: {{- toYaml .Values.ingester.limits | nindent 2 }}
authThrottle: {{- toYaml .Values.ingester.authThrottle | nindent 2 }}
shutdown: {{- toYaml .Values.ingester.shutdown | nindent 2 }}
mapping: {{- toYaml .Values.ingester.mapping | nindent 2 }}
deadLetter:
  path: /var/lib/intake/deadletter.jsonl
  maxBytes: {{ .Values.ingester.deadLetter.maxBytes | int64 }}
{{- end -}}
