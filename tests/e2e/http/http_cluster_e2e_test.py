"""The HTTP/JSON front end in a cluster on etcd of three real adaptd members (docs/HTTP.md, "A
cluster"; tests/e2e/cluster/cluster_kinds.py).

A unary HTTP call for a store another member owns is relayed to the owner over gRPC, with the
caller's token: its JSON answer, and its errors with their status, equal the owner's own
answer to the same call. ListStores gathers every member's page as gRPC's does. Adapt, Forget
and ImportStore are relayed as one client stream, ExportStore as the owner's server stream,
and the Open Inference Protocol's calls as Predict and GetStore: each answers as the owner
does. With a member down, its stores answer through the others, with what it acknowledged,
once they took its shards.

Environment: ADAPTD_BIN (the server), PYTHONPATH with adaptd_client's generated stubs.
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import grpc
from google.protobuf import json_format

from adaptd_client._stubs import pb, pb_grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "cluster"))
import cluster_kinds  # noqa: E402
from http_e2e import (BOUND_S, call, delimited, free_port, token_config,  # noqa: E402
                      undelimited, wait_ready)

MEMBERS = ("a", "b", "c")
TOKENS = {"t": "t-secret-5d1a", "u": "u-secret-0c7e"}
TENANT = "t"
MEMBER_TOKEN = "members-secret-3f9b"  # the members' own calls (counted as an admin's)


class HttpClusterTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="adaptd-http-cluster-")
        cls.servers, cls.logs, cls.channels, cls.backing = {}, {}, {}, None
        try:
            cls.start_cluster()
        except BaseException:  # no tearDownClass after a failed setUpClass: stop what started
            cls.tearDownClass()
            raise

    @classmethod
    def start_cluster(cls):
        config = token_config(cls.tmp.name, TOKENS)
        member_token = os.path.join(cls.tmp.name, "member-token")
        with open(member_token, "w") as f:
            f.write(MEMBER_TOKEN)
        cls.backing = cluster_kinds.Backing(cls.tmp.name)
        # The members' ports once etcd and SeaweedFS hold theirs, so that none is picked twice.
        cls.grpc_address = {m: "127.0.0.1:%d" % free_port() for m in MEMBERS}
        cls.http_port = {m: free_port() for m in MEMBERS}
        for m in MEMBERS:
            cls.logs[m] = open(os.path.join(cls.tmp.name, m + ".log"), "w+b")
            cls.servers[m] = subprocess.Popen(
                [os.environ["ADAPTD_BIN"], "--config", config, "--listen", cls.grpc_address[m],
                 "--http-listen", "127.0.0.1:%d" % cls.http_port[m], "--metrics-listen", "off",
                 "--data-dir", os.path.join(cls.tmp.name, "data-" + m),
                 "--cluster-member-token-file", member_token] +
                cls.backing.member_flags(m, cls.grpc_address[m]),
                stdin=subprocess.DEVNULL, stdout=cls.logs[m], stderr=subprocess.STDOUT)
        for m in MEMBERS:
            wait_ready(cls.http_port[m], cls.servers[m], cls.logs[m])
        cls.channels = {m: grpc.insecure_channel(cls.grpc_address[m]) for m in MEMBERS}
        cls.stubs = {m: pb_grpc.AdaptationStub(cls.channels[m]) for m in MEMBERS}
        for channel in cls.channels.values():
            grpc.channel_ready_future(channel).result(timeout=BOUND_S)
        cls.wait_settled()

    @classmethod
    def wait_settled(cls):
        """Every shard is held by its desired owner (after the members' settle time)."""
        deadline = time.monotonic() + 3 * BOUND_S
        while True:
            status = cls.stubs["a"].ClusterStatus(
                pb.ClusterStatusRequest(), timeout=BOUND_S,
                metadata=(("authorization", "Bearer " + MEMBER_TOKEN),))
            if status.settled:
                return
            if time.monotonic() > deadline:
                raise AssertionError("the members did not settle: " + str(
                    {m: cls.log_text(m).decode(errors="replace") for m in MEMBERS}))
            time.sleep(0.5)

    @classmethod
    def log_text(cls, member):
        cls.logs[member].seek(0)
        return cls.logs[member].read()

    @classmethod
    def tearDownClass(cls):
        for channel in cls.channels.values():
            channel.close()
        for m, server in cls.servers.items():
            server.terminate()
            try:
                server.wait(timeout=BOUND_S)
            finally:
                if server.poll() is None:
                    server.kill()
        for log in cls.logs.values():
            log.close()
        if cls.backing is not None:
            cls.backing.close()
        cls.tmp.cleanup()

    # --- helpers ---------------------------------------------------------------------------

    def http(self, member, method, request, token=TOKENS[TENANT]):
        """POST /v1/<method> at `member` with the request message in JSON: (status, body)."""
        body = json_format.MessageToDict(request, preserving_proto_field_name=True)
        status, answer, _ = call(self.http_port[member], "POST", "/v1/" + method, body,
                                 token=token)
        return status, answer

    def grpc(self, member, method, request, metadata=()):
        return getattr(self.stubs[member], method)(
            request, timeout=BOUND_S,
            metadata=(("authorization", "Bearer " + TOKENS[TENANT]),) + tuple(metadata))

    def owner_of(self, store):
        """The member that owns `store`: the only one that serves a call marked forwarded
        (the others refuse it rather than forward it again)."""
        owners = []
        for m in MEMBERS:
            try:
                self.grpc(m, "GetStore", pb.GetStoreRequest(tenant=TENANT, store=store),
                          metadata=(("adaptd-forwarded", "test"),))
                owners.append(m)
            except grpc.RpcError as e:
                self.assertEqual(e.code(), grpc.StatusCode.UNAVAILABLE, e.details())
        self.assertEqual(len(owners), 1, store)
        return owners[0]

    def create(self, member, store):
        request = pb.CreateStoreRequest(tenant=TENANT, store=store)
        request.spec.kind = pb.STORE_KIND_FAAST
        request.spec.dim = 3
        # No compile on its own: a store's version moves only with the test's Compile calls, so
        # the answers compared (a write's version, a predict's) do not depend on timing.
        request.spec.faast.auto_compile_delay_ms = 0
        status, answer = self.http(member, "CreateStore", request)
        self.assertEqual(status, 200, answer)
        self.assertEqual(answer["store"], store)

    def adapt(self, store):
        request = pb.AdaptRequest(tenant=TENANT, store=store)
        for i in range(12):
            example = request.examples.add()
            example.input.vector.values.extend([float(i % 3 == k) + 0.01 * i for k in range(3)])
            example.label = "abc"[i % 3]
        self.stubs["a"].Adapt(iter([request]), timeout=BOUND_S,
                              metadata=(("authorization", "Bearer " + TOKENS[TENANT]),))

    def assert_relayed(self, owner, method, request, status, scrub=None):
        """The call at every member answers as at the owner, with `status`: the answer."""
        answers = {}
        for m in [x for x in MEMBERS if x != owner] + [owner]:  # the owner's last
            answers[m] = self.http(m, method, request)
            if scrub is not None and answers[m][0] == 200:
                scrub(answers[m][1])
        self.assertEqual(answers[owner][0], status, answers[owner])
        for m in MEMBERS:
            self.assertEqual(answers[m], answers[owner], (method, m, owner))
        return answers[owner][1]

    def post(self, member, path, body, token=TOKENS[TENANT], headers=None):
        """POSTs `body` (bytes) to `member`'s HTTP listener in pieces of 7 bytes
        (Transfer-Encoding: chunked): (status, the answer's bytes, its headers)."""
        connection = http.client.HTTPConnection("127.0.0.1", self.http_port[member],
                                                timeout=BOUND_S)
        sent = dict(headers or {}, Authorization="Bearer " + token)
        try:
            pieces = (body[i:i + 7] for i in range(0, len(body), 7))
            connection.request("POST", path, body=pieces, headers=sent, encode_chunked=True)
            response = connection.getresponse()
            return response.status, response.read(), dict(response.getheaders())
        finally:
            connection.close()

    def write(self, member, method, requests):
        """Adapt or Forget over HTTP at `member`, the requests as newline-delimited JSON:
        (status, the parsed answer)."""
        body = "".join(json.dumps(json_format.MessageToDict(
            r, preserving_proto_field_name=True)) + "\n" for r in requests).encode()
        status, answer, _ = self.post(member, "/v1/" + method, body)
        return status, json.loads(answer)

    def export(self, member, store):
        """POST /v1/ExportStore at `member`: the body's bytes (200 expected)."""
        body = json.dumps({"tenant": TENANT, "store": store}).encode()
        status, answer, _ = self.post(member, "/v1/ExportStore", body)
        self.assertEqual(status, 200, answer)
        return answer

    def predictions(self, member, store):
        """Predict over gRPC at `member`, the prediction ids left out."""
        request = pb.PredictRequest(tenant=TENANT, store=store, top_k=3)
        for v in ([1.0, 0.0, 0.0], [0.0, 0.2, 0.9], [0.3, 0.6, 0.1]):
            request.inputs.add().vector.values.extend(v)
        answer = self.grpc(member, "Predict", request)
        for p in answer.predictions:
            p.prediction_id = ""
        return answer

    @staticmethod
    def writes(kind, store, first, count, width=3):
        """Three requests of `count` examples each from `first`, the first naming the store."""
        requests = []
        for batch in range(3):
            request = kind(tenant=TENANT if batch == 0 else "", store=store if batch == 0 else "")
            for i in range(first + batch * count, first + (batch + 1) * count):
                example = request.examples.add()
                example.input.vector.values.extend(
                    [float(i % 3 == k) + 0.01 * i for k in range(width)])
                example.label = "abc"[i % 3]
            requests.append(request)
        return requests

    # --- tests -----------------------------------------------------------------------------

    def test_a_relayed_unary_calls_answer_as_the_owner(self):
        owners = set()
        for i in range(6):  # stores spread over the members by their names
            store = "s%d" % i
            self.create(MEMBERS[i % len(MEMBERS)], store)  # relayed when not the owner's
            owner = self.owner_of(store)
            owners.add(owner)
            get = pb.GetStoreRequest(tenant=TENANT, store=store)
            self.assertEqual(self.assert_relayed(owner, "GetStore", get, 200)["store"], store)
            self.adapt(store)

            def scrub(answer):  # each Compile makes a new version; the times left out
                answer.pop("version")
                answer.get("faast", {}).pop("compile_seconds", None)
            self.assert_relayed(owner, "Compile", pb.CompileRequest(tenant=TENANT, store=store),
                                200, scrub)
            predict = pb.PredictRequest(tenant=TENANT, store=store, top_k=2)
            for v in ([1.0, 0.0, 0.0], [0.0, 0.2, 0.9]):
                predict.inputs.add().vector.values.extend(v)
            answer = self.assert_relayed(owner, "Predict", predict, 200)
            self.assertEqual(len(answer["predictions"]), 2)
            self.assert_relayed(owner, "PinStore",
                                pb.PinStoreRequest(tenant=TENANT, store=store, pinned=True), 200)

            # The owner's refusals come back with their status and body.
            wrong_dim = pb.PredictRequest(tenant=TENANT, store=store)
            wrong_dim.inputs.add().vector.values.extend([1.0, 0.0])
            self.assertEqual(self.assert_relayed(owner, "Predict", wrong_dim, 400)["code"],
                             "INVALID_ARGUMENT")
            feedback = pb.FeedbackRequest(tenant=TENANT, store=store)
            feedback.items.add(prediction_id="no-such-id", label="a")
            self.assert_relayed(owner, "Feedback", feedback, 400)
            missing = pb.GetStoreRequest(tenant=TENANT, store=store + "-none")
            self.assertEqual(self.assert_relayed(owner, "GetStore", missing, 404)["code"],
                             "NOT_FOUND")

            # Another tenant's token is refused at every member as at the owner.
            for m in MEMBERS:
                status, answer = self.http(m, "GetStore", get, token=TOKENS["u"])
                self.assertEqual((status, answer["code"]), (403, "PERMISSION_DENIED"), answer)

            # ExportStore at every member: the owner's bytes.
            exported = self.export(owner, store)
            for m in MEMBERS:
                self.assertEqual(self.export(m, store), exported, (m, owner))

            # DeleteStore relayed from another member: gone at the owner.
            other = [m for m in MEMBERS if m != owner][0]
            status, answer = self.http(other, "DeleteStore",
                                       pb.DeleteStoreRequest(tenant=TENANT, store=store))
            self.assertEqual(status, 200, answer)
            self.assertEqual(self.http(owner, "GetStore", get)[0], 404)
        self.assertGreater(len(owners), 1, "the stores landed on one member")

    def test_b_list_stores_gathers_every_members_page(self):
        names = ["l%d" % i for i in range(6)]
        for i, store in enumerate(names):
            self.create(MEMBERS[i % len(MEMBERS)], store)
        owners = {self.owner_of(store) for store in names}
        self.assertGreater(len(owners), 1, "the stores landed on one member")
        listing = pb.ListStoresRequest(tenant=TENANT)
        by_grpc = json_format.MessageToDict(self.grpc("a", "ListStores", listing),
                                            preserving_proto_field_name=True)
        for m in MEMBERS:
            status, answer = self.http(m, "ListStores", listing)
            self.assertEqual(status, 200, answer)
            self.assertEqual(answer, by_grpc, m)
            self.assertTrue(set(names) <= {s["store"] for s in answer["stores"]}, answer)
        # Pages: two at a time, resumed at another member each time, list every store once.
        seen, token, turn = [], "", 0
        while True:
            page = pb.ListStoresRequest(tenant=TENANT, page_size=2, page_token=token)
            status, answer = self.http(MEMBERS[turn % len(MEMBERS)], "ListStores", page)
            self.assertEqual(status, 200, answer)
            seen += [s["store"] for s in answer.get("stores", [])]
            token, turn = answer.get("next_page_token", ""), turn + 1
            if not token:
                break
        self.assertEqual(seen, sorted(s["store"] for s in by_grpc["stores"]))

    def test_c_streamed_calls_land_at_the_owner(self):
        owners = set()
        for i in range(3):
            relayed, direct = "w%d" % i, "w%d-direct" % i
            self.create(MEMBERS[i % len(MEMBERS)], relayed)
            self.create(MEMBERS[i % len(MEMBERS)], direct)
            owner, direct_owner = self.owner_of(relayed), self.owner_of(direct)
            owners.add(owner)
            other = next(m for m in MEMBERS if m != owner)

            # Adapt and Forget at a non-owner answer as the same calls made at the owner of a
            # twin store, and leave the store with the twin's predictions.
            for method, kind, first in (("Adapt", pb.AdaptRequest, 0),
                                        ("Forget", pb.ForgetRequest, 2)):
                count = 5 if method == "Adapt" else 1
                got = self.write(other, method, self.writes(kind, relayed, first, count))
                want = self.write(direct_owner, method, self.writes(kind, direct, first, count))
                self.assertEqual(got[0], 200, got)
                self.assertEqual(got, want, (method, other, owner))
            for store in (relayed, direct):
                self.grpc(self.owner_of(store), "Compile",
                          pb.CompileRequest(tenant=TENANT, store=store))
            self.assertEqual(self.predictions(owner, relayed),
                             self.predictions(direct_owner, direct))

            # A bad example (two values where the store takes three) at a non-owner: the
            # owner's own refusal, and the store unchanged.
            before = self.http(owner, "GetStore", pb.GetStoreRequest(tenant=TENANT, store=relayed))
            bad = self.writes(pb.AdaptRequest, relayed, 100, 2)
            bad[1].examples[1].input.vector.values.pop()
            refused = self.write(other, "Adapt", bad)
            self.assertEqual(refused[0], 400, refused)
            self.assertEqual(refused, self.write(owner, "Adapt", bad))
            self.assertEqual(
                self.http(owner, "GetStore", pb.GetStoreRequest(tenant=TENANT, store=relayed)),
                before)

            # ExportStore at a non-owner: the owner's bytes; imported at a non-owner under a new
            # name another member owns: there, predicting as the source, exported alike at
            # every member.
            exported = self.export(owner, relayed)
            self.assertEqual(self.export(other, relayed), exported)
            copy = next(n for n in ("w%d-copy%d" % (i, k) for k in range(64))
                        if self.owner_of_name(n) != other)
            chunks = undelimited(exported, pb.StoreChunk)
            chunks[0].tenant, chunks[0].store = TENANT, copy
            status, answer, _ = self.post(other, "/v1/ImportStore", delimited(chunks))
            self.assertEqual(status, 200, answer)
            self.assertEqual(json.loads(answer)["store"], copy)
            copy_owner = self.owner_of(copy)
            self.assertNotEqual(copy_owner, other)
            self.assertEqual(self.predictions(copy_owner, copy).predictions,
                             self.predictions(owner, relayed).predictions)
            copied = self.export(copy_owner, copy)
            for m in MEMBERS:
                self.assertEqual(self.export(m, copy), copied, (m, copy_owner))

            # The Open Inference Protocol's infer and metadata at a non-owner: the owner's.
            infer = {"inputs": [{"name": "INPUT", "datatype": "FP32", "shape": [2, 3],
                                 "data": [1.0, 0.0, 0.0, 0.0, 0.2, 0.9]}],
                     "outputs": [{"name": "labels", "parameters": {"classification": 2}},
                                 {"name": "scores"}]}
            path = "/v2/models/%s/%s" % (TENANT, relayed)
            for verb, route, body in (("POST", "/infer", infer), ("GET", "", None)):
                at_owner = call(self.http_port[owner], verb, path + route, body,
                                token=TOKENS[TENANT])[:2]
                self.assertEqual(at_owner[0], 200, at_owner)
                for m in MEMBERS:
                    answer = call(self.http_port[m], verb, path + route, body,
                                  token=TOKENS[TENANT])[:2]
                    self.assertEqual(answer, at_owner, (m, route))
            for m in MEMBERS:
                self.assertEqual(self.ready(m, path + "/ready"), 200, m)
        self.assertGreater(len(owners), 1, "the stores landed on one member")

    def test_d_a_relayed_write_cut_short_commits_nothing(self):
        store = next(s for s in ("x%d" % i for i in range(64)) if self._created_not_on_a(s))
        owner = self.owner_of(store)
        get = pb.GetStoreRequest(tenant=TENANT, store=store)
        before = self.http(owner, "GetStore", get)
        # Past the front end's 64 KiB read, so the stream to the owner is open and carrying
        # messages when the call is cut.
        lines = [json.dumps(json_format.MessageToDict(r, preserving_proto_field_name=True))
                 + "\n" for r in self.writes(pb.AdaptRequest, store, 0, 1)[:1]]
        one = self.writes(pb.AdaptRequest, store, 1, 1)[1]
        lines += [json.dumps(json_format.MessageToDict(one, preserving_proto_field_name=True))
                  + "\n"] * 1500
        body = "".join(lines).encode()
        self.assertGreater(len(body), 96 << 10)

        def chunk(data):
            return b"%x\r\n%s\r\n" % (len(data), data)

        head = ("POST /v1/Adapt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                "Authorization: Bearer %s\r\n" % TOKENS[TENANT])
        # A refusal here (a line that does not parse) after messages went to the owner: the
        # refusal answers, and the owner commits none of them.
        status, answer, _ = self.post("a", "/v1/Adapt", body + b"{not json\n")
        self.assertEqual(status, 400, answer)
        self.assertIn(b"message 1502 (line 1502)", answer)
        self.assertEqual(self.http(owner, "GetStore", get), before)
        # The deadline passes while the body is still coming: the owner's call ends
        # DEADLINE_EXCEEDED, which answers, and nothing is committed.
        with socket.create_connection(("127.0.0.1", self.http_port["a"]),
                                      timeout=BOUND_S) as s:
            s.sendall((head + "Adaptd-Timeout-Ms: 1000\r\n\r\n").encode() +
                      chunk(body[:80 << 10]))
            time.sleep(1.5)
            s.sendall(chunk(body[80 << 10:]) + b"0\r\n\r\n")
            answer = b""
            while not answer.rstrip().endswith(b"}"):
                got = s.recv(4096)
                if not got:
                    break
                answer += got
        self.assertTrue(answer.startswith(b"HTTP/1.1 504"), answer)
        self.assertIn(b"DEADLINE_EXCEEDED", answer)
        self.assertEqual(self.http(owner, "GetStore", get), before)
        # The connection goes mid-body: the stream to the owner is cancelled, nothing
        # committed.
        with socket.create_connection(("127.0.0.1", self.http_port["a"]),
                                      timeout=BOUND_S) as s:
            s.sendall((head + "\r\n").encode() + chunk(body[:80 << 10]))
            time.sleep(0.5)
        time.sleep(0.5)
        self.assertEqual(self.http(owner, "GetStore", get), before)
        # The whole body afterwards commits once.
        status, answer, _ = self.post("a", "/v1/Adapt", body)
        self.assertEqual((status, json.loads(answer)["accepted"]), (200, "1501"), answer)
        self.assertEqual(self.http(owner, "GetStore", get)[1]["examples"], "1501")
        # A missing store's export at a non-owner: the owner's 404.
        missing = json.dumps({"tenant": TENANT, "store": store + "-none"}).encode()
        at_owner = self.post(owner, "/v1/ExportStore", missing)[:2]
        self.assertEqual(at_owner[0], 404, at_owner)
        self.assertEqual(self.post("a", "/v1/ExportStore", missing)[:2], at_owner)

    def _created_not_on_a(self, store):
        self.create("a", store)
        return self.owner_of(store) != "a"

    def owner_of_name(self, store):
        """The member that would own `store`, not yet created: the only one that serves a
        forwarded GetStore of it (NOT_FOUND; the others refuse it, UNAVAILABLE)."""
        owners = []
        for m in MEMBERS:
            with self.assertRaises(grpc.RpcError) as raised:
                self.grpc(m, "GetStore", pb.GetStoreRequest(tenant=TENANT, store=store),
                          metadata=(("adaptd-forwarded", "test"),))
            if raised.exception.code() == grpc.StatusCode.NOT_FOUND:
                owners.append(m)
        self.assertEqual(len(owners), 1, store)
        return owners[0]

    def ready(self, member, path):
        """GET `path` (a model's readiness, an empty body) at `member`: the status."""
        connection = http.client.HTTPConnection("127.0.0.1", self.http_port[member],
                                                timeout=BOUND_S)
        try:
            connection.request("GET", path,
                               headers={"Authorization": "Bearer " + TOKENS[TENANT]})
            response = connection.getresponse()
            response.read()
            return response.status
        finally:
            connection.close()

    def test_z_a_member_down_is_failed_over(self):
        store = next(s for s in ("d%d" % i for i in range(64)) if self._created_on_c(s))
        status, answer = self.write("a", "Adapt", self.writes(pb.AdaptRequest, store, 0, 2))
        self.assertEqual(status, 200, answer)
        self.servers["c"].kill()
        self.servers["c"].wait()
        # Within the lease and the settle time the others take c's shards: the store answers
        # through HTTP at a, with the example acknowledged before the kill.
        deadline = time.monotonic() + 3 * BOUND_S
        while True:
            status, answer = self.http("a", "GetStore", pb.GetStoreRequest(tenant=TENANT,
                                                                            store=store))
            if status == 200:
                break
            self.assertEqual((status, answer["code"]), (503, "UNAVAILABLE"), answer)
            self.assertLess(time.monotonic(), deadline, answer)
            time.sleep(0.2)
        self.assertEqual(int(answer.get("examples", 0)), 6, answer)
        status, answer = self.http("a", "ListStores", pb.ListStoresRequest(tenant=TENANT))
        self.assertEqual(status, 200, answer)
        self.assertIn(store, [s["store"] for s in answer["stores"]])

    def _created_on_c(self, store):
        self.create("a", store)
        return self.owner_of(store) == "c"


if __name__ == "__main__":
    unittest.main()
