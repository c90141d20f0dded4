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
true, or auto while no one else serves it (no DataVolume CRD, or only the one
this chart installed). Prints "true" or nothing.
*/}}
{{- define "kubevirt-ts.serveDataVolumes" -}}
{{- $serve := toString .Values.dataVolumes.serve -}}
{{- $crd := lookup "apiextensions.k8s.io/v1" "CustomResourceDefinition" "" "datavolumes.cdi.kubevirt.io" -}}
{{- $ours := and $crd (eq (dig "metadata" "labels" "app.kubernetes.io/part-of" "" $crd) "kubevirt-ts") -}}
{{- if or (eq $serve "true") (and (eq $serve "auto") (or (not $crd) $ours)) -}}true{{- end -}}
{{- end }}
