#!/usr/bin/python3
"""The Python clients' routing to holders (adaptd_client._routes; docs/CLIENTS.md, "Routing to
holders"), without a cluster: the shard function, the route table and its hints, when the table
is refetched, and the sync and asyncio clients against two in-process gRPC servers that stand
in for a given member and a holder (fakes inside this test only; routing_clients_e2e_test.py
runs the clients against a real cluster on etcd).

Run with PYTHONPATH holding client/python and the generated adapt.v1 modules, as ctest sets it.
"""

import asyncio
import threading
import unittest
from concurrent import futures

import grpc

from adaptd_client import Client, UnavailableError, _routes, aio
from adaptd_client._stubs import pb, pb_grpc


def routes_response(addresses, holders, revision, names=None):
    response = pb.ClusterRoutesResponse(revision=revision)
    for i, address in enumerate(addresses):
        response.members.add(name=(names or ["m%d" % j for j in range(len(addresses))])[i],
                             address=address)
    response.holders.extend(holders)
    return response


class ShardAndHints(unittest.TestCase):
    def test_the_shard_is_fnv1a64_of_tenant_slash_store(self):
        # The same values client/cpp/routes_test.cc pins for the server's shard function.
        self.assertEqual(_routes.store_shard("a", "b"), 3937)
        self.assertEqual(_routes.store_shard("acme", "intents"), 111)
        self.assertEqual(_routes.store_shard("ténant", "s"),
                         _routes.store_shard("ténant", "s", 4096))
        self.assertLess(_routes.store_shard("x", "y", 16), 16)

    def test_a_hint_parses_or_names_what_is_wrong(self):
        hint = _routes.parse_holder_hint("0a1f m2 10.0.0.3:50051 77")
        self.assertEqual((hint.shard, hint.name, hint.address, hint.revision),
                         (0xa1f, "m2", "10.0.0.3:50051", 77))
        for value, what in (("0a1f m2 10.0.0.3:50051", "3 parts, not 4"),
                            ("a1f m2 h:1 7", 'the shard "a1f"'),
                            ("zzzz m2 h:1 7", 'the shard "zzzz"'),
                            ("1000 m2 h:1 7", "below 4096"),
                            ("0001 m2 host 7", 'the address "host"'),
                            ("0001 m2 h:1 0", 'the revision "0"'),
                            ("0001 m2 h:1 -4", 'the revision "-4"')):
            with self.assertRaises(ValueError) as raised:
                _routes.parse_holder_hint(value)
            self.assertIn(what, str(raised.exception), value)
        self.assertEqual(_routes.hint_of(None, [("x", "1"), ("adaptd-holder", "v")]), "v")
        self.assertIsNone(_routes.hint_of([("x", "1")], None))

    def test_the_table_validates_and_takes_only_newer_hints(self):
        table = _routes.RouteTable(routes_response(["a:1", "b:2"], [0, 1, 0, -1], 40))
        self.assertEqual([table.holder_address(s) for s in range(-1, 5)],
                         [None, "a:1", "b:2", "a:1", None, None])
        # Not newer than the table: ignored.
        self.assertFalse(table.apply(_routes.HolderHint(0, "b", "b:2", 40)))
        self.assertEqual(table.holder_address(0), "a:1")
        # Newer and a new member: taken.
        self.assertTrue(table.apply(_routes.HolderHint(0, "c", "c:3", 41)))
        self.assertEqual(table.holder_address(0), "c:3")
        # Older than what the shard learned: ignored; the same holder: no change.
        self.assertFalse(table.apply(_routes.HolderHint(0, "a", "a:1", 41)))
        self.assertFalse(table.apply(_routes.HolderHint(0, "c", "c:3", 50)))
        self.assertTrue(table.apply(_routes.HolderHint(3, "b", "b:2", 42)))
        self.assertEqual(table.holder_address(3), "b:2")
        for response, what in (
                (routes_response(["a:1"], [], 1), "holders is empty"),
                (routes_response(["a:1"], [0, 1], 1), "holders[1] is 1, not -1 or below 1"),
                (routes_response(["a:1"], [-2], 1), "holders[0] is -2"),
                (routes_response([""], [0], 1), "members[0] has no address"),
                (routes_response(["a:1"], [0], 1, names=[""]), "members[0] has no name")):
            with self.assertRaises(ValueError) as raised:
                _routes.RouteTable(response)
            self.assertIn(what, str(raised.exception))

    def test_refetches_are_paced_and_unimplemented_turns_routing_off(self):
        now = [100.0]
        state = _routes.RouteState("a:1", clock=lambda: now[0])
        self.assertTrue(state.first_fetch_due())
        self.assertTrue(state.begin_fetch())
        self.assertFalse(state.begin_fetch())  # one at a time
        state.end_fetch(code=grpc.StatusCode.UNAVAILABLE)
        self.assertTrue(state.first_fetch_due())  # still due
        self.assertFalse(state.begin_fetch())  # but not within a second
        now[0] += 1.0
        self.assertTrue(state.begin_fetch())
        state.end_fetch(routes_response(["a:1", "b:2"], [1] * 4096, 9))
        self.assertEqual(state.revision, 9)
        shard_b = _routes.store_shard("t", "s")
        self.assertEqual(state.holder("t", "s"), "b:2", shard_b)
        # A holder's UNAVAILABLE makes the table stale; a given member's does not.
        self.assertFalse(state.observe(None, grpc.StatusCode.UNAVAILABLE, routed=False))
        self.assertTrue(state.observe(None, grpc.StatusCode.UNAVAILABLE, routed=True))
        # A hint that moves the store's shard to the given member: calls stay there.
        state.end_fetch(routes_response(["a:1", "b:2"], [1] * 4096, 9))
        self.assertTrue(state.observe("%04x m0 a:1 10" % shard_b, grpc.StatusCode.OK, False))
        self.assertIsNone(state.holder("t", "s"))
        # A hint that does not parse changes nothing.
        state.end_fetch(routes_response(["a:1", "b:2"], [1] * 4096, 9))
        self.assertFalse(state.observe("garbage", grpc.StatusCode.OK, False))
        self.assertEqual(state.holder("t", "s"), "b:2")
        now[0] += 1.0
        self.assertTrue(state.begin_fetch())
        state.end_fetch(code=grpc.StatusCode.UNIMPLEMENTED)
        self.assertFalse(state.enabled)
        self.assertIsNone(state.holder("t", "s"))
        self.assertIsNone(state.revision)


class Member(pb_grpc.AdaptationServicer):
    """One stand-in member: answers ClusterRoutes with `routes` (None: UNIMPLEMENTED, as a
    single server), and Predict and Feedback with its name, or fails them with `failing`;
    `hint` goes on every answer as the holder header."""

    def __init__(self, name):
        self.name = name
        self.routes = None
        self.failing = None
        self.hint = None
        self.calls = []
        self.lock = threading.Lock()
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        pb_grpc.add_AdaptationServicer_to_server(self, self.server)
        self.address = "127.0.0.1:%d" % self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()

    def record(self, method, context):
        with self.lock:
            self.calls.append(method)
        if self.hint is not None:
            context.send_initial_metadata([(_routes.HOLDER_HEADER, self.hint)])
        if self.failing is not None:
            context.abort(self.failing, "%s fails %s" % (self.name, method))

    def count(self, method):
        with self.lock:
            return self.calls.count(method)

    def ClusterRoutes(self, request, context):
        self.record("ClusterRoutes", context)
        if self.routes is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "not a member of a cluster on etcd")
        return self.routes

    def Predict(self, request, context):
        self.record("Predict", context)
        response = pb.PredictResponse(version=1)
        response.predictions.add().labels.add(label=self.name, score=1.0)
        return response

    def Feedback(self, request, context):
        self.record("Feedback", context)
        return pb.FeedbackResponse(accepted=1)


class ClientsRoute(unittest.TestCase):
    def setUp(self):
        self.given, self.holder = Member("given"), Member("holder")
        # Every shard on the holder.
        self.given.routes = routes_response([self.given.address, self.holder.address],
                                            [1] * 4096, 5)
        self.given.failing = None

    def tearDown(self):
        self.given.server.stop(None)
        self.holder.server.stop(None)

    def answered_by(self, predictions):
        return predictions[0][0][0]

    def test_calls_go_to_the_holder_and_fall_back_to_the_given_member(self):
        with Client(self.given.address, timeout=10) as client:
            self.assertFalse(client.routing())
            self.assertEqual(self.answered_by(client.predict("t", "s", [[1.0]])), "holder")
            self.assertTrue(client.routing())
            self.assertEqual(self.given.count("Predict"), 0)
            # Calls that are not for one store stay on the given member.
            self.assertEqual(client.cluster_routes().revision, 5)
            # The holder fails UNAVAILABLE: Predict (resendable) is answered by the given
            # member within the call; Feedback (not resent) raises it.
            self.holder.failing = grpc.StatusCode.UNAVAILABLE
            self.assertEqual(self.answered_by(client.predict("t", "s", [[1.0]])), "given")
            with self.assertRaises(UnavailableError):
                client.feedback("t", "s", ["p1"])
            self.assertEqual(self.given.count("Feedback"), 0)
            # Other failures of the holder are the caller's.
            self.holder.failing = grpc.StatusCode.NOT_FOUND
            with self.assertRaises(Exception) as raised:
                client.predict("t", "s", [[1.0]])
            self.assertEqual(raised.exception.code_name, "NOT_FOUND")
        with Client(self.given.address, timeout=10, route_to_holders=False) as client:
            self.holder.failing = None
            self.assertEqual(self.answered_by(client.predict("t", "s", [[1.0]])), "given")
            self.assertFalse(client.routing())

    def test_a_hint_moves_a_store_and_a_single_server_stays_unrouted(self):
        # The table says the given member holds everything; its answers hint the holder.
        self.given.routes = routes_response([self.given.address, self.holder.address],
                                            [0] * 4096, 5)
        shard = _routes.store_shard("t", "s")
        self.given.hint = "%04x m1 %s 6" % (shard, self.holder.address)
        with Client(self.given.address, timeout=10) as client:
            self.assertEqual(self.answered_by(client.predict("t", "s", [[1.0]])), "given")
            self.assertEqual(self.answered_by(client.predict("t", "s", [[1.0]])), "holder")
            # Another store of another shard stays on the given member.
            other = next(n for n in ("a", "b", "c", "d") if _routes.store_shard("t", n) != shard)
            self.assertEqual(self.answered_by(client.predict("t", other, [[1.0]])), "given")
        self.given.routes, self.given.hint = None, None
        with Client(self.given.address, timeout=10) as client:
            self.assertEqual(self.answered_by(client.predict("t", "s", [[1.0]])), "given")
            self.assertFalse(client.routing())
            self.assertEqual(self.answered_by(client.predict("t", "s", [[1.0]])), "given")
        # One fetch per client: the refetch the hint asked for waits out the second since the
        # first fetch.
        self.assertEqual(self.given.count("ClusterRoutes"), 2)

    def test_the_asyncio_client_routes_and_falls_back(self):
        async def run():
            async with aio.Client(self.given.address, timeout=10) as client:
                first = await client.predict("t", "s", [[1.0]])
                self.assertTrue(client.routing())
                self.holder.failing = grpc.StatusCode.UNAVAILABLE
                second = await client.predict("t", "s", [[1.0]])
                with self.assertRaises(UnavailableError):
                    await client.feedback("t", "s", ["p1"])
                return first, second

        first, second = asyncio.run(run())
        self.assertEqual((self.answered_by(first), self.answered_by(second)),
                         ("holder", "given"))
        self.assertEqual(self.given.count("Feedback"), 0)


if __name__ == "__main__":
    unittest.main()
