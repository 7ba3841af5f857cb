{{/* Chart name, "paratune" unless nameOverride. */}}
{{- define "paratune.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Object-name prefix: the release name when it contains the chart name (release "paratune"
gives "paratune"), else <release>-<chart>; fullnameOverride wins. */}}
{{- define "paratune.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "paratune.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Name of the Deployment, ClusterRole and their bindings. */}}
{{- define "paratune.operatorName" -}}
{{- printf "%s-operator" (include "paratune.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The operator's namespace: namespace.name, else the release namespace. */}}
{{- define "paratune.namespace" -}}
{{- default .Release.Namespace .Values.namespace.name }}
{{- end }}

{{/* Where the leader-election Lease lives. */}}
{{- define "paratune.leaseNamespace" -}}
{{- default (include "paratune.namespace" .) .Values.leaderElection.namespace }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "paratune.labels" -}}
app.kubernetes.io/name: {{ include "paratune.name" . }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Selector of the operator pods (immutable once installed). */}}
{{- define "paratune.selectorLabels" -}}
app.kubernetes.io/name: {{ include "paratune.name" . }}
app.kubernetes.io/component: operator
{{- end }}

{{/* Labels of the operator's workload objects. */}}
{{- define "paratune.operatorLabels" -}}
{{ include "paratune.selectorLabels" . }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "paratune.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "paratune.operatorName" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "paratune.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}

{{/* Fails the rendering on values the operator would refuse or run badly with. */}}
{{- define "paratune.validate" -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) }}
{{- fail (printf "replicas: %d replicas need leaderElection.enabled=true (two leaders would reconcile the same campaigns)" (int .Values.replicas)) }}
{{- end }}
{{- if not (has .Values.logFormat (list "json" "text")) }}
{{- fail (printf "logFormat: must be json or text, got %q" (toString .Values.logFormat)) }}
{{- end }}
{{- $workers := int .Values.maxConcurrentReconciles }}
{{- if or (lt $workers 1) (gt $workers 256) }}
{{- fail (printf "maxConcurrentReconciles: must be in [1, 256], got %v" .Values.maxConcurrentReconciles) }}
{{- end }}
{{- if and .Values.nodeHealth.remediation.enabled (not .Values.nodeHealth.enabled) }}
{{- fail "nodeHealth.remediation.enabled: needs nodeHealth.enabled=true (remediation acts on the node ledger's suspects)" }}
{{- end }}
{{- with .Values.rdma.resourceName }}
{{- if and (ne . "none") (not (contains "/" .)) }}
{{- fail (printf "rdma.resourceName: must be none or an extended resource name such as rdma/ib, got %q" .) }}
{{- end }}
{{- end }}
{{- if and .Values.llm.apiKeySecret.name (not .Values.llm.apiKeySecret.key) }}
{{- fail "llm.apiKeySecret.key: required when llm.apiKeySecret.name is set" }}
{{- end }}
{{- end }}
