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
{{- $admin := include "intake.componentName" (dict "root" . "component" "ingester-admin") }}
{{- $ns := .Release.Namespace }}
# The admin port answers IP addresses, localhost and these names (its Service's); any other Host gets 421.
adminAllowedHosts:
  - {{ $admin }}
  - {{ $admin }}.{{ $ns }}
  - {{ $admin }}.{{ $ns }}.svc
  - {{ $admin }}.{{ $ns }}.svc.cluster.local
  {{- range .Values.ingester.adminAllowedHosts }}
  - {{ . | quote }}
  {{- end }}
logLevel: {{ .Values.ingester.logLevel }}
{{- with .Values.ingester.trustProxy }}
trustProxy: {{ . | quote }}
{{- end }}
limits: {{- include "intake.ingesterLimits" . | nindent 2 }}
authThrottle: {{- include "intake.durations" (dict "block" .Values.ingester.authThrottle "renamed" (dict "windowSeconds" "window" "blockSeconds" "block" "failureDelayMs" "failureDelay")) | nindent 2 }}
shutdown: {{- include "intake.durations" (dict "block" .Values.ingester.shutdown "renamed" (dict "drainDelaySeconds" "drainDelay" "timeoutSeconds" "timeout")) | nindent 2 }}
{{- include "intake.handoffConfig" . }}
{{ include "intake.metricsConfig" . }}
{{ include "intake.mappingConfig" . }}
{{- include "intake.destinationsConfig" . }}
{{- with .Values.addressGuard }}
addressGuard: {{- toYaml . | nindent 2 }}
{{- end }}
tenantLimits: {{- include "intake.tenantLimits" . | nindent 2 }}
{{- end -}}

{{/*
ingester.limits as written to the config file, with maxConnections sized for the pod: left absent,
the ingester would take the open-files limit (often about a million in a container), and each
connection that holds its headers back costs about 10 KiB of memory, so a flood of them would pass
the container's memory limit long before that cap. Absent or null: an eighth of
resources.limits.memory at 10 KiB each (8192 without a memory limit); 0: not written (the
ingester's own default); any other number as given.
*/}}
{{- define "intake.ingesterLimits" -}}
{{- $l := deepCopy .Values.ingester.limits }}
{{- include "intake.preferOldKeys" (dict "block" $l "renamed" (dict "seriesTTLSeconds" "seriesTTL" "maxEventLoopDelayMs" "maxEventLoopDelay" "headersTimeoutMs" "headersTimeout" "requestTimeoutMs" "requestTimeout" "keepAliveTimeoutMs" "keepAliveTimeout" "bodyRateGraceMs" "bodyRateGrace")) }}
{{- $given := $l.maxConnections }}
{{- if kindIs "invalid" $given }}
{{- $_ := set $l "maxConnections" (include "intake.ingesterMaxConnections" . | int64) }}
{{- else if eq (int64 $given) 0 }}
{{- $_ := unset $l "maxConnections" }}
{{- end }}
{{- toYaml $l }}
{{- end -}}

{{/*
Durations are Go-style strings (30s, 5m); a key of the earlier spelling (timeoutMs: 2000) that a
user's values still give is written instead of the new key's default beside it, and the ingester
reads it with a deprecation warning (two spellings with two values would stop it).
*/}}
{{- define "intake.preferOldKeys" -}}
{{- $block := .block }}
{{- range $old, $new := .renamed }}{{ if hasKey $block $old }}{{ $_ := unset $block $new }}{{ end }}{{ end }}
{{- end -}}

{{/* A block with intake.preferOldKeys applied, as YAML. */}}
{{- define "intake.durations" -}}
{{- $block := deepCopy .block }}
{{- include "intake.preferOldKeys" (dict "block" $block "renamed" .renamed) }}
{{- toYaml $block }}
{{- end -}}

{{/* Key `new` of `block` (a duration string) as `new: value`, or the earlier key `old` as given when the values still use it. */}}
{{- define "intake.durationLine" -}}
{{- if hasKey .block .old }}{{ .old }}: {{ index .block .old }}{{ else }}{{ .new }}: {{ index .block .new | quote }}{{ end }}
{{- end -}}

{{/* A Go-style duration (or the bare seconds of an earlier key) in seconds, as a float: for pod fields in seconds. */}}
{{- define "intake.seconds" -}}
{{- $v := toString . }}
{{- if regexMatch "^[0-9]+(\\.[0-9]+)?$" $v }}{{ $v }}
{{- else }}
{{- $units := dict "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 }}
{{- $total := 0.0 }}
{{- range $part := regexFindAll "[0-9]+(\\.[0-9]+)?(ms|s|m|h)" $v -1 }}
{{- $n := regexFind "^[0-9]+(\\.[0-9]+)?" $part }}
{{- $total = addf $total (mulf (float64 $n) (get $units (trimPrefix $n $part))) }}
{{- end }}
{{- $total }}
{{- end }}
{{- end -}}

{{/* Connections whose memory (about 10 KiB each) fits in an eighth of the ingester's memory limit. */}}
{{- define "intake.ingesterMaxConnections" -}}
{{- $memory := "" }}
{{- with .Values.ingester.resources }}{{ with .limits }}{{ $memory = .memory | default "" }}{{ end }}{{ end }}
{{- $bytes := include "intake.quantityBytes" $memory }}
{{- if $bytes }}
{{- max 256 (div (int64 $bytes) (mul 8 10240)) }}
{{- else }}
{{- 8192 }}
{{- end }}
{{- end -}}

{{/* A Kubernetes memory quantity (plain, k/M/G/T or Ki/Mi/Gi/Ti) in bytes; empty when it is none of those. */}}
{{- define "intake.quantityBytes" -}}
{{- $q := toString . }}
{{- $units := dict "" 1 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" $q }}
{{- $suffix := trimPrefix $number $q }}
{{- if and $number (hasKey $units $suffix) }}
{{- mulf (float64 $number) (get $units $suffix) | int64 }}
{{- end }}
{{- end -}}

{{/* The per-tenant limit defaults, the same for the operator (--default-limits) and the ingesters. */}}
{{- define "intake.tenantLimits" -}}
{{- $l := deepCopy .Values.tenantLimits }}
{{- $_ := set $l.namespace "maxSeries" .Values.ingester.limits.maxSeriesPerNamespace }}
{{- $_ := set $l.apiKey "maxSeries" .Values.operator.defaultMaxSeries }}
{{- toYaml $l }}
{{- end -}}

{{/* sinks and spool in the ingester's settings file; files come from the volumes in ingester.yaml. */}}
{{- define "intake.handoffConfig" -}}
{{- $js := .Values.sinks.jetstream }}
{{- if or $js.enabled (not (kindIs "invalid" .Values.sinks.log.enabled)) }}
sinks:
  {{- if not (kindIs "invalid" .Values.sinks.log.enabled) }}
  log: {enabled: {{ .Values.sinks.log.enabled }}}
  {{- end }}
  {{- if $js.enabled }}
  jetstream:
    url: {{- toYaml $js.url | nindent 6 }}
    stream: {{ $js.stream }}
    subjectPrefix: {{ $js.subjectPrefix }}
    createStream: {{ $js.createStream }}
    {{ include "intake.durationLine" (dict "block" $js "old" "timeoutMs" "new" "timeout") }}
    maxInFlight: {{ $js.maxInFlight }}
    {{ include "intake.durationLine" (dict "block" $js "old" "inFlightWaitMs" "new" "inFlightWait") }}
    {{ include "intake.durationLine" (dict "block" $js "old" "reconnectWaitMs" "new" "reconnectWait") }}
    {{- if $js.tls.enabled }}
    tls:
      caFile: /etc/nats/tls/ca.crt
      {{- if $js.tls.clientCertificate }}
      certFile: /etc/nats/tls/tls.crt
      keyFile: /etc/nats/tls/tls.key
      {{- end }}
    {{- end }}
    {{- if $js.credentials.secretName }}
    {{ if eq $js.credentials.type "nkey" }}nkeySeedFile{{ else }}credsFile{{ end }}: /etc/nats/credentials/{{ $js.credentials.key }}
    {{- end }}
    streamConfig: {{- include "intake.durations" (dict "block" $js.streamConfig "renamed" (dict "maxAgeSeconds" "maxAge" "duplicateWindowSeconds" "duplicateWindow")) | nindent 6 }}
  {{- end }}
{{- end }}
{{- if include "intake.spoolEnabled" . }}
spool:
  path: /var/lib/intake/spool
  maxBytes: {{ int64 .Values.spool.maxBytes }}
  {{- with .Values.spool.maxBytesPerNamespace }}
  maxBytesPerNamespace: {{ int64 . }}
  {{- end }}
  replayBatch: {{ .Values.spool.replayBatch }}
  {{ include "intake.durationLine" (dict "block" .Values.spool "old" "replayBackoffMinMs" "new" "replayBackoffMin") }}
  {{ include "intake.durationLine" (dict "block" .Values.spool "old" "replayBackoffMaxMs" "new" "replayBackoffMax") }}
{{- end }}
{{- end -}}

{{/* Where received data points go: exposition and/or remote write (secret files from ingester.yaml). */}}
{{- define "intake.metricsConfig" -}}
{{- $rw := .Values.ingester.remoteWrite }}
exposition:
  enabled: {{ and .Values.ingester.exposition.enabled (not $rw.enabled) }}
{{- if $rw.enabled }}
remoteWrite:
  url: {{ required "ingester.remoteWrite.url is required when remoteWrite.enabled" $rw.url | quote }}
  protocol: {{ $rw.protocol | quote }}
  {{- with $rw.tenantHeader }}
  tenantHeader: {{ . | quote }}
  tenant: namespace
  {{- end }}
  {{- with $rw.headers }}
  headers: {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if and (or $rw.basicAuth.username $rw.bearerToken $rw.tls.ca $rw.tls.clientCert) (not $rw.secretName) }}
  {{- fail "ingester.remoteWrite.secretName is required for basicAuth, bearerToken or tls" }}
  {{- end }}
  {{- with $rw.basicAuth.username }}
  basicAuth: {username: {{ . | quote }}, passwordFile: /etc/intake/remote-write/password}
  {{- end }}
  {{- if $rw.bearerToken }}
  bearerTokenFile: /etc/intake/remote-write/token
  {{- end }}
  {{- if or $rw.tls.ca $rw.tls.clientCert }}
  tls:
    {{- if $rw.tls.ca }}
    caFile: /etc/intake/remote-write/ca.crt
    {{- end }}
    {{- if $rw.tls.clientCert }}
    certFile: /etc/intake/remote-write/tls.crt
    keyFile: /etc/intake/remote-write/tls.key
    {{- end }}
  {{- end }}
  batchSize: {{ $rw.batchSize }}
  {{ include "intake.durationLine" (dict "block" $rw "old" "flushIntervalMs" "new" "flushInterval") }}
  maxQueuedSamples: {{ $rw.maxQueuedSamples | int64 }}
  {{- with $rw.maxQueuedSamplesPerTenant }}
  maxQueuedSamplesPerTenant: {{ . | int64 }}
  {{- end }}
  maxQueuedBytes: {{ $rw.maxQueuedBytes | int64 }}
  {{- with $rw.maxQueuedBytesPerTenant }}
  maxQueuedBytesPerTenant: {{ . | int64 }}
  {{- end }}
  {{- if hasKey $rw "maxSampleAgeMs" }}
  maxSampleAgeMs: {{ $rw.maxSampleAgeMs | int64 }}
  {{- else }}
  maxSampleAge: {{ $rw.maxSampleAge | quote }}
  {{- end }}
  maxInFlightPerTenant: {{ $rw.maxInFlightPerTenant }}
{{- end }}
{{- end -}}

{{/* Data mapping guardrails and the dead letters (mapping and delivery failures): on the bus with JetStream, in the storage directory on the spool volume with spool.enabled, else on the pod's deadletter emptyDir. */}}
{{- define "intake.mappingConfig" -}}
mapping: {{- include "intake.durations" (dict "block" .Values.ingester.mapping "renamed" (dict "timeoutMs" "timeout")) | nindent 2 }}
deadLetter:
  path: /var/lib/intake/deadletter/deadletters.sqlite
  maxBytes: {{ .Values.ingester.deadLetter.maxBytes | int64 }}
  maxBytesPerNamespace: {{ .Values.ingester.deadLetter.maxBytesPerNamespace | int64 }}
  {{- if hasKey .Values.ingester.deadLetter "replayLeaseSeconds" }}
  replayLeaseSeconds: {{ .Values.ingester.deadLetter.replayLeaseSeconds | int64 }}
  {{- else }}
  replayLease: {{ .Values.ingester.deadLetter.replayLease | quote }}
  {{- end }}
  {{- with .Values.ingester.deadLetter.bulkReplay }}
  bulkReplay:
    maxRunning: {{ .maxRunning | int64 }}
    maxRate: {{ .maxRate }}
    allNamespaces: {{ .allNamespaces | quote }}
  {{- end }}
{{- end -}}

{{/* The spool is on when asked for, and whenever destinations are delivered without the bus: it is then their queue. */}}
{{- define "intake.spoolEnabled" -}}
{{- if or .Values.spool.enabled (and .Values.destinations (not .Values.sinks.jetstream.enabled)) }}true{{ end -}}
{{- end -}}

{{/* The destination names, comma-separated: the operator checks spec.destinations against them. */}}
{{- define "intake.destinationNames" -}}
{{- $names := list }}
{{- range .Values.destinations }}{{ $names = append $names .name }}{{ end }}
{{- join "," $names -}}
{{- end -}}

{{/* destinations in the ingester's settings file, as given (the ingester applies defaults and checks them again). */}}
{{- define "intake.destinationsConfig" -}}
{{- include "intake.checkDestinations" . }}
{{- with .Values.destinations }}
destinations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/*
Fails the render for destinations that cannot work: a name used twice, credentials in a Secret
that is not mounted (destinationSecrets), both basicAuth and bearerTokenFile, and Alertmanager
destinations on several replicas without JetStream (each replica would keep re-sending the alerts
it received from its own spool, so a resolve received by another replica would not hold).
*/}}
{{- define "intake.checkDestinations" -}}
{{- $names := list }}
{{- $prefix := "/etc/intake/destinations/" }}
{{- $several := or .Values.ingester.autoscaling.enabled (gt (int .Values.ingester.replicas) 1) }}
{{- range $i, $d := .Values.destinations }}
{{- $where := printf "destinations[%d] (%s)" $i $d.name }}
{{- if has $d.name $names }}{{ fail (printf "%s: the name %s is used twice" $where $d.name) }}{{ end }}
{{- $names = append $names $d.name }}
{{- if and $d.alertmanager (not $.Values.sinks.jetstream.enabled) $several }}
{{- fail (printf "%s: Alertmanager destinations without sinks.jetstream need one ingester (ingester.replicas=1, autoscaling off): each replica re-sends the alerts of its own spool, so a resolve received by another replica would not hold. Enable sinks.jetstream for several replicas." $where) }}
{{- end }}
{{- $client := default dict (default $d.http $d.alertmanager) }}
{{- if and $client.basicAuth $client.bearerTokenFile }}{{ fail (printf "%s: give basicAuth or bearerTokenFile, not both" $where) }}{{ end }}
{{- $files := list }}
{{- with $client.basicAuth }}{{ $files = append $files .passwordFile }}{{ end }}
{{- with $client.bearerTokenFile }}{{ $files = append $files . }}{{ end }}
{{- $tls := default dict $client.tls }}
{{- range $k := list "caFile" "certFile" "keyFile" }}{{ with index $tls $k }}{{ $files = append $files . }}{{ end }}{{ end }}
{{- range $f := $files }}
{{- if hasPrefix $prefix $f }}
{{- $secret := first (splitList "/" (trimPrefix $prefix $f)) }}
{{- if not (has $secret $.Values.destinationSecrets) }}
{{- fail (printf "%s: %s is in Secret %s, which is not mounted: add it to destinationSecrets" $where $f $secret) }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
