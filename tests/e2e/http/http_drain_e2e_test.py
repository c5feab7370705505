"""The HTTP/JSON front end while the real adaptd shuts down (docs/HTTP.md, "Shutdown").

While a gRPC Adapt stream admitted before SIGTERM is still running, the server drains:
/readyz answers 503, /healthz 200, and a new HTTP call 503 UNAVAILABLE; the stream then
completes, and the process exits 0.

Environment: ADAPTD_BIN (the server), PYTHONPATH with adaptd_client's generated stubs.
"""

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc

from adaptd_client._stubs import pb, pb_grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_e2e import BOUND_S, call, free_port, wait_ready  # noqa: E402


class HttpDrainTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="adaptd-http-drain-")
        self.grpc_address = "127.0.0.1:%d" % free_port()
        self.http_port = free_port()
        self.log = open(os.path.join(self.tmp.name, "adaptd.log"), "w+b")
        self.server = subprocess.Popen(
            [os.environ["ADAPTD_BIN"], "--listen", self.grpc_address,
             "--http-listen", "127.0.0.1:%d" % self.http_port, "--metrics-listen", "off",
             "--data-dir", os.path.join(self.tmp.name, "data"), "--shutdown-grace-seconds", "60"],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT)
        wait_ready(self.http_port, self.server, self.log)

    def tearDown(self):
        if self.server.poll() is None:
            self.server.kill()
            self.server.wait()
        self.log.close()
        self.tmp.cleanup()

    def test_draining_server_answers_503(self):
        status, body, _ = call(self.http_port, "POST", "/v1/CreateStore", {
            "tenant": "t", "store": "s", "spec": {"kind": "STORE_KIND_FAAST", "dim": 3}})
        self.assertEqual(status, 200, body)
        first_sent, release = threading.Event(), threading.Event()

        def messages():
            request = pb.AdaptRequest(tenant="t", store="s")
            example = request.examples.add()
            example.input.vector.values.extend([1.0, 0.0, 0.0])
            example.label = "a"
            yield request
            first_sent.set()
            release.wait(BOUND_S)

        channel = grpc.insecure_channel(self.grpc_address)
        self.addCleanup(channel.close)
        adapted = pb_grpc.AdaptationStub(channel).Adapt.future(messages(), timeout=BOUND_S * 2)
        self.assertTrue(first_sent.wait(BOUND_S))
        time.sleep(0.2)  # the first message reached the server
        self.server.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + BOUND_S
        while call(self.http_port, "GET", "/readyz")[0] != 503:
            self.assertLess(time.monotonic(), deadline, "/readyz never answered 503")
            time.sleep(0.02)
        self.assertEqual(call(self.http_port, "GET", "/healthz")[0], 200)
        status, body, _ = call(self.http_port, "POST", "/v1/GetStore",
                               {"tenant": "t", "store": "s"})
        self.assertEqual((status, body["code"]), (503, "UNAVAILABLE"), body)
        release.set()
        self.assertEqual(adapted.result(timeout=BOUND_S).accepted, 1)
        channel.close()  # an idle open channel would hold gRPC's shutdown to its deadline
        self.assertEqual(self.server.wait(timeout=BOUND_S), 0)


if __name__ == "__main__":
    unittest.main()
