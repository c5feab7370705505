"""Graceful shutdown of the real adaptd binary on SIGTERM.

A client stream that is in flight when SIGTERM arrives keeps sending for a while and still
completes with every example accepted; health turns NOT_SERVING (seen on a Watch stream opened
before the signal); a new call after the signal is refused with UNAVAILABLE; the process exits
with status 0 once the stream is done, well before the grace period ends.

Environment: ADAPTD_BIN (the server), PYTHONPATH with adaptd_client and its generated stubs.
"""

import os
import queue
import signal
import socket
import subprocess
import tempfile
import threading
import time
import unittest

import grpc

from adaptd_client import Client, _health
from adaptd_client._stubs import pb, pb_grpc

GRACE_S = 60
BOUND_S = 30.0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, what, bound=BOUND_S):
    deadline = time.monotonic() + bound
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.02)


class ShutdownTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="adaptd-shutdown-")
        self.address = "127.0.0.1:%d" % free_port()
        self.log = open(os.path.join(self.tmp.name, "adaptd.log"), "w+b")
        self.server = subprocess.Popen(
            [os.environ["ADAPTD_BIN"], "--listen", self.address, "--metrics-listen", "off",
             "--data-dir", os.path.join(self.tmp.name, "data"),
             "--shutdown-grace-seconds", str(GRACE_S)],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        self.client = Client(self.address, timeout=BOUND_S)
        self.client.wait_ready(timeout=BOUND_S)

    def tearDown(self):
        self.client.close()
        if self.server.poll() is None:
            self.server.kill()
            self.server.wait()
        self.log.seek(0)
        if hasattr(self, "_outcome") and not self._outcome.success:
            print(self.log.read().decode(errors="replace"))
        self.log.close()
        self.tmp.cleanup()

    def test_in_flight_stream_drains_and_new_calls_are_refused(self):
        self.client.create_store("t", "s", kind="faast", output="labels")
        channel = grpc.insecure_channel(self.address)
        stub = pb_grpc.AdaptationStub(channel)

        # Health Watch, opened before the signal: records every status it is sent.
        statuses = queue.Queue()
        watch = channel.unary_stream(
            "/grpc.health.v1.Health/Watch",
            request_serializer=_health.HealthCheckRequest.SerializeToString,
            response_deserializer=_health.HealthCheckResponse.FromString)(
                _health.HealthCheckRequest(service=""), timeout=BOUND_S)

        def read_watch():
            try:
                for response in watch:
                    statuses.put(_health.status_name(response))
            except grpc.RpcError as error:
                statuses.put("ended: " + error.code().name)

        watcher = threading.Thread(target=read_watch, daemon=True)
        watcher.start()
        self.assertEqual(statuses.get(timeout=BOUND_S), "SERVING")

        # A long Adapt stream: one message, then (after SIGTERM) nine more, slowly.
        first_sent = threading.Event()
        signalled = threading.Event()
        total = 10

        def messages():
            for i in range(total):
                request = pb.AdaptRequest(tenant="t", store="s")
                example = request.examples.add()
                example.input.vector.values.extend([float(i % 3 == k) for k in range(3)])
                example.label = "abc"[i % 3]
                yield request
                if i == 0:
                    first_sent.set()
                    signalled.wait(BOUND_S)
                else:
                    time.sleep(0.1)

        result = {}

        def run_stream():
            try:
                result["response"] = stub.Adapt(messages(), timeout=BOUND_S * 2)
            except grpc.RpcError as error:
                result["error"] = error

        streamer = threading.Thread(target=run_stream)
        streamer.start()
        self.assertTrue(first_sent.wait(BOUND_S))
        # A unary round trip on the same connection: the server has read the stream's headers
        # (sent before this call's) by the time it answers.
        stub.GetStore(pb.GetStoreRequest(tenant="t", store="s"), timeout=BOUND_S)
        time.sleep(0.2)  # margin for the first message itself; no assertion depends on it

        self.server.send_signal(signal.SIGTERM)
        # Health turns NOT_SERVING on the watch opened before the signal.
        self.assertEqual(statuses.get(timeout=BOUND_S), "NOT_SERVING")

        # New calls are refused with UNAVAILABLE, on a fresh channel and on the old one.
        def refused(call):
            try:
                call()
            except grpc.RpcError as error:
                return error.code()
            return grpc.StatusCode.OK

        # The server keeps answering UNAVAILABLE itself for as long as a call it admitted is
        # still running (gRPC's own shutdown starts only after that), so the code is exact.
        fresh = pb_grpc.AdaptationStub(grpc.insecure_channel(self.address))
        self.assertEqual(refused(lambda: fresh.ListEncoders(pb.ListEncodersRequest(), timeout=5)),
                         grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(refused(lambda: stub.GetStore(
            pb.GetStoreRequest(tenant="t", store="s"), timeout=5)), grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(refused(lambda: list(stub.PredictStream(iter([pb.PredictRequest(
            tenant="t", store="s")]), timeout=5))), grpc.StatusCode.UNAVAILABLE)
        watch.cancel()

        # The in-flight stream finishes within the grace period with every example.
        signalled.set()
        streamer.join(BOUND_S * 2)
        self.assertFalse(streamer.is_alive())
        self.assertNotIn("error", result, result.get("error"))
        self.assertEqual(result["response"].accepted, total)

        # The process exits by itself, with status 0, long before the grace period ends.
        started = time.monotonic()
        self.assertEqual(self.server.wait(timeout=BOUND_S), 0)
        self.assertLess(time.monotonic() - started, GRACE_S / 2)
        self.log.seek(0)
        log = self.log.read().decode(errors="replace")
        self.assertIn("SIGTERM received", log)
        self.assertIn("stopped", log)
        channel.close()


if __name__ == "__main__":
    unittest.main()
