#!/usr/bin/python3
"""End-to-end test of a cluster of adaptd processes on loopback (docs/CLUSTER.md, "Calls").

Starts three real adaptd processes, each with its own data directory and the same member
list, and drives them through every member: by adaptctl (create, adapt, compile, predict,
get, list, pin, export, import, delete) and by the generated gRPC stubs (PredictStream, the
forwarded mark). Checks that every store lives on exactly one member, the one the documented
rendezvous weight names; that every member answers for every store with the owner's answer;
that ListStores lists the whole cluster; that a forwarded call for a store the member does
not own is refused UNAVAILABLE rather than forwarded again; and that forwarded calls are
counted.

Usage: cluster_e2e_test.py --adaptctl PATH --adaptd PATH [unittest arguments]
(PYTHONPATH must hold the generated modules, adapt/v1/*_pb2*.py, as ctest sets it).
"""

import argparse
import csv
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import grpc
from adapt.v1 import adapt_pb2, adapt_pb2_grpc

ADAPTCTL = os.environ.get("ADAPTCTL_BIN", "")
ADAPTD = os.environ.get("ADAPTD_BIN", "")
START_TIMEOUT_S = 20.0
DIM = 8
LABELS = ["north", "south", "east"]
MEMBERS = ["a", "b", "c"]
MASK = (1 << 64) - 1


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The weight of docs/CLUSTER.md, "Ownership: rendezvous hashing", written from the document.
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


def owner_of(key):
    weights = [(fmix64(fnv1a64(m) ^ rotl64(fnv1a64(key), 17)), m) for m in MEMBERS]
    best = max(w for w, _ in weights)
    return min(m for w, m in weights if w == best)


def die_with_parent():
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM"] if setpriv else []


class ClusterEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for name, path in (("adaptctl", ADAPTCTL), ("adaptd", ADAPTD)):
            if not path or not os.access(path, os.X_OK):
                raise RuntimeError("%s binary not found or not executable: %r" % (name, path))
        cls.tmp = tempfile.mkdtemp(prefix="adaptd-cluster-e2e-")
        cls.addr = {m: "127.0.0.1:%d" % free_port() for m in MEMBERS}
        cls.metrics = {m: "127.0.0.1:%d" % free_port() for m in MEMBERS}
        members = ",".join("%s=%s" % (m, cls.addr[m]) for m in MEMBERS)
        cls.servers, cls.logs = {}, {}
        for m in MEMBERS:
            cls.logs[m] = open(os.path.join(cls.tmp, "%s.log" % m), "w")
            cls.servers[m] = subprocess.Popen(
                die_with_parent() +
                [ADAPTD, "--listen", cls.addr[m], "--metrics-listen", cls.metrics[m],
                 "--data-dir", os.path.join(cls.tmp, "data-" + m), "--cluster-self", m,
                 "--cluster-members", members],
                stdout=cls.logs[m], stderr=subprocess.STDOUT)
        try:
            for m in MEMBERS:
                cls.wait_until_serving(m)
            cls.wait_until_settled()
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for m, server in cls.servers.items():
            if server.poll() is not None:  # a member that died during the tests
                sys.stderr.write("adaptd %s exited with %s:\n%s\n" %
                                 (m, server.returncode, cls.server_log(m)))
            elif os.environ.get("CLUSTER_E2E_LOGS"):
                server.terminate()
                server.wait(timeout=15)
                sys.stderr.write("adaptd %s:\n%s\n" % (m, cls.server_log(m)))
            if server.poll() is None:
                server.terminate()
                try:
                    server.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    server.kill()
                    server.wait()
        for log in cls.logs.values():
            log.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def wait_until_serving(cls, m):
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if cls.servers[m].poll() is not None:
                raise RuntimeError("adaptd %s exited: %s" % (m, cls.server_log(m)))
            probe = subprocess.run([ADAPTCTL, "--addr", cls.addr[m], "--timeout", "2",
                                    "encoders"], capture_output=True, text=True)
            if probe.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("adaptd %s did not answer: %s" % (m, probe.stderr))
            time.sleep(0.2)

    @classmethod
    def wait_until_settled(cls):
        # A new cluster creates stores once every member has confirmed the list.
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            probe = subprocess.run([ADAPTCTL, "--addr", cls.addr["a"], "--timeout", "5",
                                    "cluster", "status"], capture_output=True, text=True)
            if probe.returncode == 0 and json.loads(probe.stdout)["settled"]:
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the cluster did not settle: %s %s" %
                                   (probe.stdout, probe.stderr))
            time.sleep(0.2)

    @classmethod
    def server_log(cls, m):
        cls.logs[m].flush()
        with open(os.path.join(cls.tmp, "%s.log" % m)) as f:
            return f.read()

    def path(self, name):
        return os.path.join(self.tmp, name)

    def ctl(self, member, *args):
        return subprocess.run([ADAPTCTL, "--addr", self.addr[member], "--timeout", "60"] +
                              list(args), capture_output=True, text=True)

    def ok(self, member, *args):
        result = self.ctl(member, *args)
        self.assertEqual(result.returncode, 0, "adaptctl --addr %s %s: %s" %
                         (member, " ".join(args), result.stderr))
        return json.loads(result.stdout.splitlines()[0])

    def metric(self, member, name, **labels):
        """The sum of `name`'s samples on `member` whose labels include `labels`."""
        body = urllib.request.urlopen("http://%s/metrics" % self.metrics[member],
                                      timeout=10).read().decode()
        total = 0.0
        for line in body.splitlines():
            if not line.startswith(name + "{") and not line.startswith(name + " "):
                continue
            series, value = line.rsplit(" ", 1)
            if all('%s="%s"' % (k, v) in series for k, v in labels.items()):
                total += float(value)
        return total

    def write_examples(self, name, rng, rows):
        centers = {label: [rng.uniform(-4, 4) for _ in range(DIM)] for label in LABELS}
        with open(self.path(name), "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["id"] + ["x%d" % i for i in range(DIM)] + ["label"])
            for i in range(rows):
                label = LABELS[i % len(LABELS)]
                writer.writerow(["%s-%d" % (name, i)] +
                                [round(c + rng.gauss(0, 0.5), 4) for c in centers[label]] +
                                [label])

    def test_every_store_has_one_owner_and_every_member_answers_for_it(self):
        names = ["s%02d" % i for i in range(12)]
        owners = {n: owner_of("own/" + n) for n in names}
        self.assertGreater(len(set(owners.values())), 1, "the names should spread")
        before = {m: self.metric(m, "adaptd_stores", kind="faast") for m in MEMBERS}
        for i, n in enumerate(names):  # created through each member in turn
            info = self.ok(MEMBERS[i % 3], "store", "create", "own/" + n, "--kind", "faast",
                           "--encoder", "identity", "--output", "labels", "--set",
                           "dim=%d" % DIM)
            self.assertEqual(info["store"], n)
        # Each member holds exactly the stores it owns.
        for m in MEMBERS:
            want = sum(1 for n in names if owners[n] == m)
            self.assertEqual(self.metric(m, "adaptd_stores", kind="faast") - before[m], want, m)
        for m in MEMBERS:
            for n in names:
                self.assertEqual(self.ok(m, "store", "get", "own/" + n)["store"], n)
        # A second create through another member meets the same store.
        result = self.ctl("c", "store", "create", "own/s00", "--kind", "faast", "--set",
                          "dim=%d" % DIM)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("ALREADY_EXISTS", result.stderr)
        forwarded = sum(self.metric(m, "adaptd_forwarded_calls_total") for m in MEMBERS)
        self.assertGreater(forwarded, 0)

    def test_adapt_compile_predict_through_different_members(self):
        rng = random.Random(5)
        self.write_examples("train.csv", rng, 90)
        # A store owned by each member, each driven through the other two.
        for target in MEMBERS:
            name = next("flow%d" % i for i in range(1000) if owner_of("flow/flow%d" % i) == target)
            others = [m for m in MEMBERS if m != target]
            self.ok(others[0], "store", "create", "flow/" + name, "--kind", "faast",
                    "--encoder", "identity", "--output", "labels", "--set", "dim=%d" % DIM)
            adapted = self.ok(others[1], "adapt", "flow/" + name, "--input",
                              self.path("train.csv"), "--batch", "32")
            self.assertEqual(adapted["accepted"], 90)
            # The same ids again (through the other member): accepted, applied once (the
            # store's example count below stays 90).
            again = self.ok(others[0], "adapt", "flow/" + name, "--input",
                            self.path("train.csv"), "--batch", "32")
            self.assertEqual(again["accepted"], 90)
            compiled = self.ok(others[0], "compile", "flow/" + name)
            self.assertGreaterEqual(compiled["version"], 1)
            outputs = []
            for m in MEMBERS:
                out = self.path("pred-%s-%s.csv" % (name, m))
                self.ok(m, "predict", "flow/" + name, "--input", self.path("train.csv"),
                        "--output", out)
                with open(out) as f:
                    outputs.append(f.read())
            self.assertEqual(outputs[0], outputs[1])
            self.assertEqual(outputs[0], outputs[2])
            rows = list(csv.DictReader(outputs[0].splitlines()))
            with open(self.path("train.csv")) as f:
                truth = [r["label"] for r in csv.DictReader(f)]
            correct = sum(r["label"] == t for r, t in zip(rows, truth))
            self.assertGreater(correct / len(truth), 0.9)
            info = self.ok(others[1], "store", "get", "flow/" + name)
            self.assertEqual(info["examples"], 90)

            # Export through one member, import under a new name through another, delete.
            snap = self.path("%s.snap" % name)
            self.ok(others[1], "export", "flow/" + name, "--output", snap)
            copy = "flow/%s-copy" % name
            self.ok(others[0], "import", copy, "--input", snap)
            self.assertEqual(self.ok(target, "store", "get", copy)["examples"], 90)
            self.ok(others[1], "store", "pin", copy)
            self.assertTrue(self.ok(others[0], "store", "get", copy)["spec"]["pinned"])
            self.ok(others[0], "store", "delete", copy)
            self.assertEqual(self.ctl(target, "store", "get", copy).returncode, 1)

    def test_list_stores_lists_the_whole_cluster_in_pages(self):
        names = ["l%02d" % i for i in range(10)]
        for i, n in enumerate(names):
            self.ok(MEMBERS[i % 3], "store", "create", "lst/" + n, "--kind", "faast", "--set",
                    "dim=%d" % DIM)
        self.assertGreater(len({owner_of("lst/" + n) for n in names}), 1)
        for m in MEMBERS:
            for size in ([], ["--page-size", "1"], ["--page-size", "3"]):
                listed = self.ok(m, "store", "list", "lst", *size)
                self.assertEqual([s["store"] for s in listed["stores"]], names, (m, size))
        self.assertEqual(self.ok("b", "store", "list", "nobody"), {"stores": []})

    def test_predict_stream_goes_to_each_messages_owner(self):
        rng = random.Random(9)
        self.write_examples("stream.csv", rng, 30)
        names = ["ps%d" % i for i in range(4)]
        for n in names:
            self.ok("a", "store", "create", "strm/" + n, "--kind", "faast", "--encoder",
                    "identity", "--output", "labels", "--set", "dim=%d" % DIM)
            self.ok("b", "adapt", "strm/" + n, "--input", self.path("stream.csv"))
            self.ok("c", "compile", "strm/" + n)
        key = [0.5] * DIM
        want = {}
        for n in names:  # each store asked at its owner, directly
            with grpc.insecure_channel(self.addr[owner_of("strm/" + n)]) as channel:
                stub = adapt_pb2_grpc.AdaptationStub(channel)
                request = adapt_pb2.PredictRequest(tenant="strm", store=n)
                request.inputs.add().vector.values.extend(key)
                want[n] = stub.Predict(request, timeout=30)
        for m in MEMBERS:
            with grpc.insecure_channel(self.addr[m]) as channel:
                stub = adapt_pb2_grpc.AdaptationStub(channel)
                requests = []
                for n in names + names[::-1]:
                    request = adapt_pb2.PredictRequest(tenant="strm", store=n)
                    request.inputs.add().vector.values.extend(key)
                    requests.append(request)
                replies = list(stub.PredictStream(iter(requests), timeout=30))
                self.assertEqual(len(replies), len(requests))
                for request, reply in zip(requests, replies):
                    self.assertEqual(reply, want[request.store], (m, request.store))

    def test_a_forwarded_call_for_another_members_store_is_refused_not_forwarded(self):
        self.ok("a", "store", "create", "fwd/x", "--kind", "faast", "--set", "dim=%d" % DIM)
        owner = owner_of("fwd/x")
        other = next(m for m in MEMBERS if m != owner)
        with grpc.insecure_channel(self.addr[other]) as channel:
            stub = adapt_pb2_grpc.AdaptationStub(channel)
            with self.assertRaises(grpc.RpcError) as raised:
                stub.GetStore(adapt_pb2.GetStoreRequest(tenant="fwd", store="x"), timeout=10,
                              metadata=[("adaptd-forwarded", "someone")])
            self.assertEqual(raised.exception.code(), grpc.StatusCode.UNAVAILABLE)
            self.assertIn("belongs to member %s" % owner, raised.exception.details())
            # Without the mark the same call is forwarded and answered.
            info = stub.GetStore(adapt_pb2.GetStoreRequest(tenant="fwd", store="x"), timeout=10)
            self.assertEqual(info.store, "x")

    def test_a_bad_member_list_is_refused_at_start(self):
        result = subprocess.run(
            [ADAPTD, "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--data-dir",
             self.path("bad"), "--cluster-self", "zz", "--cluster-members",
             "a=127.0.0.1:1,b=127.0.0.1:2"], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn('cluster.self: "zz" is not among cluster.members', result.stderr)
        result = subprocess.run(
            [ADAPTD, "--listen", "127.0.0.1:0", "--metrics-listen", "off", "--data-dir",
             self.path("bad"), "--cluster-self", "a", "--cluster-members", "a=127.0.0.1:1,b"],
            capture_output=True, text=True, timeout=30)
        self.assertNotEqual(result.returncode, 0)
        self.assertIn("--cluster-members", result.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--adaptctl", default=ADAPTCTL)
    parser.add_argument("--adaptd", default=ADAPTD)
    args, rest = parser.parse_known_args()
    ADAPTCTL, ADAPTD = args.adaptctl, args.adaptd
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
