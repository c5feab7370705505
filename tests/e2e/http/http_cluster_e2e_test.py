"""The HTTP/JSON front end in a cluster of two real adaptd members (docs/HTTP.md, "A cluster").

HTTP calls are not relayed between members: a call for a store the other member serves is
answered 421 naming that member (the member that serves it answers 200, and gRPC still
forwards the same call), and ListStores, which gathers every member's page, answers 501.

Environment: ADAPTD_BIN (the server), PYTHONPATH with adaptd_client's generated stubs.
"""

import os
import subprocess
import sys
import tempfile
import time
import unittest

import grpc

from adaptd_client._stubs import pb, pb_grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_e2e import BOUND_S, call, free_port, wait_ready  # noqa: E402

MEMBERS = ("a", "b")


class HttpClusterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="adaptd-http-cluster-")
        cls.grpc_address = {m: "127.0.0.1:%d" % free_port() for m in MEMBERS}
        cls.http_port = {m: free_port() for m in MEMBERS}
        members = ",".join("%s=%s" % (m, cls.grpc_address[m]) for m in MEMBERS)
        cls.servers, cls.logs = {}, {}
        for m in MEMBERS:
            cls.logs[m] = open(os.path.join(cls.tmp.name, m + ".log"), "w+b")
            cls.servers[m] = subprocess.Popen(
                [os.environ["ADAPTD_BIN"], "--listen", cls.grpc_address[m],
                 "--http-listen", "127.0.0.1:%d" % cls.http_port[m], "--metrics-listen", "off",
                 "--data-dir", os.path.join(cls.tmp.name, "data-" + m), "--cluster-self", m,
                 "--cluster-members", members],
                stdin=subprocess.DEVNULL, stdout=cls.logs[m], stderr=subprocess.STDOUT)
        for m in MEMBERS:
            wait_ready(cls.http_port[m], cls.servers[m], cls.logs[m])
        # Each member reached the other (its channel is no longer backing off).
        deadline = time.monotonic() + BOUND_S
        while not all(b"cluster: settled" in cls.log_text(m) for m in MEMBERS):
            if time.monotonic() > deadline:
                raise AssertionError("the members did not settle: " + str(
                    {m: cls.log_text(m).decode(errors="replace") for m in MEMBERS}))
            time.sleep(0.05)
        cls.channel = grpc.insecure_channel(cls.grpc_address["a"])
        cls.stub = pb_grpc.AdaptationStub(cls.channel)
        grpc.channel_ready_future(cls.channel).result(timeout=BOUND_S)

    @classmethod
    def log_text(cls, member):
        cls.logs[member].seek(0)
        return cls.logs[member].read()

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        for m in MEMBERS:
            cls.servers[m].terminate()
            try:
                cls.servers[m].wait(timeout=BOUND_S)
            finally:
                if cls.servers[m].poll() is None:
                    cls.servers[m].kill()
            cls.logs[m].close()
        cls.tmp.cleanup()

    def test_a_call_for_the_other_members_store_names_it(self):
        owners = set()
        for i in range(8):  # stores spread over both members by their names
            store = "s%d" % i
            request = pb.CreateStoreRequest(tenant="t", store=store)
            request.spec.kind = pb.STORE_KIND_FAAST
            request.spec.dim = 3
            self.stub.CreateStore(request, timeout=BOUND_S)  # forwarded to the owner over gRPC
            answers = {m: call(self.http_port[m], "POST", "/v1/GetStore",
                               {"tenant": "t", "store": store}) for m in MEMBERS}
            served = [m for m in MEMBERS if answers[m][0] == 200]
            self.assertEqual(len(served), 1, answers)
            owner, other = served[0], [m for m in MEMBERS if m != served[0]][0]
            owners.add(owner)
            status, body, _ = answers[other]
            self.assertEqual((status, body["code"]), (421, "UNAVAILABLE"), body)
            self.assertIn("member " + owner, body["message"])
            self.assertIn(self.grpc_address[owner], body["message"])
            self.assertEqual(answers[owner][1]["store"], store)
            got = self.stub.GetStore(pb.GetStoreRequest(tenant="t", store=store),
                                     timeout=BOUND_S)
            self.assertEqual(got.store, store)
        self.assertEqual(owners, set(MEMBERS), "every store landed on one member")

    def test_list_stores_is_left_to_grpc(self):
        status, body, _ = call(self.http_port["a"], "POST", "/v1/ListStores", {"tenant": "t"})
        self.assertEqual((status, body["code"]), (501, "UNIMPLEMENTED"), body)
        self.assertIn("gRPC", body["message"])


if __name__ == "__main__":
    unittest.main()
