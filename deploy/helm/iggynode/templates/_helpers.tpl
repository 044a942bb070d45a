{{/*
Names. fullname is the StatefulSet, the pods' prefix (fullname-0, ...)
and the stem of every other object's name.
*/}}
{{- define "iggynode.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "iggynode.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else if contains (include "iggynode.name" .) .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "iggynode.name" .) | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "iggynode.headless" -}}
{{- printf "%s-headless" (include "iggynode.fullname" .) -}}
{{- end -}}

{{- define "iggynode.secretName" -}}
{{- default (printf "%s-auth" (include "iggynode.fullname" .)) .Values.auth.existingSecret -}}
{{- end -}}

{{- define "iggynode.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "iggynode.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "iggynode.selectorLabels" -}}
app.kubernetes.io/name: {{ include "iggynode.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "iggynode.labels" -}}
{{ include "iggynode.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
podHost is pod i's name on the headless Service, the roster ip of replica
i: peers dial it (resolved at every dial, so a rescheduled pod is found
again) and, with cluster TLS, verify it against the certificate.
Call with (list $ i).
*/}}
{{- define "iggynode.podHost" -}}
{{- $root := index . 0 -}}
{{- printf "%s-%d.%s.%s.svc.%s" (include "iggynode.fullname" $root) (int (index . 1)) (include "iggynode.headless" $root) $root.Release.Namespace $root.Values.clusterDomain -}}
{{- end -}}

{{/*
quorum is the number of replicas that must stay up for the cluster to
elect a primary and commit (replica-plane.md 4.5): q_vc, which is at
least q_rep. The PodDisruptionBudget keeps that many.
*/}}
{{- define "iggynode.quorum" -}}
{{- $n := int .Values.replicas -}}
{{- if eq $n 2 -}}
2
{{- else -}}
{{- $rep := min (div (add $n 1) 2) 3 -}}
{{- sub (add $n 1) $rep -}}
{{- end -}}
{{- end -}}

{{/*
externalHost is the host clients outside the cluster dial for pod i:
external.hosts[i], else external.host. Call with (list $ i).
*/}}
{{- define "iggynode.externalHost" -}}
{{- $root := index . 0 -}}
{{- $i := int (index . 1) -}}
{{- if gt (len $root.Values.external.hosts) $i -}}
{{- index $root.Values.external.hosts $i -}}
{{- else -}}
{{- $root.Values.external.host -}}
{{- end -}}
{{- end -}}

{{/*
externalPort is the port clients outside dial for transport t of pod i:
the NodePort base + i, or the Service port for a LoadBalancer.
Call with (list $ i t).
*/}}
{{- define "iggynode.externalPort" -}}
{{- $root := index . 0 -}}
{{- $i := int (index . 1) -}}
{{- $t := index . 2 -}}
{{- if eq $root.Values.external.type "NodePort" -}}
{{- add (int (index $root.Values.external.nodePorts $t)) $i -}}
{{- else -}}
{{- index $root.Values.ports $t -}}
{{- end -}}
{{- end -}}

{{/* validate refuses values that cannot make a working cluster. */}}
{{- define "iggynode.validate" -}}
{{- $n := int .Values.replicas -}}
{{- if or (lt $n 1) (gt $n 32) -}}
{{- fail (printf "replicas = %d: a cluster has 1 to 32 replicas (replica-plane.md 4.4)" $n) -}}
{{- end -}}
{{- if and .Values.auth.sharedSecret (lt (len .Values.auth.sharedSecret) 32) -}}
{{- fail "auth.sharedSecret must be at least 32 bytes (replica-plane.md 10.1)" -}}
{{- end -}}
{{- if .Values.external.enabled -}}
{{- if not (has .Values.external.type (list "LoadBalancer" "NodePort")) -}}
{{- fail (printf "external.type %q: LoadBalancer or NodePort" .Values.external.type) -}}
{{- end -}}
{{- if gt (add (len .Values.advertise.internalCIDRs) (len .Values.external.clientCIDRs)) 16 -}}
{{- fail "advertise.internalCIDRs and external.clientCIDRs together name more than 16 networks: a node advertises at most 16 (replica-plane.md 10.2)" -}}
{{- end -}}
{{- if eq .Values.external.type "NodePort" -}}
{{- $np := .Values.external.nodePorts -}}
{{- range $a := list "tcp" "websocket" "http" -}}
{{- range $b := list "tcp" "websocket" "http" -}}
{{- $pa := int (index $np $a) -}}
{{- $pb := int (index $np $b) -}}
{{- if and (ne $a $b) (le $pa $pb) (lt $pb (add $pa $n)) -}}
{{- fail (printf "external.nodePorts: %s %d..%d overlaps %s from %d; keep the bases %d apart" $a $pa (sub (add $pa $n) 1) $b $pb $n) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $i := until $n -}}
{{- if not (include "iggynode.externalHost" (list $ $i)) -}}
{{- fail (printf "external.enabled: no host for pod %d; set external.hosts (one per pod) or external.host" $i) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if and .Values.tls.client.enabled (not .Values.tls.client.secretName) -}}
{{- fail "tls.client.enabled needs tls.client.secretName (a kubernetes.io/tls Secret)" -}}
{{- end -}}
{{- if and .Values.tls.replica.enabled (not .Values.tls.replica.selfSigned) (not .Values.tls.replica.secretName) -}}
{{- fail "tls.replica.enabled needs tls.replica.secretName (tls.crt, tls.key, ca.crt) unless tls.replica.selfSigned" -}}
{{- end -}}
{{- if not (has .Values.metrics.exporter (list "prometheus" "otlp" "none")) -}}
{{- fail (printf "metrics.exporter %q: prometheus, otlp or none" .Values.metrics.exporter) -}}
{{- end -}}
{{- if and (ne .Values.metrics.exporter "prometheus") .Values.metrics.serviceMonitor.enabled -}}
{{- fail "metrics.serviceMonitor scrapes /metrics, which only metrics.exporter=prometheus serves" -}}
{{- end -}}
{{- end -}}
