"""The Helm chart deploy/helm/adaptd, rendered as Helm renders it, validated offline.

- Builds tests/deploy/helm_render (Go text/template + sprig from Debian, with Helm's include,
  tpl, required, toYaml) and renders the chart with its default values and with
  helm-values-custom.yaml (every option switched the other way).
- Validates every manifest against the Kubernetes 1.29 schemas with kubernetes-validate
  --strict (offline; a broken manifest is checked to fail, so the validator really runs);
  ServiceMonitor, a CRD without a bundled schema, is checked field by field.
- Checks what the chart promises: data on a PVC, gRPC probes on grpc.health.v1, non-root,
  resource requests, GPUs on request, Secrets mounted, models mounted read-only from the
  volume models.volume names (none by default), HPA on queue time, PDB.
- Values are read with Helm's types (every number a float64), so a number the chart prints
  as Go prints a float (6.7108864e+07) shows here as on a real cluster; no manifest may hold
  one.
- Renders three pods as a cluster on etcd (helm-values-etcd.yaml: the durable log, its
  Secrets, no member list, the data directory an emptyDir, a PodDisruptionBudget), and with
  TLS to every member from cert-manager (helm-values-etcd-tls.yaml: a Certificate per pod
  ordinal whose SANs are the pod's headless DNS name and the Service's names, each pod's
  Secret in a projected volume under its pod name and its flags naming $(POD_NAME)'s files,
  the restart grace derived from the termination grace).
- Starts adaptd with the rendered server config (the JSON must be a valid ServerConfig); the
  cluster on etcd's as a member on a real etcd and SeaweedFS where .ci/dev unpacked them
  (ADAPTD_ETCD_BIN, ADAPTD_WEED_BIN); and with a pod's TLS flags, over certificates an openssl
  CA signs as the Certificates describe, answering mutual TLS at the pod's advertised name
  (pod_certificates.py).
- Lints values.yaml and the deploy YAML with yamllint.

Environment: ADAPTD_REPO_ROOT, ADAPTD_BIN, DEPLOY_VENV (with kubernetes-validate), WORK_DIR.
A missing go, sprig, yamllint or venv is a failure that names the package to install.
"""

import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

import pod_certificates

ROOT = os.environ["ADAPTD_REPO_ROOT"]
CHART = os.path.join(ROOT, "deploy", "helm", "adaptd")
HERE = os.path.join(ROOT, "tests", "deploy")
WORK = os.environ.get("WORK_DIR") or tempfile.mkdtemp(prefix="adaptd-helm-")
VENV = os.environ.get("DEPLOY_VENV", "")
SPRIG = "/usr/share/gocode/src/github.com/Masterminds/sprig"

failures = []


def check(cond, message):
    if not cond:
        failures.append(message)
    return cond


def missing(message):
    """A tool the test needs is absent: fail (a check that did not run must not pass)."""
    print("FAIL: " + message)
    sys.exit(1)


def build_renderer():
    go = shutil.which("go")
    if go is None:
        missing("go is not installed (Debian package golang-go)")
    if not os.path.isdir(SPRIG):
        missing("sprig is not installed (Debian package golang-github-masterminds-sprig-dev)")
    out = os.path.join(WORK, "helm_render")
    env = dict(os.environ, GOPATH="/usr/share/gocode", GO111MODULE="off", GOFLAGS="",
               GOCACHE=os.path.join(WORK, "gocache"), GOPROXY="off")
    subprocess.run([go, "build", "-o", out, os.path.join(HERE, "helm_render", "main.go")],
                   env=env, check=True)
    return out


def render(renderer, *values, expect_ok=True):
    args = [renderer, "-chart", CHART, "-name", "demo", "-namespace", "ml"]
    for v in values:
        args += ["-f", v]
    r = subprocess.run(args, capture_output=True, text=True)
    if not expect_ok:
        return r
    if r.returncode != 0:
        raise RuntimeError("render failed: " + r.stderr)
    docs = [d for d in yaml.safe_load_all(r.stdout) if d]
    return r.stdout, docs


def validate(name, text):
    path = os.path.join(WORK, name + ".yaml")
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([os.path.join(VENV, "bin", "kubernetes-validate"), "--strict",
                        "-k", "1.29.0", path], capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


# A whole number printed the way Go prints a large float64 (Helm's type for every number in
# the values): 6.7108864e+07.
FLOAT_NOTATION = re.compile(r"\b\d(\.\d+)?e\+\d+\b")


def check_no_float_notation(name, text):
    found = sorted(set(m.group(0) for m in FLOAT_NOTATION.finditer(text)))
    check(not found, "%s: numbers rendered in float notation: %s" % (name, found))


def by_kind(docs):
    out = {}
    for d in docs:
        out.setdefault(d["kind"], []).append(d)
    return out


def check_service_monitor(sm):
    spec = sm.get("spec", {})
    check(sm["apiVersion"] == "monitoring.coreos.com/v1", "ServiceMonitor apiVersion")
    check(spec.get("selector", {}).get("matchLabels"), "ServiceMonitor selector")
    eps = spec.get("endpoints", [])
    check(eps and eps[0].get("port") == "metrics" and eps[0].get("path") == "/metrics",
          "ServiceMonitor endpoint port/path")


def container(docs):
    return by_kind(docs)["StatefulSet"][0]["spec"]["template"]["spec"]["containers"][0]


def check_default(docs):
    k = by_kind(docs)
    for kind in ("ConfigMap", "StatefulSet", "ServiceMonitor", "ServiceAccount"):
        check(kind in k, "default: no %s" % kind)
    check("PodDisruptionBudget" not in k, "default: a PodDisruptionBudget for a single pod")
    check("Certificate" not in k, "default: a Certificate without tls.certManager.issuer")
    check(len(k.get("Service", [])) == 3, "default: want grpc, headless and metrics Services")
    check("HorizontalPodAutoscaler" not in k, "default: HPA should be off")
    sts = k["StatefulSet"][0]
    pod = sts["spec"]["template"]["spec"]
    c = container(docs)
    check(sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data",
          "data volume claim")
    check(any(m["name"] == "data" and m["mountPath"] == "/var/lib/adaptd"
              for m in c["volumeMounts"]), "data mounted at the data dir")
    check(c["livenessProbe"].get("grpc", {}).get("port") == 50051, "gRPC liveness probe")
    startup = c.get("startupProbe", {})
    check(startup.get("grpc", {}).get("port") == 50051, "gRPC startup probe")
    check(startup.get("periodSeconds", 0) * startup.get("failureThreshold", 0) >= 600,
          "the startup probe allows at least 10 minutes: %s" % startup)
    check(c["readinessProbe"].get("grpc", {}).get("service") == "adapt.v1.Adaptation",
          "gRPC readiness probe on adapt.v1.Adaptation")
    check(pod["securityContext"].get("runAsNonRoot") is True, "runAsNonRoot")
    check(c["securityContext"].get("allowPrivilegeEscalation") is False, "no privilege escalation")
    check(c["resources"].get("requests", {}).get("cpu"), "resource requests")
    check("nvidia.com/gpu" not in c["resources"].get("limits", {}), "no GPU by default")
    check_service_monitor(k["ServiceMonitor"][0])
    cfg = json.loads(k["ConfigMap"][0]["data"]["config.json"])
    check(cfg.get("maxMessageBytes") == "67108864",
          "default: maxMessageBytes %r" % cfg.get("maxMessageBytes"))
    check("memoryBudgetBytes" not in cfg, "default: a memory budget %r" % cfg)
    check("cluster" not in cfg and "env" not in c, "default: one replica is a single server")
    ports = {p["name"] for s in k["Service"] for p in s["spec"]["ports"]}
    check(ports == {"grpc", "metrics", "http"}, "service ports %s" % ports)
    # HTTP/JSON and the Open Inference Protocol on 8080 (docs/HTTP.md).
    check({"name": "http", "containerPort": 8080, "protocol": "TCP"} in c["ports"],
          "the http container port: %s" % c["ports"])
    check(any(p["name"] == "http" and p["port"] == 8080 and p["targetPort"] == "http"
              for p in k["Service"][0]["spec"]["ports"]), "the Service's http port")
    check(cfg.get("httpListen") == "0.0.0.0:8080", "default: httpListen %r" % cfg.get("httpListen"))
    check("models" not in {v["name"] for v in pod["volumes"]} and
          "models" not in {m["name"] for m in c["volumeMounts"]},
          "default: no models volume")


def check_custom(docs):
    k = by_kind(docs)
    check("ServiceMonitor" not in k and "PodDisruptionBudget" not in k
          and "ServiceAccount" not in k, "custom: disabled parts still rendered")
    check("HorizontalPodAutoscaler" not in k, "custom: an HPA")
    sts = k["StatefulSet"][0]
    check(sts["spec"]["replicas"] == 3, "custom: replicas %r" % sts["spec"].get("replicas"))
    c = container(docs)
    # Three replicas: a cluster on etcd of the three pods, each naming itself.
    check("--cluster-self=$(POD_NAME)" in c["args"], "custom: --cluster-self %s" % c["args"])
    env = {e["name"]: e for e in c.get("env", [])}
    check(env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") ==
          "metadata.name", "custom: POD_NAME from the pod's name: %s" % env)
    cluster = json.loads(k["ConfigMap"][0]["data"]["config.json"]).get("cluster", {})
    check(cluster == {"restartGraceSeconds": 90}, "custom: no member list: %r" % cluster)
    headless = [s for s in k["Service"] if s["spec"].get("clusterIP") == "None"]
    check(len(headless) == 1 and headless[0]["metadata"]["name"] == "demo-adaptd-headless" and
          sts["spec"]["serviceName"] == "demo-adaptd-headless",
          "custom: the members' addresses are the headless Service's")
    check(c["resources"]["limits"].get("nvidia.com/gpu") == 2, "GPU limit")
    check(c["image"] == "registry.example.com/adaptd-cuda:1.2.3", "image")
    check("--compile-threads=2" in c["args"], "extraArgs rendered through tpl: %s" % c["args"])
    check("tcpSocket" in c["livenessProbe"] and "tcpSocket" in c["startupProbe"],
          "TCP probes when probes.grpc is false")
    vols = {v["name"]: v for v in sts["spec"]["template"]["spec"]["volumes"]}
    check(vols.get("auth", {}).get("secret", {}).get("secretName") == "adaptd-tokens",
          "tokens Secret")
    check(vols.get("tls", {}).get("secret", {}).get("secretName") == "adaptd-tls", "TLS Secret")
    check(vols.get("models") == {"name": "models", "persistentVolumeClaim": {
              "claimName": "adaptd-models", "readOnly": True}},
          "custom: the models volume %r" % vols.get("models"))
    check({"name": "models", "mountPath": "/srv/models", "readOnly": True} in c["volumeMounts"],
          "custom: models mounted read-only at models.mountPath: %r" % c["volumeMounts"])
    check(sts["spec"]["volumeClaimTemplates"][0]["spec"].get("storageClassName") == "fast-ssd",
          "storage class")
    cfg = json.loads(k["ConfigMap"][0]["data"]["config.json"])
    check(cfg["metricsTenants"] == ["acme", "globex"] and len(cfg["encoders"]) == 2,
          "custom server config")
    check(cfg.get("maxMessageBytes") == "134217728" and
          cfg.get("memoryBudgetBytes") == "8589934592",
          "custom: 64-bit numbers in the server config: %r" % cfg)
    check(cfg.get("defaultQuota") == {"maxStores": "100", "maxMemoryBytes": "4294967296",
                                      "examplesPerSecond": 5000} and
          cfg.get("tenantQuotas") == {"bigco": {"maxStores": "1000", "examplesBurst": 20000.5}},
          "custom: quotas in the server config: %r" % cfg)


def check_etcd(docs):
    """Three pods as a cluster on etcd: no member list, each pod registering under its name at
    its headless DNS name, the durable log's config, its Secrets, and the volume a cache."""
    k = by_kind(docs)
    sts = k["StatefulSet"][0]
    pod = sts["spec"]["template"]["spec"]
    c = container(docs)
    check(c["args"][1:] == ["--cluster-self=$(POD_NAME)",
                            "--advertise-address=$(POD_NAME).demo-adaptd-headless.ml.svc."
                            "cluster.local:50051"], "etcd: args %s" % c["args"])
    check(c.get("envFrom") == [{"secretRef": {"name": "adaptd-s3"}}],
          "etcd: the S3 credentials from their Secret: %r" % c.get("envFrom"))
    cfg = json.loads(k["ConfigMap"][0]["data"]["config.json"])
    check(cfg.get("cluster") == {"memberTokenFile": "/etc/adaptd/cluster/token",
                                 "restartGraceSeconds": 90, "settleSeconds": 12},
          "etcd: cluster %r" % cfg.get("cluster"))
    check(cfg.get("durableLog") == {
        "etcdEndpoints": ["https://etcd-%d.etcd:2379" % i for i in range(3)],
        "etcdPrefix": "/adaptd-ml/", "leaseTtlSeconds": 5,
        "snapshotStore": "s3://adaptd-ml/snapshots", "s3Endpoint": "http://seaweedfs-s3:8333",
        "s3Region": "eu-west-1", "etcdQuotaBytes": "8589934592",
        "etcdCaFile": "/etc/adaptd/etcd/ca.crt", "etcdCertFile": "/etc/adaptd/etcd/tls.crt",
        "etcdKeyFile": "/etc/adaptd/etcd/tls.key"}, "etcd: durableLog %r" % cfg.get("durableLog"))
    pdb = k.get("PodDisruptionBudget", [{}])[0].get("spec", {})
    check(pdb.get("maxUnavailable") == 1 and
          pdb.get("selector", {}).get("matchLabels") ==
          sts["spec"]["selector"]["matchLabels"],
          "etcd: a PodDisruptionBudget of one pod at a time over the pods: %r" % pdb)
    vols = {v["name"]: v for v in pod["volumes"]}
    check(vols.get("data") == {"name": "data", "emptyDir": {"sizeLimit": "20Gi"}} and
          "volumeClaimTemplates" not in sts["spec"],
          "etcd: the data directory on an emptyDir: %r" % vols.get("data"))
    check(vols.get("etcd-tls", {}).get("secret", {}).get("secretName") == "adaptd-etcd-tls" and
          {"name": "etcd-tls", "mountPath": "/etc/adaptd/etcd", "readOnly": True}
          in c["volumeMounts"], "etcd: the etcd TLS Secret: %r" % vols.get("etcd-tls"))


def pod_dns_name(i):
    return "demo-adaptd-%d.demo-adaptd-headless.ml.svc.cluster.local" % i


def check_etcd_tls(docs):
    """A cluster on etcd with a cert-manager Certificate per pod ordinal (podCertificates 5 for
    3 replicas), each pod reading its own from a projected volume of every pod's Secret, and
    the restart grace derived from the termination grace (45 s + the 60 s margin)."""
    k = by_kind(docs)
    certs = k.get("Certificate", [])
    check([c["metadata"]["name"] for c in certs] == ["demo-adaptd-tls-%d" % i for i in range(5)],
          "etcd-tls: one Certificate per pod ordinal 0..4: %r"
          % [c["metadata"]["name"] for c in certs])
    services = ["demo-adaptd", "demo-adaptd.ml", "demo-adaptd.ml.svc",
                "demo-adaptd.ml.svc.cluster.local"]
    for i, cert in enumerate(certs):
        spec = cert["spec"]
        check(cert["apiVersion"] == "cert-manager.io/v1", "etcd-tls: Certificate apiVersion")
        check(spec.get("secretName") == "demo-adaptd-tls-%d" % i,
              "etcd-tls: Certificate %d's Secret %r" % (i, spec.get("secretName")))
        check(spec.get("dnsNames") == [pod_dns_name(i)] + services,
              "etcd-tls: Certificate %d's SANs %r" % (i, spec.get("dnsNames")))
        check({"server auth", "client auth"} <= set(spec.get("usages", [])),
              "etcd-tls: Certificate %d for server and client auth: %r"
              % (i, spec.get("usages")))
        check(spec.get("issuerRef") == {"name": "adaptd-ca", "kind": "ClusterIssuer",
                                        "group": "cert-manager.io"},
              "etcd-tls: Certificate %d's issuer %r" % (i, spec.get("issuerRef")))
        check(spec.get("duration") == "2160h" and spec.get("renewBefore") == "720h",
              "etcd-tls: Certificate %d's lifetime %r" % (i, spec))
    # The SAN each pod presents is the address it advertises (what routing clients dial).
    c = container(docs)
    advertised = [a for a in c["args"] if a.startswith("--advertise-address=")]
    check(advertised == ["--advertise-address=$(POD_NAME).demo-adaptd-headless.ml.svc."
                         "cluster.local:50051"], "etcd-tls: advertised %r" % advertised)
    check([a for a in c["args"] if a.startswith("--tls-")] ==
          ["--tls-cert=/etc/adaptd/tls/$(POD_NAME)/tls.crt",
           "--tls-key=/etc/adaptd/tls/$(POD_NAME)/tls.key",
           "--tls-client-ca=/etc/adaptd/tls/$(POD_NAME)/ca.crt"],
          "etcd-tls: each pod's own certificate by its name: %s" % c["args"])
    env = {e["name"]: e for e in c.get("env", [])}
    check(env.get("POD_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") ==
          "metadata.name", "etcd-tls: POD_NAME from the pod's name: %s" % env)
    pod = by_kind(docs)["StatefulSet"][0]["spec"]["template"]["spec"]
    vols = {v["name"]: v for v in pod["volumes"]}
    sources = vols.get("tls", {}).get("projected", {}).get("sources", [])
    want = [{"secret": {"name": "demo-adaptd-tls-%d" % i, "items": [
        {"key": key, "path": "demo-adaptd-%d/%s" % (i, key)}
        for key in ("tls.crt", "tls.key", "ca.crt")]}} for i in range(5)]
    check(sources == want, "etcd-tls: every pod's Secret under its pod name: %r" % sources)
    check({"name": "tls", "mountPath": "/etc/adaptd/tls", "readOnly": True} in c["volumeMounts"],
          "etcd-tls: the certificates mounted read-only: %r" % c["volumeMounts"])
    cfg = json.loads(k["ConfigMap"][0]["data"]["config.json"])
    check(cfg.get("cluster", {}).get("restartGraceSeconds") == 105,
          "etcd-tls: the restart grace derived, 45 s + 60 s: %r" % cfg.get("cluster"))
    check(k.get("PodDisruptionBudget", [{}])[0].get("spec", {}).get("maxUnavailable") == 1,
          "etcd-tls: a PodDisruptionBudget")


def check_certificate(cert):
    """cert-manager's Certificate, a CRD without a bundled schema, checked field by field."""
    spec = cert.get("spec", {})
    known = {"secretName", "dnsNames", "usages", "privateKey", "duration", "renewBefore",
             "issuerRef"}
    check(set(spec) <= known and {"secretName", "dnsNames", "issuerRef"} <= set(spec),
          "Certificate %s: fields %s" % (cert["metadata"]["name"], sorted(spec)))
    check(set(spec.get("issuerRef", {})) == {"name", "kind", "group"} and
          spec["issuerRef"]["kind"] in ("Issuer", "ClusterIssuer"),
          "Certificate %s: issuerRef %r" % (cert["metadata"]["name"], spec.get("issuerRef")))
    check(spec.get("privateKey") == {"algorithm": "ECDSA", "size": 256,
                                     "rotationPolicy": "Always"},
          "Certificate %s: privateKey %r" % (cert["metadata"]["name"], spec.get("privateKey")))


def check_etcd_member_starts(config_text):
    """A pod's rendered config starts a member of a cluster on a real etcd and SeaweedFS, the
    endpoints, TLS and Secrets moved to loopback ones (only where .ci/dev unpacked them)."""
    etcd_bin, weed_bin = os.environ.get("ADAPTD_ETCD_BIN"), os.environ.get("ADAPTD_WEED_BIN")
    if not etcd_bin or not weed_bin:
        return
    sys.path.insert(0, os.path.join(ROOT, "bench", "durable_log"))
    import services  # the etcd and SeaweedFS the durable log's benchmark runs

    tmp = tempfile.mkdtemp(prefix="adaptd-helm-etcd-")
    etcd = weed = None
    try:
        etcd = services.Etcd(etcd_bin, tmp)
        weed = services.SeaweedFs(weed_bin, tmp)
        config = json.loads(config_text)
        log = config["durableLog"]
        for key in ("etcdCaFile", "etcdCertFile", "etcdKeyFile", "etcdQuotaBytes"):
            log.pop(key)
        log.update(etcdEndpoints=etcd.client_urls, s3Endpoint=weed.endpoint,
                   snapshotStore="s3://%s/helm" % services.BUCKET, s3Region="us-east-1",
                   leaseTtlSeconds=2)
        token = os.path.join(tmp, "member-token")
        with open(token, "w") as f:
            f.write("m" * 32)
        config["cluster"]["memberTokenFile"] = token
        port = services.free_ports(1)[0]
        env = dict(os.environ, AWS_ACCESS_KEY_ID=services.ACCESS_KEY,
                   AWS_SECRET_ACCESS_KEY=services.SECRET_KEY)
        check_config_starts(json.dumps(config), "--cluster-self", "demo-adaptd-0",
                            "--advertise-address", "127.0.0.1:%d" % port,
                            listen="127.0.0.1:%d" % port, env=env)
    finally:
        for service in (weed, etcd):
            if service is not None:
                service.close()
        shutil.rmtree(tmp, ignore_errors=True)


def check_config_starts(config_text, *flags, listen="127.0.0.1:0", env=None):
    """adaptd accepts the rendered config (flags move it to loopback and a temp dir)."""
    binary = os.environ.get("ADAPTD_BIN")
    if not binary:
        return
    path = os.path.join(WORK, "config.json")
    with open(path, "w") as f:
        f.write(config_text)
    log_path = os.path.join(WORK, "adaptd.log")
    data = tempfile.mkdtemp(prefix="data-", dir=WORK)
    with open(log_path, "w") as log:
        p = subprocess.Popen([binary, "--config", path, "--listen", listen,
                              "--metrics-listen", "off", "--http-listen", "127.0.0.1:0",
                              "--data-dir", data] + list(flags),
                             stdout=log, stderr=subprocess.STDOUT, env=env)
    # Serving means the config was accepted; poll for it (or an exit) up to a deadline.
    deadline = time.monotonic() + 60
    serving = False
    while p.poll() is None and time.monotonic() < deadline:
        with open(log_path) as f:
            serving = any(line.startswith("adaptd: serving gRPC") for line in f)
        if serving:
            break
        time.sleep(0.05)
    if p.poll() is None:
        p.terminate()
        p.wait(timeout=10)
    with open(log_path) as f:
        out = f.read()
    check(serving, "adaptd did not serve with the rendered config: " + out)


def refused_cases(renderer):
    """Values the chart refuses, each with a message naming the value and the reason; and the
    derived restart grace with the chart's default termination grace."""
    etcd = os.path.join(HERE, "helm-values-etcd.yaml")
    cases = [
        ("both-tls", "tls:\n  existingSecret: adaptd-tls\n  certManager: {issuer: adaptd-ca}\n",
         "tls.existingSecret and tls.certManager.issuer: set one"),
        ("few-certs", "tls:\n  certManager: {issuer: adaptd-ca, podCertificates: 2}\n",
         "tls.certManager.podCertificates: 2 is fewer than replicas (3)"),
        ("long-grace", "cluster:\n  restartGraceSeconds: 0\nterminationGracePeriodSeconds: 3590\n",
         "cluster.restartGraceSeconds: at most 3600 (the server's limit), got 3650"),
        ("no-margin", "cluster:\n  restartGraceSeconds: 0\n  restartGraceMarginSeconds: 0\n",
         "cluster.restartGraceMarginSeconds: must be at least 1"),
    ]
    for name, text, message in cases:
        path = os.path.join(WORK, name + "-values.yaml")
        with open(path, "w") as f:
            f.write(text)
        r = render(renderer, etcd, path, expect_ok=False)
        check(r.returncode != 0 and message in r.stderr,
              "%s: not refused with %r: rc=%d %s" % (name, message, r.returncode, r.stderr))
    derived = os.path.join(WORK, "derived-grace-values.yaml")
    with open(derived, "w") as f:
        f.write("cluster:\n  restartGraceSeconds: 0\n")
    _, docs = render(renderer, etcd, derived)
    cfg = json.loads(by_kind(docs)["ConfigMap"][0]["data"]["config.json"])
    check(cfg["cluster"].get("restartGraceSeconds") == 90,
          "the default restart grace, 30 s + 60 s: %r" % cfg["cluster"])


def main():
    if not VENV or not os.path.exists(os.path.join(VENV, "bin", "kubernetes-validate")):
        missing("the deploy venv with kubernetes-validate is missing (%r)" % VENV)
    if shutil.which("yamllint") is None:
        missing("yamllint is not installed (Debian package yamllint)")
    os.makedirs(WORK, exist_ok=True)
    renderer = build_renderer()

    for name, values, checker in (("default", [], check_default),
                                  ("custom", [os.path.join(HERE, "helm-values-custom.yaml")],
                                   check_custom),
                                  ("etcd", [os.path.join(HERE, "helm-values-etcd.yaml")],
                                   check_etcd),
                                  ("etcd-tls", [os.path.join(HERE, "helm-values-etcd-tls.yaml")],
                                   check_etcd_tls)):
        text, docs = render(renderer, *values)
        print("%s: %d manifests: %s" % (name, len(docs), sorted(d["kind"] for d in docs)))
        rc, out = validate(name, text)
        check(rc == 0, "%s: kubernetes-validate failed:\n%s" % (name, out))
        unvalidated = [line for line in out.splitlines() if "Couldn't find schema" in line]
        check(all("ServiceMonitor" in line or "Certificate" in line for line in unvalidated),
              "%s: kinds without a schema: %s" % (name, unvalidated))
        for cert in by_kind(docs).get("Certificate", []):
            check_certificate(cert)
        checker(docs)
        check_no_float_notation(name, text)
        if name == "default":
            check_config_starts(by_kind(docs)["ConfigMap"][0]["data"]["config.json"])
        elif name == "etcd":
            check_etcd_member_starts(by_kind(docs)["ConfigMap"][0]["data"]["config.json"])
        elif name == "etcd-tls":
            pod_certificates.check(docs, by_kind, container, check, WORK)
        else:  # the quotas, as a pod reads them (its etcd and encoders' files are not here)
            config = json.loads(by_kind(docs)["ConfigMap"][0]["data"]["config.json"])
            check_config_starts(json.dumps({"defaultQuota": config["defaultQuota"],
                                            "tenantQuotas": config["tenantQuotas"]}))

    # The validator really validates: an unknown field and a wrong type fail.
    _, docs = render(renderer)
    sts = by_kind(docs)["StatefulSet"][0]
    sts["spec"]["replicas"] = "three"
    sts["spec"]["template"]["spec"]["containers"][0]["livenessProb"] = {}
    rc, out = validate("broken", yaml.safe_dump(sts))
    check(rc != 0, "kubernetes-validate accepted a broken StatefulSet:\n" + out)

    # An HPA is refused with the reason (a cluster's members are fixed by replicas).
    hpa = os.path.join(WORK, "hpa-values.yaml")
    with open(hpa, "w") as f:
        f.write("autoscaling:\n  enabled: true\n")
    r = render(renderer, hpa, expect_ok=False)
    check(r.returncode != 0 and "an HPA cannot scale adaptd" in r.stderr,
          "autoscaling.enabled was not refused: rc=%d %s" % (r.returncode, r.stderr))

    # A quota field the server does not know stops the install, named.
    quota = os.path.join(WORK, "bad-quota-values.yaml")
    with open(quota, "w") as f:
        f.write("config:\n  tenantQuotas:\n    acme: {maxstores: 5}\n")
    r = render(renderer, quota, expect_ok=False)
    check(r.returncode != 0 and "config.tenantQuotas.acme.maxstores: not a quota field" in r.stderr,
          "an unknown quota field was not refused: rc=%d %s" % (r.returncode, r.stderr))

    # A cluster with tokens needs the members' own token: refused without the Secret, and with
    # it the config names the mounted file.
    tokens = os.path.join(WORK, "cluster-tokens-values.yaml")
    with open(tokens, "w") as f:
        f.write("replicas: 2\ndurableLog:\n  etcdEndpoints: [http://etcd:2379]\n"
                "  snapshotStore: s3://adaptd/t\n"
                "config:\n  tokens: [{sha256: '%s', tenants: [acme]}]\n" %
                ("ab" * 32))
    r = render(renderer, tokens, expect_ok=False)
    check(r.returncode != 0 and "clusterTokenSecret is required" in r.stderr,
          "a cluster with tokens but no member token was not refused: rc=%d %s" %
          (r.returncode, r.stderr))
    with open(tokens, "a") as f:
        f.write("clusterTokenSecret: adaptd-member-token\n")
    _, docs = render(renderer, tokens)
    config = json.loads(by_kind(docs)["ConfigMap"][0]["data"]["config.json"])
    check(config["cluster"].get("memberTokenFile") == "/etc/adaptd/cluster/token",
          "member token file: %r" % config["cluster"])
    pod = by_kind(docs)["StatefulSet"][0]["spec"]["template"]["spec"]
    vols = {v["name"]: v for v in pod["volumes"]}
    check(vols.get("cluster-token", {}).get("secret", {}).get("secretName") ==
          "adaptd-member-token", "member token Secret volume: %r" % vols.get("cluster-token"))
    mounts = {m["name"]: m["mountPath"] for m in pod["containers"][0]["volumeMounts"]}
    check(mounts.get("cluster-token") == "/etc/adaptd/cluster", "member token mount %r" % mounts)

    # A cluster needs the durable log (the static member list was removed).
    static = os.path.join(WORK, "static-cluster-values.yaml")
    with open(static, "w") as f:
        f.write("replicas: 3\n")
    r = render(renderer, static, expect_ok=False)
    check(r.returncode != 0 and "replicas above 1 needs durableLog" in r.stderr,
          "a cluster without the durable log was not refused: rc=%d %s" %
          (r.returncode, r.stderr))

    # The durable log needs its object storage; an emptyDir needs the durable log.
    no_store = os.path.join(WORK, "no-snapshot-store-values.yaml")
    with open(no_store, "w") as f:
        f.write("durableLog:\n  etcdEndpoints: [http://etcd:2379]\n")
    r = render(renderer, no_store, expect_ok=False)
    check(r.returncode != 0 and "durableLog.snapshotStore is required" in r.stderr,
          "a durable log without snapshotStore was not refused: rc=%d %s" %
          (r.returncode, r.stderr))
    cache_only = os.path.join(WORK, "no-persistence-values.yaml")
    with open(cache_only, "w") as f:
        f.write("persistence:\n  enabled: false\n")
    r = render(renderer, cache_only, expect_ok=False)
    check(r.returncode != 0 and "persistence.enabled: false needs durableLog" in r.stderr,
          "an emptyDir without the durable log was not refused: rc=%d %s" %
          (r.returncode, r.stderr))

    refused_cases(renderer)

    # required: GPUs on without a count stop the render with the message.
    bad = os.path.join(WORK, "bad-values.yaml")
    with open(bad, "w") as f:
        f.write("gpu:\n  enabled: true\n  count: null\n")
    r = render(renderer, bad, expect_ok=False)
    check(r.returncode != 0 and "gpu.count is required" in r.stderr,
          "required did not stop the render: rc=%d %s" % (r.returncode, r.stderr))

    lint = [os.path.join(CHART, "values.yaml"), os.path.join(CHART, "Chart.yaml"),
            os.path.join(HERE, "helm-values-custom.yaml"),
            os.path.join(HERE, "helm-values-etcd.yaml"),
            os.path.join(HERE, "helm-values-etcd-tls.yaml"),
            os.path.join(ROOT, "deploy", "prometheus", "adaptd-rules.yaml"),
            os.path.join(HERE, "adaptd-rules-test.yaml"),
            os.path.join(ROOT, "deploy", "grafana", "adaptd-dashboard-configmap.yaml")]
    r = subprocess.run(["yamllint", "--strict", "-c", os.path.join(HERE, "yamllint.yaml")]
                       + lint, capture_output=True, text=True)
    check(r.returncode == 0, "yamllint:\n" + r.stdout + r.stderr)

    for failure in failures:
        print("FAIL:", failure)
    print("ok" if not failures else "%d failures" % len(failures))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
