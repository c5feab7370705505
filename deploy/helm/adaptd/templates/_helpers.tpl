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
{{- /* The durable log (docs/DURABLE_LOG.md): etcd and object storage; its 64-bit and
       unsigned numbers only when set. */ -}}
{{- $d := .Values.durableLog -}}
{{- if $d.etcdEndpoints }}
{{- $log := dict "etcdEndpoints" $d.etcdEndpoints "snapshotStore" (required "durableLog.snapshotStore is required with durableLog.etcdEndpoints (s3://BUCKET/PREFIX)" $d.snapshotStore) -}}
{{- if $d.etcdPrefix }}{{- $_ := set $log "etcdPrefix" $d.etcdPrefix -}}{{- end -}}
{{- if $d.leaseTtlSeconds }}{{- $_ := set $log "leaseTtlSeconds" (int64 $d.leaseTtlSeconds) -}}{{- end -}}
{{- if $d.s3Endpoint }}{{- $_ := set $log "s3Endpoint" $d.s3Endpoint -}}{{- end -}}
{{- if $d.s3Region }}{{- $_ := set $log "s3Region" $d.s3Region -}}{{- end -}}
{{- if $d.etcdQuotaBytes }}{{- $_ := set $log "etcdQuotaBytes" (int64 $d.etcdQuotaBytes | toString) -}}{{- end -}}
{{- if $d.etcdTls.existingSecret }}
{{- $_ := set $log "etcdCaFile" "/etc/adaptd/etcd/ca.crt" -}}
{{- if $d.etcdTls.clientCertificate }}
{{- $_ := set $log "etcdCertFile" "/etc/adaptd/etcd/tls.crt" -}}
{{- $_ := set $log "etcdKeyFile" "/etc/adaptd/etcd/tls.key" -}}
{{- end -}}
{{- end -}}
{{- $_ := set $cfg "durableLog" $log -}}
{{- end -}}
{{- /* More than one replica: the cluster on etcd (docs/CLUSTER_ETCD.md), whose members are the
       StatefulSet's pods, each registering under its name (--cluster-self) and advertising
       its headless DNS name (--advertise-address, in the StatefulSet); no member list. It
       needs the durable log: the static member list is no more. */ -}}
{{- if gt (int .Values.replicas) 1 }}
{{- $name := include "adaptd.fullname" . -}}
{{- $cluster := dict -}}
{{- if $d.etcdEndpoints }}
{{- $_ := set $cluster "restartGraceSeconds" (include "adaptd.restartGraceSeconds" . | int64) -}}
{{- if .Values.cluster.settleSeconds }}{{- $_ := set $cluster "settleSeconds" (int64 .Values.cluster.settleSeconds) -}}{{- end -}}
{{- else }}
{{- fail "replicas above 1 needs durableLog (etcdEndpoints, snapshotStore): a cluster's members register in etcd and its stores live in etcd and object storage (docs/CLUSTER_ETCD.md); the static member list was removed, and adaptctl cluster migrate loads a static cluster's volumes" -}}
{{- end -}}
{{- if .Values.clusterTokenSecret }}{{- $_ := set $cluster "memberTokenFile" "/etc/adaptd/cluster/token" -}}
{{- else if $c.tokens }}{{- fail "clusterTokenSecret is required when replicas > 1 and config.tokens are set (the members call each other with it: docs/CLUSTER_ETCD.md)" -}}
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

{{/* The restart grace of a member of the cluster on etcd: cluster.restartGraceSeconds, or
     derived from the pod's termination grace. A pod stopped with SIGTERM hands its shards to
     its grace lease at the latest when terminationGracePeriodSeconds ends (the kubelet kills
     it then), and its restart begins then at the latest; the grace must outlast both, so it
     is the termination grace plus cluster.restartGraceMarginSeconds (the restart). */}}
{{- define "adaptd.restartGraceSeconds" -}}
{{- $grace := int64 .Values.cluster.restartGraceSeconds -}}
{{- if not $grace }}
{{- $margin := int64 .Values.cluster.restartGraceMarginSeconds -}}
{{- if lt $margin 1 }}{{- fail (printf "cluster.restartGraceMarginSeconds: must be at least 1 (the time a pod takes to restart), got %v" .Values.cluster.restartGraceMarginSeconds) -}}{{- end -}}
{{- $grace = add (int64 .Values.terminationGracePeriodSeconds) $margin -}}
{{- end -}}
{{- if gt $grace 3600 }}{{- fail (printf "cluster.restartGraceSeconds: at most 3600 (the server's limit), got %d (terminationGracePeriodSeconds plus cluster.restartGraceMarginSeconds when not set)" $grace) -}}{{- end -}}
{{- $grace -}}
{{- end -}}

{{/* How many pod ordinals get a cert-manager Certificate: tls.certManager.podCertificates,
     or replicas; never fewer than replicas (a pod without its Secret would not start). */}}
{{- define "adaptd.certificateCount" -}}
{{- $n := int (default .Values.replicas .Values.tls.certManager.podCertificates) -}}
{{- if lt $n (int .Values.replicas) }}{{- fail (printf "tls.certManager.podCertificates: %d is fewer than replicas (%d): every pod needs its Certificate" $n (int .Values.replicas)) -}}{{- end -}}
{{- $n -}}
{{- end -}}

{{/* Checks of the TLS values: one source of certificates. */}}
{{- define "adaptd.checkTls" -}}
{{- if and .Values.tls.existingSecret .Values.tls.certManager.issuer }}{{- fail "tls.existingSecret and tls.certManager.issuer: set one (a Secret shared by every pod, or a Certificate per pod from cert-manager)" -}}{{- end -}}
{{- end -}}
