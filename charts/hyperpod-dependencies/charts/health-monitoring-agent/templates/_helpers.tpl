{{/* The Region the agent's image comes from: the value, global.region, else us-east-1. */}}
{{- define "health-monitoring-agent.region" -}}
{{- $global := .Values.global | default dict -}}
{{- .Values.region | default $global.region | default "us-east-1" -}}
{{- end }}

{{/* The agent's image in its Region's registry. */}}
{{- define "health-monitoring-agent.image" -}}
{{- printf "%s.dkr.ecr.%s.amazonaws.com/%s:%s" .Values.image.account (include "health-monitoring-agent.region" .) .Values.image.repository .Values.image.tag -}}
{{- end }}
