"""adaptd scraped by a real Prometheus: every dashboard query and every rule returns data.

Starts adaptd (metrics on a free loopback port, a config with a tenant allow-list and a small
top-K), starts Debian's `prometheus` on loopback scraping it every second with the rules of
deploy/prometheus loaded, drives traffic with the Python client in two rounds a few scrapes
apart (a rate needs two samples of a series inside its window), waits a few more scrape and
rule-evaluation intervals, then asks Prometheus's HTTP API:

- every target of every panel in deploy/grafana/adaptd-dashboard.json returns at least one
  sample, with Grafana's variables substituted ($__rate_interval -> 1m, $job -> .*);
- every recording rule's series exists, and every rule evaluates with health "ok";
- every alert's expression returns data once its threshold comparisons are made `bool`
  (an alert's expression is otherwise empty while it does not fire);
- per-tenant series stay within the allow-list + top K + "other";
- every adaptd_* family scraped is listed in deploy/README.md's metric reference, and the
  durable log's and the cluster on etcd's families are there on a server without etcd (at
  zero);
- the request series carry the `transport` label: calls over gRPC and over the HTTP/JSON front
  end (docs/HTTP.md; a few of the same calls sent over HTTP each round) are counted apart, and
  the per-transport recorded error ratio holds both.

The panels and rules on etcd's own metrics (etcd's space against the durable log's guard) are
checked against one etcd member on loopback that Prometheus scrapes as job "etcd" where
ADAPTD_ETCD_BIN names etcd (.ci/dev unpacks it); without it they are reported and left out.
Panels of store kinds this build cannot create (the server answers UNIMPLEMENTED) are
reported and left out likewise. A missing `prometheus` binary is a failure.
Environment: ADAPTD_BIN, PROMETHEUS_BIN (default: prometheus on the PATH), ADAPTD_REPO_ROOT,
ADAPTD_ETCD_BIN (optional).
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import numpy as np
import yaml

from adaptd_client import AdaptdError, Client

ROOT = os.environ.get("ADAPTD_REPO_ROOT") or os.path.abspath(
    os.path.join(os.path.dirname(__file__), "..", ".."))
DASHBOARD = os.path.join(ROOT, "deploy", "grafana", "adaptd-dashboard.json")
RULES = os.path.join(ROOT, "deploy", "prometheus", "adaptd-rules.yaml")
README = os.path.join(ROOT, "deploy", "README.md")
# Present on every server from its start (deploy/README.md), so the dashboard's durable-log row
# and its alerts have data without a condition on the server's durability.
DURABLE_LOG_FAMILIES = [
    "adaptd_durable_log_commit_duration_seconds",
    "adaptd_durable_log_committed_records_total",
    "adaptd_durable_log_objects_total",
    "adaptd_durable_log_object_bytes_total",
    "adaptd_durable_log_restores_total",
    "adaptd_durable_log_restore_duration_seconds",
    "adaptd_durable_log_fence_failures_total",
    "adaptd_durable_log_errors_total",
    "adaptd_durable_log_snapshot_lag_seconds",
]
# Likewise the cluster on etcd's families (docs/CLUSTER_ETCD.md), at zero outside a cluster.
CLUSTER_FAMILIES = [
    "adaptd_cluster_shards",
    "adaptd_cluster_shards_without_holder",
    "adaptd_cluster_claims_total",
    "adaptd_cluster_releases_total",
    "adaptd_cluster_restores_in_flight",
    "adaptd_cluster_restore_seconds",
    "adaptd_cluster_lease_age_seconds",
    "adaptd_cluster_lease_ttl_seconds",
]
# A query on etcd's own metrics (a series name starting etcd_, or a rule recorded from them).
ETCD_QUERY = re.compile(r"\betcd_")
ETCD_QUOTA_BYTES = 1 << 30
SCRAPE_S = 1
TOP_K = 2
ALLOW = ["vip"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pdeathsig():
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM"] if setpriv else []


def wait_for(what, check, timeout_s, proc=None, log=None):
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if check():
                return
        except Exception:  # not up yet
            pass
        if proc is not None and proc.poll() is not None:
            raise RuntimeError("%s exited (%d):\n%s" % (what, proc.returncode, read(log)))
        if time.monotonic() > deadline:
            raise RuntimeError("%s not ready within %d s:\n%s" % (what, timeout_s, read(log)))
        time.sleep(0.2)


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-4000:]
    except (OSError, TypeError):
        return ""


class Prometheus:
    def __init__(self, url):
        self.url = url

    def get(self, path, **params):
        query = urllib.parse.urlencode(params)
        with urllib.request.urlopen(self.url + path + ("?" + query if query else ""),
                                    timeout=10) as r:
            body = json.load(r)
        if body.get("status") != "success":
            raise RuntimeError("%s %r: %s" % (path, params, body))
        return body["data"]

    def query(self, expr):
        return self.get("/api/v1/query", query=expr)["result"]


def http_calls(http_port):
    """A few calls over the HTTP/JSON front end: predictions, a listing and a caller mistake."""
    calls = [("/v1/Predict", {"tenant": "vip", "store": "s", "top_k": 1,
                              "inputs": [{"vector": {"values": [0.5] * 8}}]}),
             ("/v1/ListStores", {"tenant": "vip"}),
             ("/v1/GetStore", {"tenant": "vip", "store": "missing"})]
    for path, body in calls:
        request = urllib.request.Request("http://127.0.0.1:%d%s" % (http_port, path),
                                         data=json.dumps(body).encode(), method="POST")
        try:
            urllib.request.urlopen(request, timeout=30).read()
        except urllib.error.HTTPError as error:  # the caller mistake: 404
            if error.code != 404:
                raise


def drive(client, kinds, round_no, http_port):
    rng = np.random.default_rng(round_no)
    x = rng.normal(size=(120, 8))
    labels = ["pos" if v > 0 else "neg" for v in x[:, 0]]
    for tenant in ["vip", "t1", "t2", "t3", "t4"]:
        if round_no == 0:
            client.create_store(tenant, "s", kind="faast", output="labels")
        client.adapt(tenant, "s", x, labels=labels, batch=40)
        client.compile(tenant, "s")
        client.predict(tenant, "s", x[:16], top_k=2)
    # Feedback on served predictions (docs/FEEDBACK.md), one item resent: the served-accuracy,
    # feedback and remembered-memory series.
    if round_no == 0:
        client.create_store("vip", "fb", kind="faast", output="labels", feedback_window=1000)
    client.adapt("vip", "fb", x, labels=labels, batch=40)
    client.compile("vip", "fb")
    _, ids = client.predict_with_ids("vip", "fb", x[:16])
    time.sleep(0.05)  # a feedback delay above zero
    client.feedback("vip", "fb", list(zip(ids, labels[:16])))
    client.feedback("vip", "fb", [(ids[0], labels[0])])
    # A window of 4: each round's 16 predictions push 12 out (the drops by reason).
    if round_no == 0:
        client.create_store("vip", "fb-small", kind="faast", output="labels", feedback_window=4)
    client.adapt("vip", "fb-small", x, labels=labels, batch=40)
    client.compile("vip", "fb-small")
    client.predict_with_ids("vip", "fb-small", x[:16])
    for kind, output in kinds.items():
        if kind == "faast":
            continue
        try:
            if output == "labels":
                client.adapt("vip", kind, x, labels=labels, batch=40)
            else:
                client.adapt("vip", kind, x, targets=x[:, :4], batch=40)
            try:
                client.compile("vip", kind)  # fwpkm: applies a partial chunk
            except AdaptdError:
                pass
            client.predict("vip", kind, x[:8])
        except AdaptdError as error:
            print("note: %s store: %s" % (kind, error))
    http_calls(http_port)
    # Caller mistakes, for the code series.
    for call in (lambda: client.predict("vip", "missing", x[:1]),
                 lambda: client.get_store("vip", "bad name!")):
        try:
            call()
        except AdaptdError:
            pass


def create_optional_kinds(client):
    """The kinds this build can create, as {kind: output}; the stores are vip/<kind>."""
    made = {"faast": "labels"}
    for kind, params in (("falcon", {"variant": "1"}), ("fwpkm", {})):
        errors = []
        for output in ("labels", "vector:4"):
            try:
                client.create_store("vip", kind, kind=kind, output=output, **params)
                made[kind] = output
                break
            except AdaptdError as error:
                errors.append("%s: %s" % (output, error))
        if kind not in made:
            print("note: this build cannot create a %s store (%s): its panels are skipped"
                  % (kind, "; ".join(errors)))
    return made


def with_bool(expr):
    """Makes every comparison with a threshold return 0/1 instead of filtering."""
    return re.sub(r"\s(>|<|>=|<=|==|!=)\s(?!bool)", r" \1 bool ", expr)


def scraped_after(prom, t0):
    """A predicate: Prometheus holds an adaptd sample scraped after `t0` (Unix seconds)."""
    def check():
        return any(float(r["value"][1]) > t0 for r in prom.query('timestamp(up{job="adaptd"})'))
    return check


def documented_families():
    """The families deploy/README.md's "Metric reference" table names."""
    with open(README) as f:
        text = f.read()
    section = text.split("## Metric reference", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`(adaptd_[a-z0-9_]+)`", section))


def scraped_families(prom):
    """The adaptd_* families Prometheus holds, a histogram's _bucket/_sum/_count as one."""
    names = {n for n in prom.get("/api/v1/label/__name__/values") if n.startswith("adaptd_")}
    families = set()
    for name in names:
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and name[:-len(suffix)] + "_bucket" in names:
                name = name[:-len(suffix)]
                break
        families.add(name)
    return families


def start_etcd(tmp, procs):
    """One etcd member on loopback (ADAPTD_ETCD_BIN), its metrics at its client URL: the
    address to scrape, or None without the binary."""
    binary = os.environ.get("ADAPTD_ETCD_BIN")
    if not binary:
        return None
    client = "http://127.0.0.1:%d" % free_port()
    peer = "http://127.0.0.1:%d" % free_port()
    log_path = os.path.join(tmp, "etcd.log")
    with open(log_path, "wb") as log:
        procs.append(subprocess.Popen(
            pdeathsig() + [binary, "--name", "m0", "--data-dir", os.path.join(tmp, "etcd"),
                           "--listen-client-urls", client, "--advertise-client-urls", client,
                           "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                           "--initial-cluster", "m0=" + peer,
                           "--quota-backend-bytes", str(ETCD_QUOTA_BYTES)],
            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT))
    wait_for("etcd", lambda: urllib.request.urlopen(client + "/health", timeout=2).status == 200,
             60, procs[-1], log_path)
    return client[len("http://"):]


def evaluate(prom, kinds, with_etcd):
    """Every dashboard query, rule and tenant bound against Prometheus now: (failures,
    skipped panel titles, queries checked, rules). Without etcd scraped (`with_etcd` false),
    the queries and rules on etcd's metrics are skipped."""
    failures = []
    skipped = []
    with open(DASHBOARD) as f:
        dashboard = json.load(f)
    checked = 0
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = (target["expr"].replace("$__rate_interval", "1m").replace("$etcd_job", ".*")
                    .replace("$job", ".*"))
            kind = next((k for k in ("falcon", "fwpkm") if "adaptd_%s_" % k in expr), None)
            if (kind is not None and kind not in kinds) or (
                    not with_etcd and ETCD_QUERY.search(expr)):
                skipped.append(panel["title"])
                continue
            checked += 1
            if not prom.query(expr):
                failures.append("panel %r: no data for %s" % (panel["title"], expr))

    with open(RULES) as f:
        groups = yaml.safe_load(f)["groups"]
    rules = [r for g in groups for r in g["rules"]]
    for rule in rules:
        if not with_etcd and ETCD_QUERY.search(rule.get("record", "") + rule["expr"]):
            skipped.append(rule.get("record") or rule["alert"])
            continue
        if "record" in rule:
            if not prom.query(rule["record"]):
                failures.append("recording rule %s: no series" % rule["record"])
        else:
            expr = with_bool(rule["expr"])
            if not prom.query(expr):
                failures.append("alert %s: no data for %s" % (rule["alert"], expr))
    for group in prom.get("/api/v1/rules")["groups"]:
        for rule in group["rules"]:
            if rule.get("health") != "ok":
                failures.append("rule %s: health %s (%s)" % (
                    rule["name"], rule.get("health"), rule.get("lastError")))

    tenants = {s["metric"]["tenant"] for s in
               prom.query("count by (tenant) (adaptd_tenant_examples_ingested_total)")}
    if not ({"vip", "other"} <= tenants and len(tenants) <= len(ALLOW) + TOP_K + 1):
        failures.append("tenant series %s: want vip, other and at most %d tenants"
                        % (sorted(tenants), len(ALLOW) + TOP_K + 1))

    families = scraped_families(prom)
    for family in sorted(families - documented_families()):
        failures.append("metric %s: not in deploy/README.md's metric reference" % family)
    for family in DURABLE_LOG_FAMILIES + CLUSTER_FAMILIES:
        if family not in families:
            failures.append("metric %s: not scraped from a server without etcd" % family)

    transports = {s["metric"]["transport"] for s in
                  prom.query("count by (transport) (adaptd_requests_total)")}
    if transports != {"grpc", "http"}:
        failures.append("adaptd_requests_total's transports %s: want grpc and http"
                        % sorted(transports))
    ratios = {s["metric"].get("transport") for s in
              prom.query("adaptd:request_error_ratio_by_transport:rate5m")}
    if ratios != {"grpc", "http"}:
        failures.append("adaptd:request_error_ratio_by_transport:rate5m's transports %s: "
                        "want grpc and http" % sorted(ratios, key=str))

    return failures, skipped, checked, rules


def main():
    adaptd = os.environ.get("ADAPTD_BIN", "")
    prometheus = os.environ.get("PROMETHEUS_BIN") or shutil.which("prometheus")
    if not prometheus:
        print("FAIL: the prometheus binary is not installed (Debian package 'prometheus')")
        return 1
    tmp = tempfile.mkdtemp(prefix="adaptd-deploy-prom-")
    procs = []
    ok = False
    adaptd_log = os.path.join(tmp, "adaptd.log")
    prom_log = os.path.join(tmp, "prometheus.log")
    try:
        grpc_addr = "127.0.0.1:%d" % free_port()
        metrics_addr = "127.0.0.1:%d" % free_port()
        http_port = free_port()
        config = os.path.join(tmp, "adaptd.json")
        with open(config, "w") as f:
            json.dump({"metricsTenants": ALLOW, "metricsTopTenants": TOP_K}, f)
        with open(adaptd_log, "wb") as log:
            procs.append(subprocess.Popen(
                pdeathsig() + [adaptd, "--config", config, "--listen", grpc_addr,
                               "--metrics-listen", metrics_addr,
                               "--http-listen", "127.0.0.1:%d" % http_port,
                               "--data-dir", os.path.join(tmp, "data")],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT))
        client = Client(grpc_addr, timeout=30)
        wait_for("adaptd", lambda: Client(grpc_addr, timeout=1).health() == "SERVING", 20,
                 procs[-1], adaptd_log)

        etcd_addr = start_etcd(tmp, procs)
        scrape = [{"job_name": "adaptd", "static_configs": [{"targets": [metrics_addr]}]}]
        if etcd_addr:
            scrape.append({"job_name": "etcd", "static_configs": [{"targets": [etcd_addr]}]})
        prom_port = free_port()
        prom_config = os.path.join(tmp, "prometheus.yml")
        with open(prom_config, "w") as f:
            yaml.safe_dump({
                "global": {"scrape_interval": "%ds" % SCRAPE_S,
                           "evaluation_interval": "%ds" % SCRAPE_S},
                "rule_files": [RULES],
                "scrape_configs": scrape,
            }, f)
        with open(prom_log, "wb") as log:
            procs.append(subprocess.Popen(
                pdeathsig() + [prometheus, "--config.file=" + prom_config,
                               "--storage.tsdb.path=" + os.path.join(tmp, "tsdb"),
                               "--web.listen-address=127.0.0.1:%d" % prom_port],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT))
        prom = Prometheus("http://127.0.0.1:%d" % prom_port)
        wait_for("prometheus", lambda: urllib.request.urlopen(prom.url + "/-/ready",
                                                              timeout=2).status == 200,
                 60, procs[-1], prom_log)
        wait_for("the adaptd target", lambda: prom.query('up{job="adaptd"} == 1'), 30,
                 procs[-1], prom_log)

        kinds = create_optional_kinds(client)
        drive(client, kinds, 0, http_port)
        # A rate needs two samples of a series: wait for a scrape after each round (polling
        # Prometheus, not a fixed time), then poll every check until it holds or a deadline.
        wait_for("a scrape after round 0", lambda: scraped_after(prom, time.time()), 60,
                 procs[-1], prom_log)
        drive(client, kinds, 1, http_port)
        deadline = time.monotonic() + 90
        while True:
            failures, skipped, checked, rules = evaluate(prom, kinds, etcd_addr is not None)
            if not failures or time.monotonic() > deadline:
                break
            time.sleep(SCRAPE_S / 2)

        print("checked %d panel queries and %d rules; skipped panels and rules: %s"
              % (checked, len(rules), sorted(set(skipped)) or "none"))
        for failure in failures:
            print("FAIL:", failure)
        ok = not failures
        return 0 if ok else 1
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if not ok:
            sys.stderr.write("---- adaptd log ----\n%s\n---- prometheus log ----\n%s\n"
                             % (read(adaptd_log), read(prom_log)))
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
