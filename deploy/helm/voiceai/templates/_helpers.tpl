{{/* The release's name prefix, at most 63 characters with a component suffix. */}}
{{- define "voiceai.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "voiceai.commonLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/part-of: voiceai
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* Labels of an object that belongs to no one component. */}}
{{- define "voiceai.labels" -}}
{{ include "voiceai.commonLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels of a component's objects: (dict "root" $ "name" "gateway"). */}}
{{- define "voiceai.componentLabels" -}}
{{ include "voiceai.commonLabels" .root }}
{{ include "voiceai.selector" . }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "name" "gateway"). */}}
{{- define "voiceai.selector" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end -}}

{{- define "voiceai.secretName" -}}
{{- default (printf "%s-secrets" (include "voiceai.fullname" .)) .Values.secret.existingSecret -}}
{{- end -}}

{{- define "voiceai.mongoSecretName" -}}
{{- default (printf "%s-mongo" (include "voiceai.fullname" .)) .Values.mongo.existingSecret -}}
{{- end -}}

{{/* The replica set this chart runs, as a URI. */}}
{{- define "voiceai.mongoStatefulsetURI" -}}
{{- $name := printf "%s-mongo" (include "voiceai.fullname" .) -}}
{{- $hosts := list -}}
{{- range $i := until (int .Values.mongo.statefulset.replicas) -}}
{{- $hosts = append $hosts (printf "%s-%d.%s:27017" $name $i $name) -}}
{{- end -}}
{{- printf "mongodb://%s/?replicaSet=rs0" (join "," $hosts) -}}
{{- end -}}

{{/* Components that encrypt or decrypt secrets at rest. */}}
{{- define "voiceai.usesSecretKey" -}}
{{- has . (list "gateway" "agents" "tickets" "testing" "testing-runner" "webhooks" "webhook-dispatcher") -}}
{{- end -}}
