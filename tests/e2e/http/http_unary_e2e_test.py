"""The HTTP/JSON front end of the real adaptd binary (docs/HTTP.md), beside gRPC.

Every public unary call over `POST /v1/<Method>` answers what the same call answers over gRPC
(the JSON parsed back into the response message is equal to gRPC's message; an error has the
same code and message, with its HTTP status). Bad inputs (malformed JSON, wrong types, unknown
fields, an unknown method or path, a missing, wrong or other tenant's token, an oversized body,
a malformed or expired deadline) answer their HTTP status with a JSON body naming the problem,
and leave the stores as they were. The server runs with tokens configured, so every call
carries one, over both transports.

Environment: ADAPTD_BIN (the server), PYTHONPATH with adaptd_client's generated stubs.
"""

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import unittest

import grpc
from google.protobuf import json_format

from adaptd_client._stubs import pb, pb_grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_e2e import BOUND_S, call, free_port, raw_call, wait_ready  # noqa: E402

MAX_MESSAGE_BYTES = 1 << 20
TOKENS = {"acme": "acme-secret-4c1e", "other": "other-secret-9b2a"}
ADMIN_TOKEN = "ops-secret-77d0"
TENANT = "acme"


class HttpUnaryTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="adaptd-http-")
        config = {"tokens": [{"name": name, "sha256": hashlib.sha256(t.encode()).hexdigest(),
                              "tenants": [name]} for name, t in TOKENS.items()]}
        config["tokens"].append({"name": "ops", "admin": True,
                                 "sha256": hashlib.sha256(ADMIN_TOKEN.encode()).hexdigest()})
        config_path = os.path.join(cls.tmp.name, "config.json")
        with open(config_path, "w") as f:
            json.dump(config, f)
        cls.grpc_address = "127.0.0.1:%d" % free_port()
        cls.http_port = free_port()
        cls.log = open(os.path.join(cls.tmp.name, "adaptd.log"), "w+b")
        cls.server = subprocess.Popen(
            [os.environ["ADAPTD_BIN"], "--config", config_path, "--listen", cls.grpc_address,
             "--http-listen", "127.0.0.1:%d" % cls.http_port, "--metrics-listen", "off",
             "--max-message-bytes", str(MAX_MESSAGE_BYTES),
             "--data-dir", os.path.join(cls.tmp.name, "data")],
            stdin=subprocess.DEVNULL, stdout=cls.log, stderr=subprocess.STDOUT)
        cls.channel = grpc.insecure_channel(cls.grpc_address)
        cls.stub = pb_grpc.AdaptationStub(cls.channel)
        cls.metadata = (("authorization", "Bearer " + TOKENS[TENANT]),)
        wait_ready(cls.http_port, cls.server, cls.log)
        grpc.channel_ready_future(cls.channel).result(timeout=BOUND_S)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.server.terminate()
        try:
            cls.server.wait(timeout=BOUND_S)
        finally:
            if cls.server.poll() is None:
                cls.server.kill()
        cls.log.close()
        cls.tmp.cleanup()

    # --- the two transports --------------------------------------------------------------

    @classmethod
    def http(cls, verb, path, body=None, auth=TOKENS[TENANT], headers=None):
        """One HTTP call with the tenant's token: (status, the parsed JSON body, headers)."""
        return call(cls.http_port, verb, path, body, auth, headers)

    def grpc_call(self, method, request, token=TOKENS[TENANT]):
        """(the response, None) or (None, the RpcError)."""
        try:
            return getattr(self.stub, method)(
                request, metadata=(("authorization", "Bearer " + token),),
                timeout=BOUND_S), None
        except grpc.RpcError as error:
            return None, error

    def both(self, method, request, http_request=None, token=TOKENS[TENANT]):
        """The same call over gRPC and over HTTP: (grpc response, grpc error, status, json)."""
        response, error = self.grpc_call(method, request, token)
        body = json_format.MessageToDict(http_request or request,
                                         preserving_proto_field_name=True)
        status, answer, _ = self.http("POST", "/v1/" + method, body, auth=token)
        return response, error, status, answer

    def assert_same(self, method, request, http_request=None, scrub=None):
        response, error, status, answer = self.both(method, request, http_request)
        self.assertIsNone(error, "%s over gRPC: %s" % (method, error))
        self.assertEqual(status, 200, "%s over HTTP: %s" % (method, answer))
        parsed = json_format.ParseDict(answer, type(response)())
        if scrub is not None:
            scrub(response)
            scrub(parsed)
        self.assertEqual(parsed, response, method)
        return answer

    def assert_same_error(self, method, request, http_status, http_request=None,
                          token=TOKENS[TENANT]):
        response, error, status, answer = self.both(method, request, http_request, token)
        self.assertIsNone(response, method)
        self.assertEqual(status, http_status, answer)
        self.assertEqual(answer["code"], error.code().name, answer)
        self.assertEqual(answer["message"], error.details(), answer)
        return answer

    # --- fixtures --------------------------------------------------------------------------

    def create(self, store, dim=3):
        request = pb.CreateStoreRequest(tenant=TENANT, store=store)
        request.spec.kind = pb.STORE_KIND_FAAST
        request.spec.dim = dim
        return request

    def adapt(self, store, n=12):
        def messages():
            request = pb.AdaptRequest(tenant=TENANT, store=store)
            for i in range(n):
                example = request.examples.add()
                example.input.vector.values.extend([float(i % 3 == k) + 0.01 * i
                                                    for k in range(3)])
                example.label = "abc"[i % 3]
            yield request
        self.stub.Adapt(messages(), metadata=self.metadata, timeout=BOUND_S)

    def predict_request(self, store):
        request = pb.PredictRequest(tenant=TENANT, store=store, top_k=2)
        for v in ([1.0, 0.0, 0.0], [0.0, 0.2, 0.9]):
            request.inputs.add().vector.values.extend(v)
        return request

    def state(self):
        """Every store of the tenant, as gRPC describes them."""
        listing, error = self.grpc_call("ListStores", pb.ListStoresRequest(tenant=TENANT))
        self.assertIsNone(error)
        return listing

    # --- tests -----------------------------------------------------------------------------

    def test_every_unary_call_answers_as_over_grpc(self):
        # CreateStore: one store made over each transport, the answers equal but for the name.
        made_by_grpc, error = self.grpc_call("CreateStore", self.create("eq-grpc"))
        self.assertIsNone(error)
        status, made_by_http, _ = self.http(
            "POST", "/v1/CreateStore",
            json_format.MessageToDict(self.create("eq-http"), preserving_proto_field_name=True))
        self.assertEqual(status, 200, made_by_http)
        self.assertIsInstance(made_by_http["memory_bytes"], str)  # 64-bit integers as strings
        parsed = json_format.ParseDict(made_by_http, pb.StoreInfo())
        parsed.store = "eq-grpc"
        self.assertEqual(parsed, made_by_grpc)

        for store in ("eq-grpc", "eq-http"):
            self.adapt(store)
        self.assert_same("GetStore", pb.GetStoreRequest(tenant=TENANT, store="eq-grpc"))
        self.assert_same("ListStores", pb.ListStoresRequest(tenant=TENANT))
        self.assert_same("ListEncoders", pb.ListEncodersRequest())
        self.assert_same("Ping", pb.PingRequest())

        # Compile: each store once, over one transport each; the times left out.
        def scrub(response):
            response.faast.compile_seconds = 0
        self.assert_same("Compile", pb.CompileRequest(tenant=TENANT, store="eq-grpc"),
                         pb.CompileRequest(tenant=TENANT, store="eq-http"), scrub)
        self.assert_same("Predict", self.predict_request("eq-grpc"))
        answer = self.assert_same("Predict", self.predict_request("eq-grpc"),
                                  self.predict_request("eq-http"))
        self.assertEqual(len(answer["predictions"]), 2)
        self.assert_same("PinStore", pb.PinStoreRequest(tenant=TENANT, store="eq-grpc",
                                                        pinned=True))
        self.assert_same("DeleteStore", pb.DeleteStoreRequest(tenant=TENANT, store="eq-grpc"),
                         pb.DeleteStoreRequest(tenant=TENANT, store="eq-http"))
        self.assertFalse({"eq-grpc", "eq-http"} & {s.store for s in self.state().stores})

        # The service's own refusals: the same code and message, with the mapped status.
        self.assert_same_error("GetStore", pb.GetStoreRequest(tenant=TENANT, store="none"), 404)
        self.assert_same_error("CreateStore", self.create("bad-dim", dim=100000), 400)
        # The cluster's admin calls: a tenant's token is not an admin's.
        self.assert_same_error("ClusterStatus", pb.ClusterStatusRequest(), 403)
        self.assert_same_error("DrainMember", pb.DrainMemberRequest(member="m"), 403)
        # An admin's: this server is not a member of a cluster.
        answer = self.assert_same_error("ClusterStatus", pb.ClusterStatusRequest(), 400,
                                        token=ADMIN_TOKEN)
        self.assertEqual(answer["code"], "FAILED_PRECONDITION")

    def test_feedback_over_http_learns_as_over_grpc(self):
        # Two stores with a feedback window, each served one predict and told the truth of it:
        # one over gRPC, one over HTTP. The answers and the stores they leave are the same.
        ids = {}
        for store in ("fb-grpc", "fb-http"):
            request = self.create(store)
            request.spec.feedback.count = 16
            self.assertIsNone(self.grpc_call("CreateStore", request)[1])
            self.adapt(store)
            self.assertIsNone(self.grpc_call(
                "Compile", pb.CompileRequest(tenant=TENANT, store=store))[1])
            served, error = self.grpc_call("Predict", self.predict_request(store))
            self.assertIsNone(error)
            ids[store] = [p.prediction_id for p in served.predictions]
            self.assertTrue(all(ids[store]), served)

        def feedback(store):
            request = pb.FeedbackRequest(tenant=TENANT, store=store)
            for prediction_id, label in zip(ids[store], ("a", "c")):
                request.items.add(prediction_id=prediction_id, label=label)
            return request
        answer = self.assert_same("Feedback", feedback("fb-grpc"), feedback("fb-http"))
        self.assertEqual(answer["accepted"], "2")
        got = {s.store: s for s in self.state().stores if s.store.startswith("fb-")}
        self.assertEqual(got["fb-grpc"].examples, got["fb-http"].examples)
        self.assertEqual(got["fb-grpc"].version, got["fb-http"].version)
        # A malformed id, and another store's id: the same refusals, the second naming the
        # window.
        malformed = pb.FeedbackRequest(tenant=TENANT, store="fb-http")
        malformed.items.add(prediction_id="no-such-id", label="a")
        refused = self.assert_same_error("Feedback", malformed, 400)
        self.assertIn("items[0].prediction_id", refused["message"])
        unknown = pb.FeedbackRequest(tenant=TENANT, store="fb-http")
        unknown.items.add(prediction_id=ids["fb-grpc"][0], label="a")
        refused = self.assert_same_error("Feedback", unknown, 404)
        self.assertIn("window", refused["message"])

    def test_conflict_and_tokens_match_grpc(self):
        self.assertIsNone(self.grpc_call("CreateStore", self.create("dup"))[1])
        self.assert_same_error("CreateStore", self.create("dup"), 409)
        before = self.state()
        body = {"tenant": TENANT, "store": "dup"}
        status, answer, _ = self.http("POST", "/v1/GetStore", body, auth=None)
        self.assertEqual((status, answer["code"]), (401, "UNAUTHENTICATED"), answer)
        self.assertIn("authorization", answer["message"])
        status, answer, _ = self.http("POST", "/v1/DeleteStore", body, auth="not-a-token")
        self.assertEqual((status, answer["code"]), (401, "UNAUTHENTICATED"), answer)
        status, answer, _ = self.http("POST", "/v1/DeleteStore", body, auth=TOKENS["other"])
        self.assertEqual((status, answer["code"]), (403, "PERMISSION_DENIED"), answer)
        self.assertEqual(self.state(), before)

    def test_bad_inputs_name_the_problem_and_change_nothing(self):
        # No compile on its own: the store's version moves only when the test says so, so
        # `before` holds whenever the checks below run.
        kept = self.create("kept")
        kept.spec.faast.auto_compile_delay_ms = 0
        self.assertIsNone(self.grpc_call("CreateStore", kept)[1])
        self.adapt("kept")
        before = self.state()
        oversized = json.dumps({"tenant": TENANT, "store": "kept",
                                "inputs": [{"vector": {"values": [0.5] * 300000}}]})
        self.assertGreater(len(oversized), MAX_MESSAGE_BYTES)
        cases = [
            # (what, path, body, headers, HTTP status, code, words the message names)
            ("malformed JSON", "/v1/CreateStore", '{"tenant": "acme", "store": ', {}, 400,
             "INVALID_ARGUMENT", ["request body", "CreateStoreRequest"]),
            ("a wrong type", "/v1/CreateStore",
             {"tenant": TENANT, "store": "new", "spec": {"kind": "STORE_KIND_FAAST",
                                                         "dim": "three"}},
             {}, 400, "INVALID_ARGUMENT", ["dim"]),
            ("an unknown field", "/v1/DeleteStore", {"tenant": TENANT, "stor": "kept"}, {}, 400,
             "INVALID_ARGUMENT", ["stor"]),
            ("an invalid spec", "/v1/CreateStore",
             {"tenant": TENANT, "store": "new", "spec": {"kind": "STORE_KIND_FAAST",
                                                         "dim": 100000}},
             {}, 400, "INVALID_ARGUMENT", ["dim"]),
            ("an unknown method", "/v1/DropEverything", {}, {}, 404, "NOT_FOUND",
             ["DropEverything"]),
            ("a members' own call", "/v1/ClusterQuota", {}, {}, 404, "NOT_FOUND",
             ["ClusterQuota"]),
            ("an unknown path", "/v2/models", {}, {}, 404, "NOT_FOUND", ["/v2/models"]),
            ("a streaming call", "/v1/PredictStream", {"tenant": TENANT, "store": "kept"}, {},
             501, "UNIMPLEMENTED", ["PredictStream", "gRPC"]),
            ("an oversized body", "/v1/Predict", oversized, {}, 413, "RESOURCE_EXHAUSTED",
             [str(MAX_MESSAGE_BYTES), "--max-message-bytes"]),
            ("a malformed deadline", "/v1/DeleteStore", {"tenant": TENANT, "store": "kept"},
             {"Adaptd-Timeout-Ms": "soon"}, 400, "INVALID_ARGUMENT", ["Adaptd-Timeout-Ms"]),
            ("an expired deadline", "/v1/DeleteStore", {"tenant": TENANT, "store": "kept"},
             {"Adaptd-Timeout-Ms": "0"}, 504, "DEADLINE_EXCEEDED", []),
        ]
        for what, path, body, headers, http_status, code, words in cases:
            with self.subTest(what):
                status, answer, _ = self.http("POST", path, body, headers=headers)
                self.assertEqual(status, http_status, answer)
                self.assertEqual(answer["code"], code, answer)
                for word in words:
                    self.assertIn(word, answer["message"])
                self.assertEqual(self.state(), before)
        status, answer, headers = self.http("GET", "/v1/GetStore")
        self.assertEqual((status, headers.get("Allow")), (405, "POST"), answer)

    def test_an_http_address_in_use_fails_start_up(self):
        address = "127.0.0.1:%d" % self.http_port
        second = subprocess.run(
            [os.environ["ADAPTD_BIN"], "--listen", "127.0.0.1:0", "--http-listen", address,
             "--metrics-listen", "off", "--data-dir", os.path.join(self.tmp.name, "second")],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=BOUND_S)
        self.assertNotEqual(second.returncode, 0)
        self.assertIn("cannot serve HTTP on " + address, second.stderr)

    def test_malformed_http_is_answered_in_json(self):
        # A request line that parses, with headers that do not; a request line that does not
        # parse is answered by civetweb's plain-text page (it has no version to answer in).
        for raw in (b"POST /v1/Ping HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n",
                    b"POST /v1/Ping HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n"):
            with self.subTest(raw):
                head, body = raw_call(self.http_port, raw)
                self.assertRegex(head.split(b"\r\n")[0], rb"^HTTP/1\.[01] 4[0-9][0-9] ")
                self.assertIn(b"Content-Type: application/json", head)
                self.assertEqual(json.loads(body)["code"], "INVALID_ARGUMENT", body)

    def test_probes(self):
        for path in ("/healthz", "/readyz"):
            status, answer, _ = self.http("GET", path, auth=None)
            self.assertEqual((status, answer["status"]), (200, "SERVING"))


if __name__ == "__main__":
    unittest.main()
