#!/usr/bin/python3
"""End-to-end test of `adaptctl cluster migrate` (docs/CLUSTER_ETCD.md, "Migration").

Makes real data directories with the adaptd binary: a single server (stores of the three
kinds in three tenants, one pinned, its last writes left in the log by a SIGKILL) and the two
members' directories of a static cluster as it left them (each store on the member the static
list's rendezvous weight names, written by a server on that directory, and a cluster.state
file), whose non-owner member also holds a stale copy of one store (a hand-off caught mid-way). With every server stopped, migrates them into a target
adaptd that requires an admin token, and checks: every store answers the same predictions and
example counts there as before; the stale copy is skipped for its owner's; a resend of an
acknowledged example id is skipped at the target; a rerun skips everything; a directory an
adaptd has open is refused; and the source directories are byte-identical after.

The target is a single adaptd server, or with ADAPTD_MIGRATE_INTO=cluster a 2-member cluster on
etcd (tests/e2e/cluster/cluster_kinds.py: a 3-member etcd and SeaweedFS, ADAPTD_ETCD_BIN and
ADAPTD_WEED_BIN), migrated into and checked through one of its members.

Usage: migrate_e2e_test.py --adaptctl PATH --adaptd PATH [unittest arguments]
(PYTHONPATH must hold the generated modules, adapt/v1/*_pb2*.py, as ctest sets it).
"""

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import grpc
from adapt.v1 import adapt_pb2, adapt_pb2_grpc
import cluster_kinds
from cluster_kinds import static_owner

ADAPTCTL = os.environ.get("ADAPTCTL_BIN", "")
ADAPTD = os.environ.get("ADAPTD_BIN", "")
START_TIMEOUT_S = 60.0
DIM = 6
LABELS = ["red", "green", "blue"]
MEMBERS = ["a", "b"]
TOKEN = "migrate-admin-token-0123456789"
MEMBER_TOKEN = "migrate-members-secret-7c21"  # a target cluster's members' own calls
INTO_CLUSTER = os.environ.get("ADAPTD_MIGRATE_INTO", "server") == "cluster"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def owner_of(key):
    return static_owner(MEMBERS, key)


def tree_digest(root):
    """Every file under `root` (relative path, size, SHA-256), sorted."""
    out = []
    for directory, _, files in os.walk(root):
        for name in files:
            path = os.path.join(directory, name)
            with open(path, "rb") as f:
                out.append((os.path.relpath(path, root), hashlib.sha256(f.read()).hexdigest()))
    return sorted(out)


class Server:
    """One adaptd process."""

    def __init__(self, tmp, name, data_dir, extra=(), addr=None):
        self.name, self.addr = name, addr or "127.0.0.1:%d" % free_port()
        self.log_path = os.path.join(tmp, "%s.log" % name)
        self.log = open(self.log_path, "a")
        self.process = subprocess.Popen(
            [ADAPTD, "--listen", self.addr, "--metrics-listen", "off", "--data-dir", data_dir] +
            list(extra), stdout=self.log, stderr=subprocess.STDOUT)
        self.channel = grpc.insecure_channel(self.addr)
        self.stub = adapt_pb2_grpc.AdaptationStub(self.channel)

    def wait_serving(self):
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("adaptd %s exited: %s" % (self.name, self.read_log()))
            try:
                self.stub.Ping(adapt_pb2.PingRequest(), timeout=1)
                return
            except grpc.RpcError as error:
                if error.code() == grpc.StatusCode.UNAUTHENTICATED:  # serving, with tokens
                    return
                time.sleep(0.1)
        raise RuntimeError("adaptd %s did not serve: %s" % (self.name, self.read_log()))

    def read_log(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()[-3000:]

    def stop(self, sig=signal.SIGTERM):
        self.channel.close()
        if self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=30)
        self.log.close()


class MigrateEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for name, path in (("adaptctl", ADAPTCTL), ("adaptd", ADAPTD)):
            if not path or not os.access(path, os.X_OK):
                raise RuntimeError("%s binary not found or not executable: %r" % (name, path))
        cls.tmp = tempfile.mkdtemp(prefix="adaptd-migrate-e2e-")
        cls.rng = random.Random(38)
        cls.centers = {label: [cls.rng.uniform(-3, 3) for _ in range(DIM)] for label in LABELS}
        cls.probes = [adapt_pb2.Input(vector=adapt_pb2.FloatVector(
            values=[cls.rng.uniform(-3, 3) for _ in range(DIM)])) for _ in range(8)]
        cls.expected = {}  # "tenant/store" -> (predictions, examples)
        cls.ids = {}  # "tenant/store" -> the example ids acknowledged
        cls.servers = []
        cls.backing = None
        try:
            cls.make_single_server()
            cls.make_static_cluster()
            if INTO_CLUSTER:
                cls.target = cls.start_cluster_on_etcd()
            else:
                cls.target = cls.start("target", os.path.join(cls.tmp, "data-target"),
                                       ["--config", cls.target_config()])
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for server in cls.servers:
            if server.process.poll() is None:
                server.process.kill()
                server.process.wait()
            server.log.close()
        if cls.backing is not None:
            cls.backing.close()
        if os.environ.get("MIGRATE_E2E_KEEP"):
            sys.stderr.write("kept %s\n" % cls.tmp)
        else:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    # --- making the sources -------------------------------------------------------------

    @classmethod
    def start(cls, name, data_dir, extra=()):
        server = Server(cls.tmp, name, data_dir, extra)
        cls.servers.append(server)
        server.wait_serving()
        return server

    @classmethod
    def ctl(cls, addr, *args, token=None):
        command = [ADAPTCTL, "--addr", addr, "--timeout", "60"]
        if token:
            command += ["--token", token]
        return subprocess.run(command + list(args), capture_output=True, text=True)

    @classmethod
    def must(cls, addr, *args):
        result = cls.ctl(addr, *args)
        if result.returncode != 0:
            raise RuntimeError("adaptctl %s: %s" % (" ".join(args), result.stderr))
        return json.loads(result.stdout.splitlines()[0])

    @classmethod
    def examples(cls, key, first, count, salt=""):
        out = []
        for i in range(first, first + count):
            label = LABELS[i % len(LABELS)]
            values = [c + cls.rng.gauss(0, 0.6) for c in cls.centers[label]]
            out.append(adapt_pb2.Example(input=adapt_pb2.Input(
                vector=adapt_pb2.FloatVector(values=values)), label=label,
                id="%s%s-%d" % (salt, key, i)))
        return out

    @classmethod
    def adapt(cls, server, key, examples):
        tenant, store = key.split("/")
        response = server.stub.Adapt(iter([adapt_pb2.AdaptRequest(
            tenant=tenant, store=store, examples=examples)]), timeout=60)
        cls.ids.setdefault(key, []).extend(e.id for e in examples)
        return response

    @classmethod
    def create(cls, server, key, kind, *extra):
        cls.must(server.addr, "store", "create", key, "--kind", kind, "--set",
                 "dim=%d" % DIM, *extra)

    @classmethod
    def observe(cls, server, key):
        tenant, store = key.split("/")
        predicted = server.stub.Predict(adapt_pb2.PredictRequest(
            tenant=tenant, store=store, inputs=cls.probes, top_k=3), timeout=60)
        info = server.stub.GetStore(adapt_pb2.GetStoreRequest(tenant=tenant, store=store),
                                    timeout=60)
        scores = [[(s.label, round(s.score, 5)) for s in p.labels] for p in predicted.predictions]
        return scores, info.examples

    @classmethod
    def make_single_server(cls):
        cls.solo_dir = os.path.join(cls.tmp, "data-solo")
        solo = cls.start("solo", cls.solo_dir)
        cls.create(solo, "acme/faast", "faast", "--set", "ridge=1", "--pinned")
        cls.create(solo, "acme/falcon", "falcon")
        cls.create(solo, "beta/pkm", "fwpkm")
        cls.create(solo, "shared/base", "faast", "--set", "ridge=1")
        for key in ("acme/faast", "acme/falcon", "beta/pkm", "shared/base"):
            cls.adapt(solo, key, cls.examples(key, 0, 60))
        cls.must(solo.addr, "compile", "acme/faast")
        cls.must(solo.addr, "compile", "shared/base")
        # A store made from the base (imported after it: stores without a base first).
        cls.create(solo, "acme/child", "faast", "--set", "ridge=1", "--base", "shared/base")
        cls.adapt(solo, "acme/child", cls.examples("acme/child", 0, 12))
        cls.must(solo.addr, "compile", "acme/child")
        # The server is SIGKILLed later: what no checkpoint wrote by then is in the log alone,
        # and the migration's first start of the copy recovers it.
        cls.adapt(solo, "acme/falcon", cls.examples("acme/falcon", 60, 15))
        cls.solo_keys = ["acme/faast", "acme/falcon", "beta/pkm", "shared/base", "acme/child"]
        for key in cls.solo_keys:
            cls.expected[key] = cls.observe(solo, key)
        cls.solo = solo  # stopped by the in-use test

    @classmethod
    def make_static_cluster(cls):
        """The members' directories: each store written by a server on its owner's directory,
        and the cluster.state a static member kept (no member drained)."""
        cls.members = ",".join("%s=127.0.0.1:%d" % (m, free_port()) for m in MEMBERS)
        cls.member_dirs = {m: os.path.join(cls.tmp, "data-" + m) for m in MEMBERS}
        members = {m: cls.start(m, cls.member_dirs[m]) for m in MEMBERS}
        cls.cluster_keys = ["c%d/s%d" % (i % 2, i) for i in range(6)]
        cls.owners = {key: owner_of(key) for key in cls.cluster_keys}
        for i, key in enumerate(cls.cluster_keys):
            owner = members[cls.owners[key]]
            cls.create(owner, key, ["faast", "falcon", "fwpkm"][i % 3],
                       *(["--set", "ridge=1"] if i % 3 == 0 else []))
            cls.adapt(owner, key, cls.examples(key, 0, 30))
            if i % 3 == 0:
                cls.must(owner.addr, "compile", key)
        for key in cls.cluster_keys:
            cls.expected[key] = cls.observe(members[cls.owners[key]], key)
        # A stale copy of one store on its non-owner, as a hand-off caught between the
        # owner's acknowledged import and the sender's delete left it.
        cls.doubled = cls.cluster_keys[0]
        other = members[[m for m in MEMBERS if m != cls.owners[cls.doubled]][0]]
        cls.create(other, cls.doubled, "faast", "--set", "ridge=1")
        other.stub.Adapt(iter([adapt_pb2.AdaptRequest(
            tenant=cls.doubled.split("/")[0], store=cls.doubled.split("/")[1],
            examples=cls.examples(cls.doubled, 0, 5, salt="stale-"))]), timeout=60)
        for m in MEMBERS:
            members[m].stop()
            with open(os.path.join(cls.member_dirs[m], "cluster.state"), "w") as f:
                f.write("adaptd cluster state 1\nsettled 0123456789abcdef\n")

    @classmethod
    def start_cluster_on_etcd(cls):
        """Two members of a cluster on etcd with the admin token; returns the first."""
        cls.backing = cluster_kinds.Backing(cls.tmp)
        member_token = os.path.join(cls.tmp, "member-token")
        with open(member_token, "w") as f:
            f.write(MEMBER_TOKEN)
        addrs = {m: "127.0.0.1:%d" % free_port() for m in ("ta", "tb")}
        members = {}
        for m, addr in addrs.items():
            members[m] = Server(cls.tmp, m, os.path.join(cls.tmp, "data-" + m),
                                ["--config", cls.target_config(),
                                 "--cluster-member-token-file", member_token] +
                                cls.backing.member_flags(m, addr), addr=addr)
            cls.servers.append(members[m])
        for server in members.values():
            server.wait_serving()
        cls.wait_settled(addrs["ta"], token=TOKEN)
        return members["ta"]

    @classmethod
    def wait_settled(cls, addr, token=None):
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            probe = cls.ctl(addr, "cluster", "status", token=token)
            if probe.returncode == 0 and json.loads(probe.stdout)["settled"]:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster did not settle: %s" % probe.stderr)
            time.sleep(0.2)

    @classmethod
    def target_config(cls):
        path = os.path.join(cls.tmp, "target.json")
        with open(path, "w") as f:
            json.dump({"tokens": [{"name": "ops", "admin": True,
                                   "sha256": hashlib.sha256(TOKEN.encode()).hexdigest()}]}, f)
        return path

    # --- the migration --------------------------------------------------------------------

    def migrate(self, *args):
        result = self.ctl(self.target.addr, "cluster", "migrate", "--to", self.target.addr,
                          "--adaptd", ADAPTD, "--scratch", os.path.join(self.tmp, "scratch"),
                          *args, token=TOKEN)
        lines = [json.loads(line) for line in result.stdout.splitlines()]
        return result, lines[:-1], (lines[-1] if lines else None)

    def check_target(self, keys):
        metadata = (("authorization", "Bearer " + TOKEN),)
        for key in keys:
            tenant, store = key.split("/")
            predicted = self.target.stub.Predict(adapt_pb2.PredictRequest(
                tenant=tenant, store=store, inputs=self.probes, top_k=3), timeout=60,
                metadata=metadata)
            info = self.target.stub.GetStore(adapt_pb2.GetStoreRequest(
                tenant=tenant, store=store), timeout=60, metadata=metadata)
            scores = [[(s.label, round(s.score, 5)) for s in p.labels]
                      for p in predicted.predictions]
            self.assertEqual((scores, info.examples), self.expected[key], key)
            # A resend of an example the source acknowledged: skipped at the target.
            last = self.examples(key, 0, 1)
            last[0].id = self.ids[key][-1]
            resent = self.target.stub.Adapt(iter([adapt_pb2.AdaptRequest(
                tenant=tenant, store=store, examples=last)]), timeout=60, metadata=metadata)
            self.assertEqual((resent.accepted, resent.duplicates), (1, 1), key)

    def test_migration(self):
        # A directory an adaptd has open is refused, and nothing is copied or imported.
        result, lines, _ = self.migrate("--data-dir", self.solo_dir)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("FAILED_PRECONDITION", result.stderr)
        self.assertIn("in use by process %d" % self.solo.process.pid, result.stderr)
        self.assertEqual(lines, [])
        self.solo.stop(signal.SIGKILL)  # the log's last writes are recovered from the copy

        sources = [self.solo_dir] + list(self.member_dirs.values())
        before = {d: tree_digest(d) for d in sources}

        result, lines, summary = self.migrate("--data-dir", self.solo_dir)
        self.assertEqual(result.returncode, 0, result.stderr + result.stdout)
        self.assertEqual({line["tenant"] + "/" + line["store"]: line["result"] for line in lines},
                         {key: "imported" for key in self.solo_keys})
        self.assertEqual((summary["imported"], summary["failed"]), (5, 0))
        self.check_target(self.solo_keys)
        child = self.target.stub.GetStore(adapt_pb2.GetStoreRequest(
            tenant="acme", store="child"), timeout=60,
            metadata=(("authorization", "Bearer " + TOKEN),))
        self.assertEqual(child.spec.base, "shared/base")
        pinned = self.target.stub.GetStore(adapt_pb2.GetStoreRequest(
            tenant="acme", store="faast"), timeout=60,
            metadata=(("authorization", "Bearer " + TOKEN),))
        self.assertTrue(pinned.spec.pinned)

        cluster_args = ["--members", self.members] + sum(
            (["--data-dir", "%s=%s" % (m, d)] for m, d in self.member_dirs.items()), [])
        result, lines, summary = self.migrate(*cluster_args)
        self.assertEqual(result.returncode, 0, result.stderr + result.stdout)
        results = {}
        for line in lines:
            results.setdefault(line["tenant"] + "/" + line["store"], []).append(
                (line["from"], line["result"]))
        expected = {key: [(self.owners[key], "imported")] for key in self.cluster_keys}
        expected[self.doubled] = sorted([(self.owners[self.doubled], "imported"),
                                         ([m for m in MEMBERS if m != self.owners[self.doubled]][0],
                                          "skipped-not-owner")])
        self.assertEqual({k: sorted(v) for k, v in results.items()}, expected)
        self.assertEqual((summary["imported"], summary["skipped-not-owner"], summary["failed"]),
                         (6, 1, 0))
        self.check_target(self.cluster_keys)

        # A rerun imports nothing.
        for args, count in ((["--data-dir", self.solo_dir], 5), (cluster_args, 7)):
            result, lines, summary = self.migrate(*args)
            self.assertEqual(result.returncode, 0, result.stderr + result.stdout)
            self.assertEqual(summary["imported"], 0)
            self.assertEqual(summary["stores"], count)
            self.assertTrue(all(line["result"] in ("skipped-exists", "skipped-not-owner")
                                for line in lines), lines)

        # A member list with a third member, whose directory is not given, owning the store
        # both others hold: no copy is known to be the latest, so that store fails, once.
        self.assertEqual(static_owner(MEMBERS + ["c"], self.doubled), "c")
        result, lines, summary = self.migrate("--members", self.members + ",c=127.0.0.1:1",
                                              *cluster_args[2:])
        self.assertEqual(result.returncode, 1, result.stderr + result.stdout)
        self.assertEqual([(line["tenant"] + "/" + line["store"], line["owner"])
                          for line in lines if line["result"] == "failed"], [(self.doubled, "c")])
        self.assertEqual((summary["imported"], summary["failed"]), (0, 1))

        # Members' directories without the member list that decides their owners.
        result, lines, _ = self.migrate(*cluster_args[2:])
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertIn("--members is required", result.stderr)

        for d in sources:
            self.assertEqual(tree_digest(d), before[d], d)
        self.assertEqual(os.listdir(os.path.join(self.tmp, "scratch")), [])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--adaptctl", required=True)
    parser.add_argument("--adaptd", required=True)
    args, rest = parser.parse_known_args()
    ADAPTCTL, ADAPTD = os.path.abspath(args.adaptctl), os.path.abspath(args.adaptd)
    unittest.main(argv=[sys.argv[0]] + rest)
