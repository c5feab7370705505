#!/usr/bin/python3
"""End-to-end test of backup and restore (docs/CLUSTER_OPERATIONS.md, "Backup and restore";
deploy/README.md, "Backup and restore").

On loopback: a 3-member etcd and SeaweedFS (tests/e2e/cluster/cluster_kinds.py), two adaptd
members of a cluster on etcd, clients writing examples with ids. Then, as the procedure says:

- With the hold: `adaptctl cluster backup-hold --minutes 10`, `etcdctl snapshot save`, the
  bucket's prefix copied object by object through the S3 API (curl's SigV4) into a fresh bucket
  while a client keeps writing and a store's log passes its bound, so its state is written
  again (the state it supersedes is kept: the hold); `backup-hold --clear`. A fresh 3-member
  etcd from the snapshot (`etcdctl snapshot restore`, a new cluster token) and two new members
  on it and the copied bucket serve every example acknowledged before the etcd snapshot: the
  quiet stores answer the same predictions and example counts as then, and every id the busy
  store acknowledged before it is a duplicate there; `adaptctl cluster check` passes.
- Without the hold, a store's state written again between the etcd snapshot and the copy
  deletes the state the snapshot points at: `adaptctl cluster check` on the restored etcd and
  bucket exits 1 naming that object.

Usage: backup_restore_e2e_test.py --adaptctl PATH --adaptd PATH [unittest arguments], with
ADAPTD_ETCD_BIN, ADAPTD_ETCDCTL_BIN and ADAPTD_WEED_BIN (PYTHONPATH must hold the generated
modules, adapt/v1/*_pb2*.py, as ctest sets it).
"""

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import xml.etree.ElementTree as ET

os.environ.setdefault("ADAPTD_CLUSTER_KIND", "etcd")  # cluster_kinds' Backing: etcd and S3

import grpc
from adapt.v1 import adapt_pb2, adapt_pb2_grpc
import cluster_kinds

ADAPTCTL = os.environ.get("ADAPTCTL_BIN", "")
ADAPTD = os.environ.get("ADAPTD_BIN", "")
ETCDCTL = os.environ.get("ADAPTD_ETCDCTL_BIN", "")
START_TIMEOUT_S = 60.0
DIM = 6
LABELS = ["red", "green", "blue"]
MEMBERS = ["a", "b"]
# The restored cluster's members: names of their own, since the etcd snapshot brings back the
# first members' registrations and claims until their leases lapse.
RESTORED = ["ra", "rb"]
S3_PREFIX = "e2e"  # the members' --snapshot-store s3://BUCKET/e2e
BIG = "acme/big"  # the store whose log is driven past its bound (1,024 records)
S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def etcdctl(*args, endpoints=None):
    command = [ETCDCTL] + (["--endpoints", ",".join(endpoints)] if endpoints else []) + list(args)
    result = subprocess.run(command, capture_output=True, text=True,
                            env=dict(os.environ, ETCDCTL_API="3"))
    if result.returncode != 0:
        raise RuntimeError("etcdctl %s: %s" % (" ".join(args), result.stderr))
    return result.stdout


class RestoredEtcd:
    """Three etcd members restored from an `etcdctl snapshot save` file with a new cluster
    token, each with its own data directory, on fresh loopback ports."""

    def __init__(self, etcd_bin, snapshot, work, name):
        self.processes = []
        ports = [free_port() for _ in range(6)]
        self.client_urls = ["http://127.0.0.1:%d" % ports[2 * i] for i in range(3)]
        peers = ["http://127.0.0.1:%d" % ports[2 * i + 1] for i in range(3)]
        cluster = ",".join("m%d=%s" % (i, peers[i]) for i in range(3))
        token = "adaptd-restored-" + name
        for i in range(3):
            data = os.path.join(work, "%s-m%d" % (name, i))
            etcdctl("snapshot", "restore", snapshot, "--name", "m%d" % i, "--data-dir", data,
                    "--initial-cluster", cluster, "--initial-cluster-token", token,
                    "--initial-advertise-peer-urls", peers[i])
            log = open(os.path.join(work, "%s-m%d.log" % (name, i)), "wb")
            self.processes.append(subprocess.Popen(
                [etcd_bin, "--name", "m%d" % i, "--data-dir", data,
                 "--listen-client-urls", self.client_urls[i],
                 "--advertise-client-urls", self.client_urls[i],
                 "--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
                 "--initial-cluster", cluster, "--initial-cluster-token", token,
                 "--logger", "zap", "--log-outputs", "stderr"],
                stdout=log, stderr=subprocess.STDOUT))
            log.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            health = subprocess.run(
                [ETCDCTL, "--endpoints", ",".join(self.client_urls), "endpoint", "health"],
                capture_output=True, text=True, env=dict(os.environ, ETCDCTL_API="3"))
            if health.returncode == 0:
                return
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError("the restored etcd is not healthy: %s" % health.stderr)
            time.sleep(0.3)

    def close(self):
        for p in self.processes:
            if p.poll() is None:
                p.kill()
                p.wait()


class Bucket:
    """One bucket of the SeaweedFS S3 gateway, through signed requests (curl's SigV4)."""

    def __init__(self, weed, services, name):
        self.weed, self.services, self.name = weed, services, name

    def curl(self, method, path, *extra):
        out = subprocess.run(
            ["curl", "-s", "-w", "\n%{http_code}", "-X", method, "--max-time", "20",
             "--aws-sigv4", "aws:amz:us-east-1:s3",
             "--user", "%s:%s" % (self.services.ACCESS_KEY, self.services.SECRET_KEY)] +
            list(extra) + [self.weed.endpoint + "/" + self.name + path],
            capture_output=True)
        body, _, code = out.stdout.rpartition(b"\n")
        return (int(code) if code.isdigit() else 0), body

    def create(self):
        code, body = self.curl("PUT", "")
        if code not in (200, 409):
            raise RuntimeError("create bucket %s: HTTP %d %s" % (self.name, code, body[:200]))

    def keys(self, prefix):
        """Every key under `prefix` (ListObjectsV2, every page)."""
        keys, token = [], ""
        while True:
            query = "?list-type=2&max-keys=1000&prefix=" + urllib.parse.quote(prefix, safe="")
            if token:
                query += "&continuation-token=" + urllib.parse.quote(token, safe="")
            code, body = self.curl("GET", query)
            if code != 200:
                raise RuntimeError("ListObjectsV2: HTTP %d %s" % (code, body[:200]))
            root = ET.fromstring(body)
            keys += [c.find(S3_NS + "Key").text for c in root.iter(S3_NS + "Contents")]
            token = root.findtext(S3_NS + "NextContinuationToken") or ""
            if root.findtext(S3_NS + "IsTruncated") != "true" or not token:
                return keys

    def copy(self, key, to, scratch):
        """Copies `key` into the bucket `to` (GET, then PUT); False when it is gone."""
        path = "/" + urllib.parse.quote(key)
        code, body = self.curl("GET", path)
        if code == 404:
            return False
        if code != 200:
            raise RuntimeError("GET %s: HTTP %d" % (key, code))
        with open(scratch, "wb") as f:
            f.write(body)
        code, body = to.curl("PUT", path, "-T", scratch)
        if code != 200:
            raise RuntimeError("PUT %s: HTTP %d %s" % (key, code, body[:200]))
        return True


class BackupRestoreEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for name, path in (("adaptctl", ADAPTCTL), ("adaptd", ADAPTD), ("etcdctl", ETCDCTL)):
            if not path or not os.access(path, os.X_OK):
                raise RuntimeError("%s binary not found or not executable: %r" % (name, path))
        cls.tmp = tempfile.mkdtemp(prefix="adaptd-backup-e2e-")
        cls.rng = random.Random(39)
        cls.centers = {label: [cls.rng.uniform(-3, 3) for _ in range(DIM)] for label in LABELS}
        cls.probes = [adapt_pb2.Input(vector=adapt_pb2.FloatVector(
            values=[cls.rng.uniform(-3, 3) for _ in range(DIM)])) for _ in range(6)]
        cls.servers, cls.restored = [], []
        cls.backing = None
        try:
            cls.backing = cluster_kinds.Backing(cls.tmp)
            cls.bucket = Bucket(cls.backing.weed, cls.backing.services,
                                cls.backing.services.BUCKET)
            cls.members = cls.start_members(MEMBERS, cls.backing.etcd.client_urls,
                                            cls.bucket.name)
            cls.stub = adapt_pb2_grpc.AdaptationStub(grpc.insecure_channel(cls.members[0][1]))
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for process, _, log in cls.servers:
            if process.poll() is None:
                process.kill()
                process.wait()
            log.close()
        for etcd in cls.restored:
            etcd.close()
        if cls.backing is not None:
            cls.backing.close()
        if os.environ.get("BACKUP_E2E_KEEP"):
            sys.stderr.write("kept %s\n" % cls.tmp)
        else:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    # --- the clusters ----------------------------------------------------------------------

    @classmethod
    def durable_log_flags(cls, etcd_urls, bucket):
        return ["--etcd-endpoints", ",".join(etcd_urls),
                "--snapshot-store", "s3://%s/%s" % (bucket, S3_PREFIX),
                "--s3-endpoint", cls.backing.weed.endpoint,
                "--s3-credentials-file", cls.backing.credentials]

    @classmethod
    def start_members(cls, names, etcd_urls, bucket):
        """Members `names` of a cluster on etcd at `etcd_urls` and `bucket`, once they alone
        are its members and it is settled; returns [(process, address, log)]."""
        started = []
        for m in names:
            addr = "127.0.0.1:%d" % free_port()
            log = open(os.path.join(cls.tmp, "%s.log" % m), "w")
            process = subprocess.Popen(
                [ADAPTD, "--listen", addr, "--metrics-listen", "off",
                 "--data-dir", os.path.join(cls.tmp, "data-" + m),
                 "--cluster-self", m, "--advertise-address", addr,
                 "--etcd-lease-ttl", str(cls.backing.lease_ttl_s)] +
                cls.durable_log_flags(etcd_urls, bucket),
                stdout=log, stderr=subprocess.STDOUT)
            started.append((process, addr, log))
            cls.servers.append(started[-1])
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            probe = cls.ctl(started[0][1], "cluster", "status")
            status = json.loads(probe.stdout) if probe.returncode == 0 else {}
            if status.get("settled") and sorted(
                    m["name"] for m in status.get("members", [])) == sorted(names):
                return started
            for process, _, log in started:
                if process.poll() is not None:
                    raise RuntimeError("adaptd exited (log %s)" % log.name)
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster %s did not settle: %s %s" %
                                   (names, probe.stdout, probe.stderr))
            time.sleep(0.3)

    @classmethod
    def stop_members(cls, members):
        for process, _, log in members:
            process.kill()
            process.wait()

    @classmethod
    def ctl(cls, addr, *args):
        return subprocess.run([ADAPTCTL, "--addr", addr, "--timeout", "60"] + list(args),
                              capture_output=True, text=True)

    @classmethod
    def must(cls, addr, *args):
        result = cls.ctl(addr, *args)
        if result.returncode != 0:
            raise RuntimeError("adaptctl %s: %s" % (" ".join(args), result.stderr))
        return json.loads(result.stdout.splitlines()[-1])

    def hold(self, *args):
        return self.must(self.members[0][1], "cluster", "backup-hold", "--etcd-endpoints",
                         ",".join(self.backing.etcd.client_urls), *args)

    def check(self, etcd_urls, bucket):
        """`adaptctl cluster check` on `etcd_urls` and `bucket`: (exit status, summary, stderr)."""
        result = self.ctl(self.members[0][1], "cluster", "check",
                          *self.durable_log_flags(etcd_urls, bucket))
        lines = result.stdout.splitlines()
        return result.returncode, (json.loads(lines[-1]) if lines else None), result.stderr

    # --- clients ---------------------------------------------------------------------------

    def examples(self, key, first, count, ids=True):
        out = []
        for i in range(first, first + count):
            label = LABELS[i % len(LABELS)]
            values = [c + self.rng.gauss(0, 0.6) for c in self.centers[label]]
            out.append(adapt_pb2.Example(
                input=adapt_pb2.Input(vector=adapt_pb2.FloatVector(values=values)), label=label,
                id=("%s-%d" % (key, i)) if ids else ""))
        return out

    @staticmethod
    def adapt(stub, key, messages):
        tenant, store = key.split("/")
        return stub.Adapt(iter([adapt_pb2.AdaptRequest(tenant=tenant, store=store, examples=m)
                                for m in messages]), timeout=60)

    def observe(self, stub, key):
        tenant, store = key.split("/")
        predicted = stub.Predict(adapt_pb2.PredictRequest(
            tenant=tenant, store=store, inputs=self.probes, top_k=3), timeout=60)
        info = stub.GetStore(adapt_pb2.GetStoreRequest(tenant=tenant, store=store), timeout=60)
        scores = [[(s.label, round(s.score, 5)) for s in p.labels] for p in predicted.predictions]
        return scores, info.examples

    def states_of(self, bucket, key):
        return {k for k in bucket.keys("%s/snapshots/%s/" % (S3_PREFIX, key))
                if k.endswith(".state")}

    def snapshot_big(self):
        """Drives BIG's log past its bound (1,024 records: 1,080 Adapt calls, one record each,
        from 12 clients at once), so that a member writes its state to the bucket; waits for
        the new state object. Returns the state objects before and after."""
        before = self.states_of(self.bucket, BIG)
        calls = [[self.examples(BIG, 0, 1, ids=False) for _ in range(90)] for _ in range(12)]

        def client(n):
            stub = adapt_pb2_grpc.AdaptationStub(grpc.insecure_channel(self.members[n % 2][1]))
            for batch in calls[n]:
                self.adapt(stub, BIG, [batch])

        threads = [threading.Thread(target=client, args=(n,)) for n in range(len(calls))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        deadline = time.monotonic() + 30
        while True:
            after = self.states_of(self.bucket, BIG)
            if after - before:
                return before, after
            if time.monotonic() > deadline:
                self.fail("no new state of %s within 30 s: %s" % (BIG, sorted(after)))
            time.sleep(0.2)

    def copy_bucket(self, keys, to):
        to.create()
        scratch = os.path.join(self.tmp, "object")
        return sum(self.bucket.copy(k, to, scratch) for k in keys)

    # --- the tests -------------------------------------------------------------------------

    def test_a_hold_makes_a_consistent_backup(self):
        quiet = ["acme/faast", "acme/falcon"]
        self.must(self.members[0][1], "store", "create", "acme/faast", "--kind", "faast",
                  "--set", "dim=%d" % DIM, "--set", "ridge=1")
        self.must(self.members[0][1], "store", "create", "acme/falcon", "--kind", "falcon",
                  "--set", "dim=%d" % DIM)
        for key in ("acme/busy", BIG):
            self.must(self.members[0][1], "store", "create", key, "--kind", "faast",
                      "--set", "dim=%d" % DIM, "--set", "ridge=1")
        for key in quiet:
            self.adapt(self.stub, key, [self.examples(key, 0, 30), self.examples(key, 30, 30)])
        self.must(self.members[1][1], "compile", "acme/faast")
        expected = {key: self.observe(self.stub, key) for key in quiet}
        self.snapshot_big()  # BIG has a state in the bucket before the backup

        # A client writing to acme/busy throughout, noting when each call was acknowledged.
        acked, stop = [], threading.Event()

        def busy():
            stub = adapt_pb2_grpc.AdaptationStub(grpc.insecure_channel(self.members[1][1]))
            n = 0
            while not stop.is_set():
                batch = self.examples("acme/busy", n, 4)
                self.adapt(stub, "acme/busy", [batch])
                acked.append((time.monotonic(), [e.id for e in batch]))
                n += 4
                time.sleep(0.02)

        writer = threading.Thread(target=busy)
        writer.start()
        try:
            time.sleep(1.0)
            held = self.hold("--minutes", "10")
            self.addCleanup(self.hold, "--clear")
            self.assertTrue(held["held"], held)
            snapshot = os.path.join(self.tmp, "etcd-held.db")
            taken = time.monotonic()
            etcdctl("snapshot", "save", snapshot, endpoints=self.backing.etcd.client_urls[:1])
            # Written after the snapshot: not in the backup.
            self.adapt(self.stub, "acme/faast", [self.examples("acme/faast", 60, 9)])
            listed = self.bucket.keys(S3_PREFIX + "/")
            states, written = self.snapshot_big()  # a state written again during the copy
            copy = Bucket(self.backing.weed, self.backing.services, "adaptd-restored")
            copied = self.copy_bucket(listed, copy)
            # The hold kept the state the new one superseded, which the etcd snapshot names.
            self.assertEqual(states & self.states_of(self.bucket, BIG), states)
            cleared = self.hold("--clear")
            self.assertFalse(cleared["held"], cleared)
        finally:
            stop.set()
            writer.join()
        self.assertEqual(copied, len(listed))
        before_snapshot = [i for at, ids in acked if at < taken for i in ids]
        self.assertGreater(len(before_snapshot), 0)

        etcd = RestoredEtcd(os.environ["ADAPTD_ETCD_BIN"], snapshot, self.tmp, "held")
        self.restored.append(etcd)
        members = self.start_members(RESTORED, etcd.client_urls, copy.name)
        stub = adapt_pb2_grpc.AdaptationStub(grpc.insecure_channel(members[1][1]))
        for key in quiet:
            self.assertEqual(self.observe(stub, key), expected[key], key)
        # Every id acknowledged before the snapshot is applied there: resent, each a duplicate.
        resend = [adapt_pb2.Example(input=adapt_pb2.Input(vector=adapt_pb2.FloatVector(
            values=[0.0] * DIM)), label=LABELS[0], id=i) for i in before_snapshot]
        answer = self.adapt(stub, "acme/busy",
                            [resend[i:i + 200] for i in range(0, len(resend), 200)])
        self.assertEqual(answer.duplicates, len(before_snapshot))
        code, summary, errors = self.check(etcd.client_urls, copy.name)
        self.assertEqual(code, 0, errors)
        self.assertEqual(summary["stores"], 4, summary)
        self.assertEqual(summary["failed"], 0, summary)
        self.stop_members(members)
        etcd.close()

    def test_b_without_the_hold_check_names_the_missing_object(self):
        if not self.states_of(self.bucket, BIG):
            self.must(self.members[0][1], "store", "create", BIG, "--kind", "faast",
                      "--set", "dim=%d" % DIM, "--set", "ridge=1")
            self.snapshot_big()
        snapshot = os.path.join(self.tmp, "etcd-unheld.db")
        etcdctl("snapshot", "save", snapshot, endpoints=self.backing.etcd.client_urls[:1])
        states, _ = self.snapshot_big()
        deadline = time.monotonic() + 30
        while not states - self.states_of(self.bucket, BIG):
            self.assertLess(time.monotonic(), deadline, "no superseded state was deleted")
            time.sleep(0.2)
        deleted = states - self.states_of(self.bucket, BIG)
        copy = Bucket(self.backing.weed, self.backing.services, "adaptd-unheld")
        self.copy_bucket(self.bucket.keys(S3_PREFIX + "/"), copy)
        etcd = RestoredEtcd(os.environ["ADAPTD_ETCD_BIN"], snapshot, self.tmp, "unheld")
        self.restored.append(etcd)
        code, summary, errors = self.check(etcd.client_urls, copy.name)
        self.assertEqual(code, 1, errors)
        self.assertEqual(summary["failed"], 1, summary)
        self.assertEqual(summary["failures"][0]["store"], BIG, summary)
        self.assertIn("store %s: object " % BIG, errors)
        self.assertIn("is missing", errors)
        self.assertTrue(any(key in errors for key in deleted), (errors, deleted))
        etcd.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--adaptctl", required=True)
    parser.add_argument("--adaptd", required=True)
    args, rest = parser.parse_known_args()
    ADAPTCTL, ADAPTD = args.adaptctl, args.adaptd
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
