"""A cluster of adaptd processes on loopback for the end-to-end tests: the cluster on etcd
(docs/CLUSTER_ETCD.md), over a 3-member etcd and SeaweedFS (bench/durable_log/services.py, the
binaries in ADAPTD_ETCD_BIN and ADAPTD_WEED_BIN), each member registering under its name at its
address. A store is served by the holder of its shard (fnv1a64(`tenant/store`) mod 4096),
which, once the cluster is settled, is the member the rendezvous weight of "shard-SSSS" names.

`static_owner` is the owner of a store in the static member list that came before it (docs/CLUSTER.md,
"Migration"), whose data directories `adaptctl cluster migrate` loads.
"""

import json
import os
import shutil
import subprocess
import sys
import time

SHARDS = 4096
MASK = (1 << 64) - 1
ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))

sys.path.insert(0, os.path.join(ROOT, "tests", "e2e", "http"))
import http_e2e  # noqa: E402

free_port = http_e2e.free_port  # the cluster tests' ports, as the HTTP tests'


# The weight of docs/CLUSTER_ETCD.md, "Shards", written from the document.
def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data.encode():
        h = ((h ^ b) * 0x100000001b3) & MASK
    return h


def fmix64(x):
    x ^= x >> 33
    x = (x * 0xff51afd7ed558ccd) & MASK
    x ^= x >> 33
    x = (x * 0xc4ceb9fe1a85ec53) & MASK
    x ^= x >> 33
    return x


def rotl64(x, r):
    return ((x << r) | (x >> (64 - r))) & MASK


def rendezvous(members, key):
    weights = [(fmix64(fnv1a64(m) ^ rotl64(fnv1a64(key), 17)), m) for m in members]
    best = max(w for w, _ in weights)
    return min(m for w, m in weights if w == best)


def owner_of(members, key):
    """The member serving the store `key` ("tenant/store") in a settled cluster."""
    return rendezvous(members, "shard-%04x" % (fnv1a64(key) % SHARDS))


def static_owner(members, key):
    """The owner of the store `key` in a static member list of `members`."""
    return rendezvous(members, key)


class Backing:
    """What a cluster needs beside its members: etcd and SeaweedFS."""

    def __init__(self, work, lease_ttl_s=2):
        self.etcd = self.weed = None
        self.lease_ttl_s = lease_ttl_s
        etcd_bin, weed_bin = os.environ.get("ADAPTD_ETCD_BIN"), os.environ.get("ADAPTD_WEED_BIN")
        if not etcd_bin or not weed_bin:
            raise RuntimeError("a cluster on etcd needs ADAPTD_ETCD_BIN and ADAPTD_WEED_BIN")
        sys.path.insert(0, os.path.join(ROOT, "bench", "durable_log"))
        import services  # the etcd and SeaweedFS the durable log's benchmark runs

        self.services = services
        try:
            self.etcd = services.Etcd(etcd_bin, work)
            self.weed = services.SeaweedFs(weed_bin, work)
        except BaseException:
            self.close()
            raise
        self.credentials = os.path.join(work, "s3-credentials")
        with open(self.credentials, "w") as f:
            f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n"
                    % (services.ACCESS_KEY, services.SECRET_KEY))

    def member_flags(self, name, address):
        """adaptd's flags that make it member `name` of the cluster, reached at `address`."""
        return ["--cluster-self", name, "--advertise-address", address,
                "--etcd-endpoints", ",".join(self.etcd.client_urls),
                "--etcd-lease-ttl", str(self.lease_ttl_s),
                "--snapshot-store", "s3://%s/e2e" % self.services.BUCKET,
                "--s3-endpoint", self.weed.endpoint, "--s3-credentials-file", self.credentials]

    def close(self):
        for service in (self.weed, self.etcd):
            if service is not None:
                service.close()
        self.etcd = self.weed = None


def die_with_parent():
    """A prefix for a server's command line: it ends when the test does."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM"] if setpriv else []


def stop(server, timeout_s=15):
    """Terminates a running server, killing it when it has not ended within `timeout_s`."""
    if server.poll() is not None:
        return
    server.terminate()
    try:
        server.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def clean_up(logs, backing, tmp):
    """After the servers ended: closes their log files and the Backing, removes `tmp`."""
    for log in logs:
        log.close()
    backing.close()
    shutil.rmtree(tmp, ignore_errors=True)


def wait_until_serving(adaptctl, name, server, address, server_log, timeout_s):
    """Until adaptd `name` (the Popen `server`) answers at `address`; `server_log()` is its
    output, for the error when it exits."""
    deadline = time.monotonic() + timeout_s
    while True:
        if server.poll() is not None:
            raise RuntimeError("adaptd %s exited: %s" % (name, server_log()))
        probe = subprocess.run([adaptctl, "--addr", address, "--timeout", "2", "encoders"],
                               capture_output=True, text=True)
        if probe.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise RuntimeError("adaptd %s did not answer: %s" % (name, probe.stderr))
        time.sleep(0.2)


def wait_until_settled(adaptctl, address, timeout_s):
    """Until every shard is held by its desired owner, after the members' settle time, as the
    member at `address` sees it (`adaptctl cluster status`)."""
    deadline = time.monotonic() + timeout_s
    while True:
        probe = subprocess.run([adaptctl, "--addr", address, "--timeout", "5", "cluster",
                                "status"], capture_output=True, text=True)
        if probe.returncode == 0 and json.loads(probe.stdout)["settled"]:
            return
        if time.monotonic() > deadline:
            raise RuntimeError("the cluster did not settle: %s %s" % (probe.stdout, probe.stderr))
        time.sleep(0.2)
