#!/usr/bin/python3
"""End-to-end test of hand-off in a cluster of adaptd processes (docs/CLUSTER.md, "Hand-off").

Real adaptd processes on loopback, each with its own data directory, driven by adaptctl and
the generated gRPC stubs:
- scaling 3 -> 4 as Kubernetes rolls a StatefulSet (the new member starts, then each old one
  restarts with the new list) while clients read and write: every store ends on its owner under
  the new list, only the stores whose owner changed move, no acknowledged write is lost or
  applied twice, reads are served throughout (retrying UNAVAILABLE, and CANCELLED from a member shutting down), and
  `adaptctl cluster status` says settled;
- `adaptctl cluster drain` empties a member, which then leaves the list with nothing to move;
- a member killed (SIGKILL) in the middle of its moves resumes them when it comes back, and a
  member that is down makes only its own stores unavailable.

Usage: handoff_e2e_test.py --adaptctl PATH --adaptd PATH [unittest arguments]
(PYTHONPATH must hold the generated modules, adapt/v1/*_pb2*.py, as ctest sets it).
"""

import argparse
import csv
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

import grpc
from adapt.v1 import adapt_pb2, adapt_pb2_grpc

import cluster_e2e_test as base
import cluster_kinds

ADAPTCTL = ""
ADAPTD = ""
DIM = 4
LABELS = ["x", "y"]
SETTLE_TIMEOUT_S = 90.0


def owner_of(key, members):
    return cluster_kinds.rendezvous(members, key)


class Cluster:
    """adaptd processes by name, each with a fixed port and data directory."""

    def __init__(self, tmp, names):
        self.tmp = tmp
        self.addr = {m: "127.0.0.1:%d" % base.free_port() for m in names}
        self.metrics = {m: "127.0.0.1:%d" % base.free_port() for m in names}
        self.procs, self.logs = {}, {}

    def start(self, m, members):
        listed = ",".join("%s=%s" % (n, self.addr[n]) for n in members)
        log = open(os.path.join(self.tmp, "%s.log" % m), "a")
        self.logs[m] = log
        self.procs[m] = subprocess.Popen(
            base.die_with_parent() +
            [ADAPTD, "--listen", self.addr[m], "--metrics-listen", self.metrics[m],
             "--data-dir", os.path.join(self.tmp, "data-" + m), "--cluster-self", m,
             "--cluster-members", listed, "--handoff-interval-ms", "200"],
            stdout=log, stderr=subprocess.STDOUT)

    def stop(self, m, sig=signal.SIGTERM):
        proc = self.procs.pop(m)
        proc.send_signal(sig)
        proc.wait(timeout=60)
        self.logs.pop(m).close()

    def wait_serving(self, m):
        deadline = time.monotonic() + 30
        while True:
            if self.procs[m].poll() is not None:
                raise RuntimeError("adaptd %s exited:\n%s" % (m, self.log(m)))
            probe = subprocess.run([ADAPTCTL, "--addr", self.addr[m], "--timeout", "2",
                                    "encoders"], capture_output=True, text=True)
            if probe.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("adaptd %s did not answer: %s" % (m, probe.stderr))
            time.sleep(0.2)

    def log(self, m):
        if m in self.logs:
            self.logs[m].flush()
        with open(os.path.join(self.tmp, "%s.log" % m)) as f:
            return f.read()

    def close(self):
        for m in list(self.procs):
            try:
                self.stop(m)
            except Exception:  # a process that would not stop
                self.procs.get(m) and self.procs[m].kill()


class HandOffEndToEnd(unittest.TestCase):
    def setUp(self):
        for name, path in (("adaptctl", ADAPTCTL), ("adaptd", ADAPTD)):
            if not path or not os.access(path, os.X_OK):
                raise RuntimeError("%s binary not found or not executable: %r" % (name, path))
        self.tmp = tempfile.mkdtemp(prefix="adaptd-handoff-e2e-")
        self.cluster = Cluster(self.tmp, ["a", "b", "c", "d"])

    def tearDown(self):
        failed = any(e for _, e in getattr(self._outcome, "errors", []) if e) or \
            os.environ.get("CLUSTER_E2E_LOGS")
        self.cluster.close()
        if failed:
            for m in "abcd":
                try:
                    sys.stderr.write("--- adaptd %s:\n%s\n" % (m, self.cluster.log(m)[-6000:]))
                except OSError:
                    pass
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers ---------------------------------------------------------------------------

    def ctl(self, member, *args):
        return subprocess.run([ADAPTCTL, "--addr", self.cluster.addr[member], "--timeout", "60"]
                              + list(args), capture_output=True, text=True)

    def ok(self, member, *args):
        result = self.ctl(member, *args)
        self.assertEqual(result.returncode, 0, "adaptctl --addr %s %s: %s" %
                         (member, " ".join(args), result.stderr))
        return json.loads(result.stdout.splitlines()[0])

    def start_all(self, members):
        for m in members:
            self.cluster.start(m, members)
        for m in members:
            self.cluster.wait_serving(m)

    def wait_settled(self, member, stores=None):
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while True:
            result = self.ctl(member, "cluster", "status")
            if result.returncode == 0:
                status = json.loads(result.stdout)
                if status["settled"] and (stores is None or
                                          sum(status["stores_per_member"].values()) == stores):
                    return status
            if time.monotonic() > deadline:
                self.fail("the cluster did not settle: %s %s" % (result.stdout, result.stderr))
            time.sleep(0.25)

    def metric(self, member, name, **labels):
        body = urllib.request.urlopen("http://%s/metrics" % self.cluster.metrics[member],
                                      timeout=10).read().decode()
        total = 0.0
        for line in body.splitlines():
            if not (line.startswith(name + "{") or line.startswith(name + " ")):
                continue
            series, value = line.rsplit(" ", 1)
            if all('%s="%s"' % (k, v) in series for k, v in labels.items()):
                total += float(value)
        return total

    def stub(self, member):
        channel = grpc.insecure_channel(self.cluster.addr[member])
        self.addCleanup(channel.close)
        return adapt_pb2_grpc.AdaptationStub(channel)

    def create_stores(self, names, through):
        for i, name in enumerate(names):
            self.ok(through[i % len(through)], "store", "create", name, "--kind",
                    "falcon" if i % 2 else "faast", "--encoder", "identity", "--output",
                    "labels", "--set", "dim=%d" % DIM)

    @staticmethod
    def adapt_request(name, ids):
        tenant, store = name.split("/")
        request = adapt_pb2.AdaptRequest(tenant=tenant, store=store)
        for i in ids:
            ex = request.examples.add(id="%s-%d" % (name, i), label=LABELS[i % 2])
            ex.input.vector.values.extend([float((i * 7 + j) % 5) - 2 for j in range(DIM)])
        return request

    # What a client retries: UNAVAILABLE, and CANCELLED from a member that shut down (SIGTERM)
    # while it relayed the call. Writes carry example ids, so a retry never applies twice.
    RETRIED = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)

    def adapt_retrying(self, stubs, name, ids, timeout_s=60):
        """Adapt through the members in turn until acknowledged, retrying RETRIED only."""
        deadline = time.monotonic() + timeout_s
        attempt = 0
        while True:
            stub = stubs[attempt % len(stubs)]
            attempt += 1
            try:
                return stub.Adapt(iter([self.adapt_request(name, ids)]), timeout=20)
            except grpc.RpcError as e:
                if e.code() not in self.RETRIED or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def examples_of(self, member, name):
        return self.ok(member, "store", "get", name)["examples"]

    def held(self, status):
        return status["stores_per_member"]

    # -- tests -----------------------------------------------------------------------------

    def test_scale_up_moves_only_what_changed_and_loses_nothing(self):
        three, four = ["a", "b", "c"], ["a", "b", "c", "d"]
        self.start_all(three)
        self.wait_settled("a")
        names = ["t%d/s%02d" % (i % 3, i) for i in range(24)]
        self.create_stores(names, three)
        stubs = {m: self.stub(m) for m in four}
        for name in names:
            self.adapt_retrying([stubs["a"]], name, range(10))
        status = self.wait_settled("b", stores=len(names))
        for m in three:
            self.assertEqual(self.held(status)[m],
                             sum(owner_of(n, three) == m for n in names), m)
        moving = [n for n in names if owner_of(n, three) != owner_of(n, four)]
        self.assertTrue(moving and all(owner_of(n, four) == "d" for n in moving))

        # Clients run during the whole roll: reads of every store, writes with fresh ids.
        stop = threading.Event()
        acknowledged = {n: 10 for n in names}
        errors, reads = [], [0]

        def writer():
            rng = random.Random(3)
            next_id = 10
            while not stop.is_set():
                name = rng.choice(names)
                live = [stubs[m] for m in list(self.cluster.procs)]
                try:
                    reply = self.adapt_retrying(live, name, [next_id, next_id + 1])
                    self.assertEqual(reply.accepted, 2)
                    acknowledged[name] += 2
                except Exception as e:  # noqa: BLE001 - reported below
                    errors.append("write %s: %r" % (name, e))
                next_id += 2

        def reader():
            rng = random.Random(4)
            while not stop.is_set():
                name = rng.choice(names)
                tenant, store = name.split("/")
                # A member restarting makes its own stores unavailable for a while: retry
                # for up to a minute (the machine may be busy).
                deadline = time.monotonic() + 60
                attempt = 0
                while True:
                    attempt += 1
                    live = list(self.cluster.procs)
                    try:
                        stubs[live[attempt % len(live)]].GetStore(
                            adapt_pb2.GetStoreRequest(tenant=tenant, store=store), timeout=10)
                        reads[0] += 1
                        break
                    except grpc.RpcError as e:
                        if e.code() not in self.RETRIED:
                            errors.append("read %s: %s %s" % (name, e.code(), e.details()))
                            break
                        if time.monotonic() > deadline:
                            errors.append("read %s: unavailable for a minute" % name)
                            break
                        time.sleep(0.05)

        threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
        for t in threads:
            t.start()
        try:
            self.cluster.start("d", four)
            self.cluster.wait_serving("d")
            for m in reversed(three):  # as a StatefulSet rolls: highest ordinal first
                self.cluster.stop(m)
                self.cluster.start(m, four)
                self.cluster.wait_serving(m)
            status = self.wait_settled("a", stores=len(names))
        finally:
            stop.set()
            for t in threads:
                t.join(timeout=120)
        self.assertEqual(errors, [])
        self.assertGreater(reads[0], 0)
        for m in four:
            self.assertEqual(self.held(status)[m], sum(owner_of(n, four) == m for n in names),
                             (m, status))
        self.assertEqual(status["moves_in_flight"], 0)
        # Every acknowledged example is there, once, whichever member is asked.
        for i, name in enumerate(names):
            self.assertEqual(self.examples_of(four[i % 4], name), acknowledged[name], name)
        # Only the stores whose owner changed moved (each exactly once).
        moved = sum(self.metric(m, "adaptd_handoff_moves_total", outcome="moved") for m in four)
        self.assertEqual(moved, len(moving))
        self.assertEqual(
            sum(self.metric(m, "adaptd_handoff", state="settled") for m in four), 4.0)
        # A moved store remembers its ids: resending acknowledged examples applies nothing.
        name = moving[0]
        again = self.adapt_retrying([stubs["b"]], name, range(10))
        self.assertEqual(again.duplicates, 10)
        self.assertEqual(self.examples_of("c", name), acknowledged[name])

        # Drain d, then remove it from the list: nothing moves at the second step.
        drained = self.ok("b", "cluster", "drain", "d")
        self.assertTrue(drained["settled"])
        self.assertEqual(drained["stores_per_member"]["d"], 0)
        for m in three:
            self.assertIn("d", next(s for s in drained["members"] if s["name"] == m)["draining"])
        before = sum(self.metric(m, "adaptd_handoff_moves_total", outcome="moved") for m in three)
        self.cluster.stop("d")
        for m in reversed(three):
            self.cluster.stop(m)
            self.cluster.start(m, three)
            self.cluster.wait_serving(m)
        status = self.wait_settled("c", stores=len(names))
        self.assertEqual(
            sum(self.metric(m, "adaptd_handoff_moves_total", outcome="moved") for m in three), 0)
        self.assertGreater(before, 0)
        for m in three:
            self.assertEqual(self.held(status)[m], sum(owner_of(n, three) == m for n in names))
        for name in names:
            self.assertEqual(self.examples_of("a", name), acknowledged[name], name)

    def test_a_member_killed_while_moving_resumes_and_a_down_member_hides_only_its_stores(self):
        members = ["a", "b", "c"]
        self.start_all(members)
        self.wait_settled("a")
        names = ["k%d/s%03d" % (i % 4, i) for i in range(90)]
        self.create_stores(names, members)
        stubs = {m: self.stub(m) for m in members}
        for name in names:
            self.adapt_retrying([stubs["b"]], name, range(6))
        status = self.wait_settled("a", stores=len(names))
        on_c = self.held(status)["c"]
        self.assertGreater(on_c, 10)

        # A member that is down: its own stores are UNAVAILABLE, the others' are served.
        self.cluster.stop("c", signal.SIGKILL)
        for name in names[:20]:
            tenant, store = name.split("/")
            try:
                info = stubs["a"].GetStore(adapt_pb2.GetStoreRequest(tenant=tenant, store=store),
                                           timeout=10)
                self.assertNotEqual(owner_of(name, members), "c", name)
                self.assertEqual(info.examples, 6)
            except grpc.RpcError as e:
                self.assertEqual(owner_of(name, members), "c", (name, e.details()))
                self.assertEqual(e.code(), grpc.StatusCode.UNAVAILABLE, e.details())
        self.cluster.start("c", members)
        self.cluster.wait_serving("c")
        self.wait_settled("b", stores=len(names))

        # Drain c and kill it while its stores move; back up, it finishes the moves.
        drain = subprocess.Popen([ADAPTCTL, "--addr", self.cluster.addr["a"], "cluster", "drain",
                                  "c", "--no-wait"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        out, err = drain.communicate(timeout=60)
        self.assertEqual(drain.returncode, 0, err)
        deadline = time.monotonic() + 60
        while self.metric("c", "adaptd_handoff_moves_total", outcome="moved") < 1:
            self.assertLess(time.monotonic(), deadline, "no store moved off c")
            time.sleep(0.01)
        self.cluster.stop("c", signal.SIGKILL)
        self.cluster.start("c", members)
        self.cluster.wait_serving("c")
        status = self.wait_settled("a", stores=len(names))
        self.assertEqual(self.held(status)["c"], 0)
        others = ["a", "b"]
        for m in others:
            self.assertEqual(self.held(status)[m], sum(owner_of(n, others) == m for n in names))
        for i, name in enumerate(names):
            self.assertEqual(self.examples_of(members[i % 3], name), 6, name)
        # Undone: c owns its stores again, and they come back to it.
        self.ok("b", "cluster", "drain", "c", "--undo")
        status = self.wait_settled("c", stores=len(names))
        for m in members:
            self.assertEqual(self.held(status)[m], sum(owner_of(n, members) == m for n in names))
        written = self.adapt_retrying([stubs["a"]], names[0], [100])
        self.assertEqual(written.accepted, 1)

    def test_cluster_calls_are_for_clusters_and_name_a_member(self):
        self.start_all(["a", "b"])
        result = self.ctl("a", "cluster", "drain", "zz")
        self.assertEqual(result.returncode, 1)
        self.assertIn('"zz" is not among the cluster\'s members', result.stderr)
        result = self.ctl("a", "cluster", "drain", "a")
        self.assertEqual(result.returncode, 0, result.stderr)
        result = self.ctl("a", "cluster", "drain", "b", "--no-wait")
        self.assertEqual(result.returncode, 1)
        self.assertIn("FAILED_PRECONDITION", result.stderr)
        self.assertIn("at least one must own the stores", result.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--adaptctl", default="")
    parser.add_argument("--adaptd", default="")
    args, rest = parser.parse_known_args()
    ADAPTCTL, ADAPTD = args.adaptctl, args.adaptd
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
