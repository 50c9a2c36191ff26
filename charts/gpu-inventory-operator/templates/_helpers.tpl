{{/* Names and labels, as `helm create` makes them, plus the operator's own. */}}

{{- define "gpu-inventory-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name: the release name when it contains the chart name (release gpu-inventory-operator gives the
names of deploy/), else <release>-<chart>. Truncated to 63 characters (DNS labels). */}}
{{- define "gpu-inventory-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "gpu-inventory-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object: helm's standard ones, and part-of as deploy/kustomization.yaml adds it. */}}
{{- define "gpu-inventory-operator.labels" -}}
helm.sh/chart: {{ include "gpu-inventory-operator.chart" . }}
app.kubernetes.io/name: {{ include "gpu-inventory-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: gpu-inventory-operator
{{- end }}

{{/* What selects the operator's pods (Deployment, Service, PodDisruptionBudget, anti-affinity). */}}
{{- define "gpu-inventory-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-inventory-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controller
{{- end }}

{{- define "gpu-inventory-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gpu-inventory-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Where the ConfigMap, the Lease and the namespaced Role live (`--namespace`). */}}
{{- define "gpu-inventory-operator.operatorNamespace" -}}
{{- default .Release.Namespace .Values.operator.namespace }}
{{- end }}

{{/* The leader-election Lease: named after the release (the Role grants get/patch on this name only). */}}
{{- define "gpu-inventory-operator.leaseName" -}}
{{- include "gpu-inventory-operator.fullname" . }}
{{- end }}

{{- define "gpu-inventory-operator.crdName" -}}
gpuinventories.homelab.youngju.dev
{{- end }}

{{- define "gpu-inventory-operator.gpuNodeCrdName" -}}
gpunodes.homelab.youngju.dev
{{- end }}

{{- define "gpu-inventory-operator.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* The ServiceAccount as a RoleBinding subject. */}}
{{- define "gpu-inventory-operator.subjects" -}}
- kind: ServiceAccount
  name: {{ include "gpu-inventory-operator.serviceAccountName" . }}
  namespace: {{ .Release.Namespace }}
{{- end }}
