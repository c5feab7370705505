{{/* The release-qualified name of the chart's objects (at most 63 characters). */}}
{{- define "adaptd.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "adaptd.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "adaptd.labels" -}}
{{ include "adaptd.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "adaptd.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "adaptd.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The server config as adapt.v1.ServerConfig JSON. */}}
{{- define "adaptd.serverConfig" -}}
{{- $c := .Values.config -}}
{{- $cfg := dict
  "listen" (printf "0.0.0.0:%v" .Values.ports.grpc)
  "metricsListen" (printf "0.0.0.0:%v" .Values.ports.metrics)
  "dataDir" .Values.persistence.mountPath
  "workerThreads" $c.workerThreads
  "compileThreads" $c.compileThreads
  "maxDim" $c.maxDim
  "maxMessageBytes" (int64 $c.maxMessageBytes | toString)
  "metricsTenants" $c.metricsTenants
  "metricsTopTenants" $c.metricsTopTenants -}}
{{- /* Helm reads every number in the values as a float64: 64-bit fields go through int64,
       or 67108864 would render as 6.7108864e+07. */ -}}
{{- if .Values.ports.http }}{{- $_ := set $cfg "httpListen" (printf "0.0.0.0:%v" .Values.ports.http) -}}{{- end -}}
{{- if $c.memoryBudgetBytes }}{{- $_ := set $cfg "memoryBudgetBytes" (int64 $c.memoryBudgetBytes | toString) -}}{{- end -}}
{{- if $c.encoders }}{{- $_ := set $cfg "encoders" $c.encoders -}}{{- end -}}
{{- /* More than one replica: a cluster (docs/CLUSTER.md) whose members are the StatefulSet's
       pods, reached through the headless Service; each pod names itself (--cluster-self). */ -}}
{{- if gt (int .Values.replicas) 1 }}
{{- $name := include "adaptd.fullname" . -}}
{{- $members := list -}}
{{- range $i := until (int .Values.replicas) }}
{{- $pod := printf "%s-%d" $name $i -}}
{{- $members = append $members (dict "name" $pod "address" (printf "%s.%s-headless.%s.svc.cluster.local:%v" $pod $name $.Release.Namespace $.Values.ports.grpc)) -}}
{{- end }}
{{- $cluster := dict "members" $members -}}
{{- if .Values.clusterTokenSecret }}{{- $_ := set $cluster "memberTokenFile" "/etc/adaptd/cluster/token" -}}
{{- else if $c.tokens }}{{- fail "clusterTokenSecret is required when replicas > 1 and config.tokens are set (the members hand stores off to each other with it: docs/CLUSTER.md)" -}}
{{- end -}}
{{- $_ := set $cfg "cluster" $cluster -}}
{{- end -}}
{{- if $c.tokens }}{{- $_ := set $cfg "tokens" $c.tokens -}}{{- end -}}
{{- /* Quotas: the default and each tenant's, their 64-bit counts through int64; a field the
       server does not know stops the install, naming it. */ -}}
{{- $sources := dict -}}
{{- if $c.defaultQuota }}{{- $_ := set $sources "defaultQuota" (list "" $c.defaultQuota) -}}{{- end -}}
{{- range $tenant, $q := (default (dict) $c.tenantQuotas) }}
{{- $_ := set $sources (printf "tenantQuotas.%s" $tenant) (list $tenant $q) -}}
{{- end -}}
{{- $tenantQuotas := dict -}}
{{- range $field, $pair := $sources }}
{{- $quota := dict -}}
{{- range $k, $v := (index $pair 1) }}
{{- if has $k (list "maxStores" "maxMemoryBytes") }}{{- $_ := set $quota $k (int64 $v | toString) -}}
{{- else if has $k (list "examplesPerSecond" "examplesBurst") }}{{- $_ := set $quota $k $v -}}
{{- else }}{{- fail (printf "config.%s.%s: not a quota field (maxStores, maxMemoryBytes, examplesPerSecond, examplesBurst)" $field $k) -}}
{{- end -}}
{{- end -}}
{{- if eq (index $pair 0) "" }}{{- $_ := set $cfg "defaultQuota" $quota -}}
{{- else }}{{- $_ := set $tenantQuotas (index $pair 0) $quota -}}
{{- end -}}
{{- end -}}
{{- if $tenantQuotas }}{{- $_ := set $cfg "tenantQuotas" $tenantQuotas -}}{{- end -}}
{{- tpl (toPrettyJson $cfg) . -}}
{{- end -}}
