{{/*
The PrometheusRule group of alerts per destination (monitoring.prometheusRule.destinations):
circuit open, backlog older than a threshold, dead letters growing, auto-paused. Each links its
runbook entry in docs/operations.md (runbookUrl + the alert's anchor); any can be left out with
monitoring.prometheusRule.disabled.<AlertName>: true.
*/}}
{{- define "intake.destinationAlerts" -}}
{{- $rule := .Values.monitoring.prometheusRule }}
{{- $d := $rule.destinations }}
{{- $off := $rule.disabled | default dict }}
{{- $alerts := list }}
{{- if not (index $off "IntakeDestinationCircuitOpen") }}
{{- $alerts = append $alerts (dict
  "alert" "IntakeDestinationCircuitOpen"
  "expr" "max by (destination) (intake_destination_circuit_state) > 0"
  "for" $d.circuitOpen.for
  "severity" $d.circuitOpen.severity
  "summary" (printf "The circuit breaker of destination {{ $labels.destination }} has not closed for %s: its events wait, undelivered." $d.circuitOpen.for)
  "description" "The destination failed often enough to open its circuit (intake_destination_circuit_state 2 open, 1 half-open probing); events wait in the bus or the outbox and are not dead-lettered meanwhile. Fix the receiver; the circuit closes on the first successful probe.") }}
{{- end }}
{{- if not (index $off "IntakeDestinationBacklogOld") }}
{{- $alerts = append $alerts (dict
  "alert" "IntakeDestinationBacklogOld"
  "expr" (printf "max by (destination) (intake_destination_oldest_pending_seconds) > %s" (include "intake.seconds" $d.backlogOld.olderThan))
  "for" $d.backlogOld.for
  "severity" $d.backlogOld.severity
  "summary" (printf "The oldest event waiting for destination {{ $labels.destination }} is older than %s." $d.backlogOld.olderThan)
  "description" "Events for it are accepted but not delivered: the receiver fails or is slow (see IntakeDestinationCircuitOpen and intake_destination_retries_total by reason), the destination is paused, or delivery is slower than arrivals.") }}
{{- end }}
{{- if not (index $off "IntakeDestinationDeadLettersGrowing") }}
{{- $alerts = append $alerts (dict
  "alert" "IntakeDestinationDeadLettersGrowing"
  "expr" (include "intake.deadLettersGrowingExpr" $d.deadLettersGrowing)
  "for" $d.deadLettersGrowing.for
  "severity" $d.deadLettersGrowing.severity
  "summary" (printf "More than %v events for destination {{ $labels.destination }} went to the dead letter within %s: they were not delivered." $d.deadLettersGrowing.moreThan $d.deadLettersGrowing.window)
  "description" "The receiver refuses them (reason http_<status>) or they ran out of attempts (attempts_exhausted). Fix the cause, then bulk-replay them: intake deadletter bulk-replay --destination <name>.") }}
{{- end }}
{{- if not (index $off "IntakeDestinationAutoPaused") }}
{{- $alerts = append $alerts (dict
  "alert" "IntakeDestinationAutoPaused"
  "expr" "max by (destination) (intake_destination_paused{reason=\"auto\"}) == 1"
  "for" $d.autoPaused.for
  "severity" $d.autoPaused.severity
  "summary" "Destination {{ $labels.destination }} was paused automatically after failing continuously; its events are held until it is resumed."
  "description" "Nothing is delivered to it and nothing is lost: events wait in the bus or the outbox. Fix the receiver, then resume the destination.") }}
{{- end }}
{{- if $alerts }}
- name: intake-destinations
  rules:
  {{- range $alerts }}
    - alert: {{ .alert }}
      expr: {{ .expr | quote }}
      for: {{ .for }}
      labels:
        severity: {{ .severity }}
        {{- with $rule.additionalRuleLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        summary: {{ .summary | quote }}
        description: {{ .description | quote }}
        runbook_url: {{ printf "%s#%s" $rule.runbookUrl (lower .alert) | quote }}
  {{- end }}
{{- end }}
{{- end -}}


{{/*
More than moreThan dead letters of a destination within window. The counter's series begins at
its first dead letter, whose count increase() cannot see (no earlier sample): a series that did
not exist a window ago counts from zero.
*/}}
{{- define "intake.deadLettersGrowingExpr" -}}
{{- $m := "intake_destination_dead_lettered_total" -}}
(sum by (destination) (increase({{ $m }}[{{ .window }}])) > {{ .moreThan }}) or (sum by (destination) ({{ $m }}) > {{ .moreThan }} unless sum by (destination) ({{ $m }} offset {{ .window }}))
{{- end -}}
