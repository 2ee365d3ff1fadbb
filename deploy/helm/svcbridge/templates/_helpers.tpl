{{/*
Object names: the release name when it contains "svcbridge" (so
`helm install svcbridge` names the objects as deploy/kubernetes does),
else <release>-svcbridge.
*/}}
{{- define "svcbridge.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "svcbridge.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of one role (api, worker, migrate). */}}
{{- define "svcbridge.selectorLabels" -}}
app.kubernetes.io/name: {{ include "svcbridge.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Labels of every object; .component may be empty. */}}
{{- define "svcbridge.labels" -}}
app.kubernetes.io/name: {{ include "svcbridge.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The image, by digest when one is given. */}}
{{- define "svcbridge.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}
{{- end -}}

{{- define "svcbridge.listen" -}}{{ printf "0.0.0.0:%v" .Values.api.port }}{{- end -}}
{{- define "svcbridge.temporalTLSDir" -}}/etc/svcbridge/temporal-tls{{- end -}}
{{- define "svcbridge.authTokensDir" -}}/etc/svcbridge/auth{{- end -}}

{{/*
The container of one role: its command (the image's entrypoint is
svcbridge), the settings (the ConfigMap, plus those from Secrets and
files), resources and security context. .extraEnv is YAML of more env
entries; .resources the role's resources.
*/}}
{{- define "svcbridge.container" -}}
{{- $v := .root.Values -}}
- name: {{ .role }}
  image: {{ include "svcbridge.image" .root }}
  imagePullPolicy: {{ $v.image.pullPolicy }}
  args: [{{ .role | quote }}]
  {{- with .ports }}
  ports:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- if .inlineConfig }}
  env:
    # A pre-install hook runs before the ConfigMap exists: the same
    # settings, inline.
    - name: LISTEN
      value: {{ include "svcbridge.listen" .root | quote }}
    {{- range $name, $value := $v.config }}
    - name: {{ $name }}
      value: {{ $value | quote }}
    {{- end }}
  {{- else }}
  envFrom:
    - configMapRef:
        name: {{ include "svcbridge.fullname" .root }}-config
  env:
  {{- end }}
    - name: DATABASE_URL
      valueFrom:
        secretKeyRef:
          name: {{ required "database.existingSecret: the Secret holding DATABASE_URL" $v.database.existingSecret }}
          key: {{ $v.database.key }}
    {{- if $v.controllerNamespace }}
    - name: CONTROLLER_NAMESPACE
      value: {{ $v.controllerNamespace | quote }}
    {{- else }}
    # Where the controller's objects are: this namespace.
    - name: CONTROLLER_NAMESPACE
      valueFrom:
        fieldRef:
          fieldPath: metadata.namespace
    {{- end }}
    {{- with .extraEnv }}
    {{- . | nindent 4 }}
    {{- end }}
    {{- if $v.temporalTLS.existingSecret }}
    {{- if $v.temporalTLS.clientCertificate }}
    - name: TEMPORAL_TLS_CERT
      value: {{ include "svcbridge.temporalTLSDir" . }}/tls.crt
    - name: TEMPORAL_TLS_KEY
      value: {{ include "svcbridge.temporalTLSDir" . }}/tls.key
    {{- end }}
    {{- if $v.temporalTLS.ca }}
    - name: TEMPORAL_TLS_CA
      value: {{ include "svcbridge.temporalTLSDir" . }}/ca.crt
    {{- end }}
    {{- end }}
    {{- with $v.temporalAPIKey.existingSecret }}
    - name: TEMPORAL_API_KEY
      valueFrom:
        secretKeyRef:
          name: {{ . }}
          key: {{ $v.temporalAPIKey.key }}
    {{- end }}
    {{- with $v.oidcClientSecret.existingSecret }}
    - name: OIDC_CLIENT_SECRET
      valueFrom:
        secretKeyRef:
          name: {{ . }}
          key: {{ $v.oidcClientSecret.key }}
    {{- end }}
    {{- with $v.authTokens.existingSecret }}
    - name: AUTH_TOKENS_FILE
      value: {{ include "svcbridge.authTokensDir" . }}/{{ $v.authTokens.key }}
    {{- end }}
  {{- with .probes }}
  {{- . | nindent 2 }}
  {{- end }}
  resources:
    {{- toYaml .resources | nindent 4 }}
  securityContext:
    {{- toYaml $v.securityContext | nindent 4 }}
  {{- if or $v.temporalTLS.existingSecret $v.authTokens.existingSecret }}
  volumeMounts:
    {{- with $v.temporalTLS.existingSecret }}
    - name: temporal-tls
      mountPath: {{ include "svcbridge.temporalTLSDir" . }}
      readOnly: true
    {{- end }}
    {{- with $v.authTokens.existingSecret }}
    - name: auth-tokens
      mountPath: {{ include "svcbridge.authTokensDir" . }}
      readOnly: true
    {{- end }}
  {{- end }}
{{- end -}}

{{/* The pods' security context and image pull secrets: every pod's. */}}
{{- define "svcbridge.podSecurity" -}}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The pod-level settings both roles share: security, secrets' volumes. */}}
{{- define "svcbridge.podCommon" -}}
{{- $v := .Values -}}
{{ include "svcbridge.podSecurity" . }}
{{- if or $v.temporalTLS.existingSecret $v.authTokens.existingSecret }}
volumes:
  {{- with $v.temporalTLS.existingSecret }}
  - name: temporal-tls
    secret:
      secretName: {{ . }}
  {{- end }}
  {{- with $v.authTokens.existingSecret }}
  - name: auth-tokens
    secret:
      secretName: {{ . }}
  {{- end }}
{{- end }}
{{- end -}}

{{/* Scheduling of one role's pods: .values is the role's values. */}}
{{- define "svcbridge.scheduling" -}}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector:
      matchLabels:
        {{- include "svcbridge.selectorLabels" (dict "root" .root "component" .component) | nindent 8 }}
{{- with .values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* The api's probes, on its http port. */}}
{{- define "svcbridge.apiProbes" -}}
# Start-up includes the migrations; give it a minute.
startupProbe:
  httpGet:
    path: /healthz
    port: http
  periodSeconds: 2
  failureThreshold: 30
livenessProbe:
  httpGet:
    path: /healthz
    port: http
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
# /readyz pings the store (3 s budget).
readinessProbe:
  httpGet:
    path: /readyz
    port: http
  periodSeconds: 5
  timeoutSeconds: 5
  failureThreshold: 3
{{- end -}}

{{/* The worker's probes, on its metrics port (no readiness: no traffic). */}}
{{- define "svcbridge.workerProbes" -}}
# The listener opens once PostgreSQL (migrations) and Temporal answered;
# give that a minute.
startupProbe:
  httpGet:
    path: /healthz
    port: metrics
  periodSeconds: 2
  failureThreshold: 30
livenessProbe:
  httpGet:
    path: /healthz
    port: metrics
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
{{- end -}}
