{{- define "kubevirt-ts.labels" -}}
app.kubernetes.io/part-of: kubevirt-ts
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{/* The selector labels of one component: (dict "root" $ "component" "virt-controller") */}}
{{- define "kubevirt-ts.selector" -}}
app.kubernetes.io/name: {{ .component }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- end }}

{{/* The image of a component: (dict "root" $ "name" "virt-controller" "key" "controller") */}}
{{- define "kubevirt-ts.image" -}}
{{- $tag := index .root.Values.tags .key | default .root.Values.image.tag | default .root.Chart.AppVersion -}}
{{ printf "%s/%s:%s" .root.Values.image.registry .name $tag }}
{{- end }}

{{/* The hardened security context of every unprivileged container. */}}
{{- define "kubevirt-ts.restrictedContainer" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/* Probes on the endpoint every component serves; the argument is the port's name, or (dict "port" NAME "scheme" "HTTPS"). */}}
{{- define "kubevirt-ts.probes" -}}
{{- $port := . }}
{{- $scheme := "HTTP" }}
{{- if kindIs "map" . }}{{ $port = .port }}{{ $scheme = .scheme }}{{ end }}
startupProbe:
  httpGet: { path: /healthz, port: {{ $port }}, scheme: {{ $scheme }} }
  periodSeconds: 2
  failureThreshold: 60
livenessProbe:
  httpGet: { path: /healthz, port: {{ $port }}, scheme: {{ $scheme }} }
  periodSeconds: 10
readinessProbe:
  httpGet: { path: /readyz, port: {{ $port }}, scheme: {{ $scheme }} }
  periodSeconds: 5
{{- end }}

{{/*
Whether kubevirt-ts serves CDI's DataVolume kind itself: dataVolumes.serve
true, or auto while no one else serves it: the DataVolume CRD is the one
this chart installed, or there is none and CDI's own kind (its operator's
CDI) is not among the API versions. Under helm template lookup finds no CRD,
so there the API versions Helm is given decide (--api-versions; Argo CD
passes the cluster's). Prints "true" or nothing.
*/}}
{{- define "kubevirt-ts.serveDataVolumes" -}}
{{- $serve := toString .Values.dataVolumes.serve -}}
{{- $crd := lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" "datavolumes.cdi.kubevirt.io" -}}
{{- $ours := and $crd (eq (dig "metadata" "labels" "app.kubernetes.io/part-of" "" $crd) "kubevirt-ts") -}}
{{- $cdi := .Capabilities.APIVersions.Has "cdi.kubevirt.io/v1beta1/CDI" -}}
{{- if or (eq $serve "true") (and (eq $serve "auto") (or $ours (and (not $crd) (not $cdi)))) -}}true{{- end -}}
{{- end }}

{{/*
Where a component's pods run, from its values (values.yaml: placement):
(dict "root" $ "values" .Values.api "affinity" DEFAULT). nodeSelector,
tolerations and priorityClassName as given; affinity as given, with the
chart's DEFAULT (a dict, or nothing) filling what it leaves unset; and the
global imagePullSecrets.
*/}}
{{- define "kubevirt-ts.placement" -}}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.priorityClassName }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with .values.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with merge (deepCopy (.values.affinity | default dict)) (.affinity | default dict) }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
The dashboard Service's type: web.service.type, else ClusterIP behind an
Ingress (web.ingress.enabled) and NodePort without one.
*/}}
{{- define "kubevirt-ts.webServiceType" -}}
{{- .Values.web.service.type | default (ternary "ClusterIP" "NodePort" .Values.web.ingress.enabled) -}}
{{- end }}

{{/*
The address users type for the dashboard, when the values say it:
https://<web.ingress.host> behind an Ingress, else
https://<first of web.tls.hosts>:<nodePort> on a NodePort. Prints nothing
otherwise.
*/}}
{{- define "kubevirt-ts.dashboardUrl" -}}
{{- if .Values.web.ingress.enabled -}}
{{ printf "https://%s" .Values.web.ingress.host }}
{{- else if and (eq (include "kubevirt-ts.webServiceType" .) "NodePort") .Values.web.tls.hosts -}}
{{- $host := first .Values.web.tls.hosts -}}
{{ printf "https://%s:%v" (ternary (printf "[%s]" $host) $host (contains ":" $host)) .Values.web.service.nodePort }}
{{- end -}}
{{- end }}
