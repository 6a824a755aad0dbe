{{/* Labels every object of the chart carries. */}}
{{- define "hyperpod-dependencies.labels" -}}
app.kubernetes.io/part-of: hyperpod-dependencies
app.kubernetes.io/managed-by: hypd
{{- end }}
