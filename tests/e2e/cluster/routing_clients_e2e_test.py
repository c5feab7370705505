#!/usr/bin/python3
"""End-to-end test of clients that route to holders (docs/CLUSTER_OPERATIONS.md, "Clients
route to holders").

Starts three adaptd members as a cluster on etcd (cluster_kinds.py: a 3-member etcd and
SeaweedFS) and three routing clients, each given member a and running Predict and Adapt calls
all the time on stores of its own tenant: the C++ client (routing_client_driver:
adaptd::Client), the Python client and the Python asyncio client (routing_python_driver.py).
Then a fourth member joins, member b is drained and member c is SIGKILLed. Checks that no
client sees a failed call beyond its retries (Adapt resent with its ids while UNAVAILABLE), and
that after each step their calls land on the holders: the members'
adaptd_forwarded_calls_total for Predict and Adapt stops rising while the clients keep
calling. Also: ClusterRoutes answers the table (every shard held, by the members that
hold them), and the answer of a forwarded call carries the `adaptd-holder` header naming the
holder.

Usage: routing_clients_e2e_test.py --adaptctl PATH --adaptd PATH --driver PATH
(PYTHONPATH must hold the generated modules, adapt/v1/*_pb2*.py, and client/python, as ctest
sets it).
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

import grpc
from adapt.v1 import adapt_pb2, adapt_pb2_grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster_kinds  # noqa: E402

ADAPTCTL = ADAPTD = DRIVER = ""
START_TIMEOUT_S = 60.0
SETTLE_TIMEOUT_S = 90.0
# How long the forwarded counters must stay still while the client calls, and how long they
# may take to get there after a step.
QUIET_S = 3.0
QUIET_WITHIN_S = 30.0


free_port = cluster_kinds.free_port
die_with_parent = cluster_kinds.die_with_parent


class RoutingClients(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for name, path in (("adaptctl", ADAPTCTL), ("adaptd", ADAPTD), ("driver", DRIVER)):
            if not path or not os.access(path, os.X_OK):
                raise RuntimeError("%s binary not found or not executable: %r" % (name, path))
        cls.tmp = tempfile.mkdtemp(prefix="adaptd-routing-e2e-")
        cls.addr, cls.metrics, cls.servers, cls.logs = {}, {}, {}, {}
        cls.drivers = {}
        cls.backing = cluster_kinds.Backing(cls.tmp)
        try:
            for m in ("a", "b", "c"):
                cls.start(m)
            for m in ("a", "b", "c"):
                cls.wait_until_serving(m)
            cluster_kinds.wait_until_settled(ADAPTCTL, cls.addr["a"], SETTLE_TIMEOUT_S)
        except Exception:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for driver in cls.drivers.values():
            if driver.poll() is None:
                driver.kill()
                driver.wait()
        for m, server in cls.servers.items():
            if server.poll() is not None and server.returncode not in (0, -signal.SIGKILL):
                sys.stderr.write("adaptd %s exited with %s:\n%s\n" %
                                 (m, server.returncode, cls.server_log(m)))
            cluster_kinds.stop(server)
        cluster_kinds.clean_up(cls.logs.values(), cls.backing, cls.tmp)

    @classmethod
    def start(cls, m):
        cls.addr[m] = "127.0.0.1:%d" % free_port()
        cls.metrics[m] = "127.0.0.1:%d" % free_port()
        cls.logs[m] = open(os.path.join(cls.tmp, "%s.log" % m), "w")
        cls.servers[m] = subprocess.Popen(
            die_with_parent() +
            [ADAPTD, "--listen", cls.addr[m], "--metrics-listen", cls.metrics[m],
             "--data-dir", os.path.join(cls.tmp, "data-" + m), "--cluster-settle", "1"] +
            cls.backing.member_flags(m, cls.addr[m]),
            stdout=cls.logs[m], stderr=subprocess.STDOUT)

    @classmethod
    def wait_until_serving(cls, m):
        cluster_kinds.wait_until_serving(ADAPTCTL, m, cls.servers[m], cls.addr[m],
                                         lambda: cls.server_log(m), START_TIMEOUT_S)

    @classmethod
    def server_log(cls, m):
        cls.logs[m].flush()
        with open(os.path.join(cls.tmp, "%s.log" % m)) as f:
            return f.read()

    def forwarded(self):
        """Predict and Adapt calls forwarded so far, over the members running."""
        total = 0.0
        for m, server in self.servers.items():
            if server.poll() is not None:
                continue
            body = urllib.request.urlopen("http://%s/metrics" % self.metrics[m],
                                          timeout=10).read().decode()
            for line in body.splitlines():
                if line.startswith("adaptd_forwarded_calls_total{") and (
                        'method="Predict"' in line or 'method="Adapt"' in line):
                    total += float(line.rsplit(" ", 1)[1])
        return total

    def start_drivers(self):
        """The three routing clients, each on its own tenant's stores, given member a. The Python
        ones pause 10 ms before each call: two cores also run four members and etcd."""
        python = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                               "routing_python_driver.py"),
                  "--addr", self.addr["a"], "--stores", "12", "--workers", "2",
                  "--pause-ms", "10"]
        commands = {
            "c++": [DRIVER, "--addr", self.addr["a"], "--stores", "24", "--threads", "4"],
            "python": python + ["--tenant", "route-py"],
            "python-aio": python + ["--tenant", "route-aio", "--aio"],
        }
        for name, command in commands.items():
            self.drivers[name] = subprocess.Popen(command, stdin=subprocess.PIPE,
                                                  stdout=subprocess.PIPE, text=True)
        for name, driver in self.drivers.items():
            first = driver.stdout.readline()
            self.assertTrue(first, "the %s driver ended before its calls began" % name)
            self.assertEqual(json.loads(first)["failed"], 0, (name, first))

    def report(self):
        """Each driver's counts, by driver."""
        reports = {}
        for name, driver in self.drivers.items():
            driver.stdin.write("report\n")
            driver.stdin.flush()
            line = driver.stdout.readline()
            self.assertTrue(line, "the %s driver ended" % name)
            reports[name] = json.loads(line)
        return reports

    def assert_calls_land_on_holders(self, step):
        """Within QUIET_WITHIN_S, QUIET_S of calls by every client with no forwarded call, and
        none failed."""
        deadline = time.monotonic() + QUIET_WITHIN_S
        while True:
            before, reports_before = self.forwarded(), self.report()
            time.sleep(QUIET_S)
            after, reports = self.forwarded(), self.report()
            for name, report in reports.items():
                self.assertEqual(report["failed"], 0,
                                 "%s: failed calls of the %s client: %s" % (step, name, report))
            # A client may still be waiting out its resends of a call that met the step (a
            # killed member's stores are UNAVAILABLE until their failover): then look again.
            stalled = [name for name, report in reports.items()
                       if report["calls"] <= reports_before[name]["calls"] + 10]
            if after == before and not stalled:
                for name, report in reports.items():
                    self.assertTrue(report["routing"], (step, name))
                return reports
            if time.monotonic() > deadline:
                self.fail("%s: after %.0f s, in the last %.0f s: %d calls forwarded; clients "
                          "stalled: %s" % (step, QUIET_WITHIN_S, QUIET_S, after - before,
                                           stalled or "none"))

    def routes(self, m):
        with grpc.insecure_channel(self.addr[m]) as channel:
            return adapt_pb2_grpc.AdaptationStub(channel).ClusterRoutes(
                adapt_pb2.ClusterRoutesRequest(), timeout=10)

    def test_clients_call_holders_through_join_drain_and_kill(self):
        # The table: every shard held by one of the three members, at an etcd revision.
        routes = self.routes("b")
        self.assertEqual(len(routes.holders), cluster_kinds.SHARDS)
        self.assertEqual(sorted(m.name for m in routes.members), ["a", "b", "c"])
        self.assertEqual({m.name: m.address for m in routes.members},
                         {m: self.addr[m] for m in ("a", "b", "c")})
        self.assertNotIn(-1, routes.holders)
        self.assertGreater(routes.revision, 0)

        # A call forwarded by a member that does not hold the store names the holder.
        holder_of = {m.name: m for m in routes.members}
        names = [m.name for m in routes.members]
        shard = cluster_kinds.fnv1a64("hint/x") % cluster_kinds.SHARDS
        holder = names[routes.holders[shard]]
        other = next(m for m in ("a", "b", "c") if m != holder)
        with grpc.insecure_channel(self.addr[other]) as channel:
            stub = adapt_pb2_grpc.AdaptationStub(channel)
            with self.assertRaises(grpc.RpcError) as refused:
                stub.GetStore(adapt_pb2.GetStoreRequest(tenant="hint", store="x"), timeout=10)
        self.assertEqual(refused.exception.code(), grpc.StatusCode.NOT_FOUND)
        hints = [v for k, v in (refused.exception.initial_metadata() or ()) +
                 (refused.exception.trailing_metadata() or ()) if k == "adaptd-holder"]
        self.assertEqual(len(hints), 1, hints)
        s, name, address, revision = hints[0].split(" ")
        self.assertEqual((int(s, 16), name, address), (shard, holder, holder_of[holder].address))
        self.assertGreater(int(revision), 0)

        self.start_drivers()
        self.assert_calls_land_on_holders("start")

        self.start("d")
        self.wait_until_serving("d")
        cluster_kinds.wait_until_settled(ADAPTCTL, self.addr["a"], SETTLE_TIMEOUT_S)
        self.assert_calls_land_on_holders("after d joined")

        drained = subprocess.run([ADAPTCTL, "--addr", self.addr["a"], "--timeout", "60",
                                  "cluster", "drain", "b"], capture_output=True, text=True)
        self.assertEqual(drained.returncode, 0, drained.stderr)
        cluster_kinds.wait_until_settled(ADAPTCTL, self.addr["a"], SETTLE_TIMEOUT_S)
        self.assert_calls_land_on_holders("after b drained")

        self.servers["c"].send_signal(signal.SIGKILL)
        self.servers["c"].wait()
        cluster_kinds.wait_until_settled(ADAPTCTL, self.addr["a"], SETTLE_TIMEOUT_S)
        reports = self.assert_calls_land_on_holders("after c was killed")

        for name, driver in self.drivers.items():
            driver.stdin.close()
            last = json.loads(driver.stdout.readline())
            self.assertEqual(driver.wait(timeout=60), 0, name)
            self.assertEqual(last["failed"], 0, (name, last))
            self.assertGreaterEqual(last["predicts"], reports[name]["predicts"], name)
            self.assertGreater(last["adapts"], 0, name)
            sys.stderr.write("routing %s client: %s\n" % (name, json.dumps(last)))

    def test_a_single_server_answers_unimplemented(self):
        port = free_port()
        log = open(os.path.join(self.tmp, "single.log"), "w")
        server = subprocess.Popen(
            die_with_parent() + [ADAPTD, "--listen", "127.0.0.1:%d" % port, "--metrics-listen",
                                 "off", "--data-dir", os.path.join(self.tmp, "single")],
            stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + START_TIMEOUT_S
            while True:
                try:
                    with grpc.insecure_channel("127.0.0.1:%d" % port) as channel:
                        adapt_pb2_grpc.AdaptationStub(channel).ClusterRoutes(
                            adapt_pb2.ClusterRoutesRequest(), timeout=5)
                    self.fail("a single server answered ClusterRoutes")
                except grpc.RpcError as error:
                    if error.code() == grpc.StatusCode.UNAVAILABLE and \
                            time.monotonic() < deadline:
                        time.sleep(0.2)
                        continue
                    self.assertEqual(error.code(), grpc.StatusCode.UNIMPLEMENTED)
                    self.assertIn("not a member of a cluster on etcd", error.details())
                    break
        finally:
            server.terminate()
            server.wait(timeout=15)
            log.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--adaptctl", required=True)
    parser.add_argument("--adaptd", required=True)
    parser.add_argument("--driver", required=True)
    args, rest = parser.parse_known_args()
    ADAPTCTL, ADAPTD, DRIVER = args.adaptctl, args.adaptd, args.driver
    unittest.main(argv=[sys.argv[0]] + rest)
