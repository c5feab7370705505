"""The durable log's metrics from a real adaptd on etcd and SeaweedFS (deploy/README.md).

Starts a 3-member etcd and SeaweedFS with its bucket (bench/durable_log/services.py: every
S3 request signed), then scrapes adaptd's /metrics while it:

1. commits a few small writes: records, group transactions and a snapshot lag above 0;
2. is killed and started again: the store rebuilt from its log is a restore;
3. takes one write past 64 KiB (a payload object) and 1,030 small ones (past the snapshot
   bound of 1,024 records: a state and a read-out object);
4. takes a large write with object storage killed: a payload object that failed, and s3
   errors.

Fence failures count appends etcd refused for a stale fence, a race this test cannot time
(metrics_durable_log_test covers the counter).

Environment: ADAPTD_BIN, ADAPTD_ETCD_BIN, ADAPTD_WEED_BIN, PYTHONPATH with the Python client.
"""

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import numpy as np

from adaptd_client import AdaptdError, Client
from test_prometheus_scrape import ROOT, free_port, wait_for

sys.path.insert(0, os.path.join(ROOT, "bench", "durable_log"))
import services  # noqa: E402  (the etcd and SeaweedFS the durable log's benchmark runs)

# Short, so the restarted server waits little for its killed predecessor's claim to go.
LEASE_TTL_S = 2


class Adaptd:
    """adaptd on the durable log, with its own gRPC and metrics ports."""

    def __init__(self, tmp, name, flags):
        self.grpc, self.metrics = ["127.0.0.1:%d" % free_port() for _ in range(2)]
        self.log = os.path.join(tmp, name + ".log")
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [os.environ["ADAPTD_BIN"], "--listen", self.grpc, "--metrics-listen",
                 self.metrics, "--data-dir", os.path.join(tmp, name)] + flags,
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        wait_for(name, lambda: Client(self.grpc, timeout=1).health() == "SERVING", 90,
                 self.proc, self.log)
        self.client = Client(self.grpc, timeout=60)

    def scrape(self):
        """{series: value} of the adaptd_durable_log_* series."""
        with urllib.request.urlopen("http://%s/metrics" % self.metrics, timeout=10) as r:
            text = r.read().decode()
        return {m.group(1): float(m.group(2)) for m in
                re.finditer(r"^(adaptd_durable_log_\S+) (\S+)$", text, re.M)}

    def stop(self, sig=signal.SIGKILL):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=30)


def series(what, result=None):
    if result is None:
        return 'adaptd_durable_log_object_bytes_total{what="%s"}' % what
    return 'adaptd_durable_log_objects_total{result="%s",what="%s"}' % (result, what)


def main():
    for var in ("ADAPTD_BIN", "ADAPTD_ETCD_BIN", "ADAPTD_WEED_BIN"):
        if not os.environ.get(var):
            print("FAIL: %s is not set" % var)
            return 1
    tmp = tempfile.mkdtemp(prefix="adaptd-deploy-durable-log-")
    procs, servers, failures = [], [], []

    def check(ok, message):
        if not ok:
            failures.append(message)
        return ok

    try:
        etcd = services.Etcd(os.environ["ADAPTD_ETCD_BIN"], tmp)
        procs += etcd.processes
        weed = services.SeaweedFs(os.environ["ADAPTD_WEED_BIN"], tmp)
        procs.append(weed.process)
        with open(tmp + "/credentials", "w") as f:
            f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n"
                    % (services.ACCESS_KEY, services.SECRET_KEY))

        flags = ["--etcd-endpoints", ",".join(etcd.client_urls),
                 "--etcd-lease-ttl", str(LEASE_TTL_S),
                 "--snapshot-store", "s3://%s/m" % services.BUCKET, "--s3-endpoint", weed.endpoint,
                 "--s3-credentials-file", tmp + "/credentials"]
        rng = np.random.default_rng(0)
        x = rng.normal(size=(1200, 32))
        labels = ["pos" if v > 0 else "neg" for v in x[:, 0]]

        # 1. Small writes: records and transactions; their changes wait for a snapshot.
        first = Adaptd(tmp, "adaptd-1", flags)
        servers.append(first)
        first.client.create_store("t", "s", kind="faast", output="labels")
        first.client.adapt("t", "s", x[:40], labels=labels[:40], batch=40)
        first.client.compile("t", "s")
        m = first.scrape()
        check(m["adaptd_durable_log_committed_records_total"] >= 2, "records: %r" % m)
        check(m["adaptd_durable_log_commit_duration_seconds_count"] >= 1, "commits: %r" % m)
        check(m["adaptd_durable_log_snapshot_lag_seconds"] > 0, "snapshot lag: %r" % m)
        first.stop()

        # 2. Started again: the store is rebuilt from its log.
        second = Adaptd(tmp, "adaptd-2", flags)
        servers.append(second)
        m = second.scrape()
        check(m["adaptd_durable_log_restores_total"] >= 1, "restores: %r" % m)
        check(m["adaptd_durable_log_restore_duration_seconds_count"] >= 1, "restore time: %r" % m)

        # 3. A record past 64 KiB, then past the snapshot bound.
        second.client.adapt("t", "s", x[:600], labels=labels[:600], batch=600)
        for i in range(1030):
            second.client.adapt("t", "s", x[i:i + 1], labels=labels[i:i + 1], batch=1)
        wait_for("a state object", lambda: second.scrape()[series("state", "ok")] >= 1, 60)
        m = second.scrape()
        check(m[series("payload", "ok")] == 1 and m[series("payload")] > 64 << 10,
              "payload object: %r" % m)
        check(m[series("readout", "ok")] >= 1 and m[series("state")] > 0, "state: %r" % m)

        # 4. Object storage killed: the next large write fails, counted.
        services.kill(weed.process)
        try:
            second.client.adapt("t", "s", x[600:], labels=labels[600:], batch=600)
            check(False, "a large write with object storage down was acknowledged")
        except AdaptdError:
            pass
        m = second.scrape()
        check(m[series("payload", "error")] >= 1, "payload errors: %r" % m)
        check(m['adaptd_durable_log_errors_total{service="s3"}'] >= 1, "s3 errors: %r" % m)

        commits = m["adaptd_durable_log_commit_duration_seconds_count"]
        print("commits %d (mean %.2f ms), records %d; objects ok: payload %d B, state %d B, "
              "readout %d B; restore %.2f ms; s3 errors %d" % (
                  commits, 1e3 * m["adaptd_durable_log_commit_duration_seconds_sum"] / commits,
                  m["adaptd_durable_log_committed_records_total"], m[series("payload")],
                  m[series("state")], m[series("readout")],
                  1e3 * m["adaptd_durable_log_restore_duration_seconds_sum"],
                  m['adaptd_durable_log_errors_total{service="s3"}']))
        for failure in failures:
            print("FAIL:", failure)
        print("ok" if not failures else "%d failures" % len(failures))
        return 0 if not failures else 1
    finally:
        for server in reversed(servers):
            server.stop()
        for proc in reversed(procs):
            services.kill(proc)
        if failures:
            for name in sorted(os.listdir(tmp)):
                if name.endswith(".log"):
                    sys.stderr.write("---- %s ----\n%s\n" % (
                        name, open(os.path.join(tmp, name), errors="replace").read()[-3000:]))
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
