"""Adapt and Forget over HTTP (docs/HTTP.md, "Adapt and Forget"): the real adaptd binary.

The same examples adapted (and forgotten) over HTTP, as newline-delimited JSON sent in chunks
and as one JSON array, and over gRPC give stores with equal statistics and equal predictions,
and equal answers. Every bad input (a malformed line, an unknown field, a wrong type, an
invalid example, an oversized message, array or call, another tenant's or another store's
message mid-call) answers its status naming the problem, and leaves the store as it was: the
call is one transaction, nothing committed. A SIGKILL of adaptd during HTTP Adapt calls loses
nothing acknowledged: after a restart on the same data directory, each call that got 200 is in
the store (its resend reports every example a duplicate), and the call the kill interrupted is
in it entirely or not at all.

Environment: ADAPTD_BIN (the server), PYTHONPATH with adaptd_client's generated stubs.
"""

import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import grpc
from google.protobuf import json_format

from adaptd_client._stubs import pb, pb_grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_e2e import (BOUND_S, call, free_port, raw_call, stop, token_config,  # noqa: E402
                      wait_ready)

MAX_MESSAGE_BYTES = 64 << 10
MAX_CALL_BYTES = 128 << 10
TOKENS = {"acme": "acme-secret-4c1e", "other": "other-secret-9b2a"}
TENANT = "acme"
DIM = 3


def examples(first, n, prefix=""):
    """n labelled examples of dimension DIM, from number `first` on; ids when prefix is set."""
    out = []
    for i in range(first, first + n):
        example = pb.Example(label="abc"[i % 3])
        example.input.vector.values.extend([float(i % 3 == k) + 0.01 * i for k in range(DIM)])
        if prefix:
            example.id = "%s-%d" % (prefix, i)
        out.append(example)
    return out


def messages(kind, store, batches):
    """One request per batch of examples; the first names the store."""
    out = []
    for i, batch in enumerate(batches):
        request = kind(tenant=TENANT if i == 0 else "", store=store if i == 0 else "")
        request.examples.extend(batch)
        out.append(request)
    return out


def as_dict(message):
    return json_format.MessageToDict(message, preserving_proto_field_name=True)


def ndjson(requests):
    return "".join(json.dumps(as_dict(r)) + "\n" for r in requests).encode()


def send(port, path, body, token=TOKENS[TENANT], chunk=None):
    """POSTs `body` (bytes): whole, or chunked in pieces of `chunk` bytes (Transfer-Encoding:
    chunked, the pieces as they come). (status, the parsed JSON answer, headers)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND_S)
    headers = {"Authorization": "Bearer " + token} if token else {}
    try:
        if chunk is None:
            connection.request("POST", path, body=body, headers=headers)
        else:
            pieces = (body[i:i + chunk] for i in range(0, len(body), chunk))
            connection.request("POST", path, body=pieces, headers=headers, encode_chunked=True)
        response = connection.getresponse()
        return response.status, json.loads(response.read()), dict(response.getheaders())
    finally:
        connection.close()


def start_server(data_dir, grpc_address, http_port, log, config_path=None):
    argv = [os.environ["ADAPTD_BIN"], "--listen", grpc_address,
            "--http-listen", "127.0.0.1:%d" % http_port, "--metrics-listen", "off",
            "--max-message-bytes", str(MAX_MESSAGE_BYTES), "--max-call-bytes",
            str(MAX_CALL_BYTES), "--data-dir", data_dir]
    if config_path:
        argv += ["--config", config_path]
    server = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                              stderr=subprocess.STDOUT)
    wait_ready(http_port, server, log)
    return server


class HttpWriteTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="adaptd-http-write-")
        config_path = token_config(cls.tmp.name, TOKENS)
        cls.http_port = free_port()
        cls.log = open(os.path.join(cls.tmp.name, "adaptd.log"), "w+b")
        grpc_address = "127.0.0.1:%d" % free_port()
        cls.server = start_server(os.path.join(cls.tmp.name, "data"), grpc_address,
                                  cls.http_port, cls.log, config_path)
        cls.channel = grpc.insecure_channel(grpc_address)
        cls.stub = pb_grpc.AdaptationStub(cls.channel)
        cls.metadata = (("authorization", "Bearer " + TOKENS[TENANT]),)
        grpc.channel_ready_future(cls.channel).result(timeout=BOUND_S)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        stop(cls.server)
        cls.log.close()
        cls.tmp.cleanup()

    def create(self, store):
        request = pb.CreateStoreRequest(tenant=TENANT, store=store)
        request.spec.kind = pb.STORE_KIND_FAAST
        request.spec.dim = DIM
        self.stub.CreateStore(request, metadata=self.metadata, timeout=BOUND_S)

    def info(self, store):
        """The store as GetStore describes it, its name and compile time left out."""
        info = self.stub.GetStore(pb.GetStoreRequest(tenant=TENANT, store=store),
                                  metadata=self.metadata, timeout=BOUND_S)
        info.store = ""
        info.faast.compile_seconds = 0
        return info

    def predict(self, store):
        request = pb.PredictRequest(tenant=TENANT, store=store, top_k=3)
        for v in ([1.0, 0.0, 0.0], [0.0, 0.2, 0.9], [0.3, 0.6, 0.1]):
            request.inputs.add().vector.values.extend(v)
        return self.stub.Predict(request, metadata=self.metadata, timeout=BOUND_S)

    def compile(self, store):
        self.stub.Compile(pb.CompileRequest(tenant=TENANT, store=store),
                          metadata=self.metadata, timeout=BOUND_S)

    def http(self, method, requests, form, **kwargs):
        if form == "ndjson":
            return send(self.http_port, "/v1/" + method, ndjson(requests), chunk=7, **kwargs)
        body = json.dumps([as_dict(r) for r in requests]).encode()
        return send(self.http_port, "/v1/" + method, body, **kwargs)

    def test_http_and_grpc_writes_give_equal_stores(self):
        forms = ("grpc", "ndjson", "array")
        batches = [examples(0, 5), examples(5, 4), examples(9, 6)]
        forgotten = [examples(2, 3)]
        answers = {}
        for form in forms:
            store = "eq-" + form
            self.create(store)
            adapt = messages(pb.AdaptRequest, store, batches)
            forget = messages(pb.ForgetRequest, store, forgotten)
            if form == "grpc":
                answers[form] = [
                    self.stub.Adapt(iter(adapt), metadata=self.metadata, timeout=BOUND_S),
                    self.stub.Forget(iter(forget), metadata=self.metadata, timeout=BOUND_S)]
                continue
            answers[form] = []
            for method, requests, response in (("Adapt", adapt, pb.AdaptResponse()),
                                               ("Forget", forget, pb.ForgetResponse())):
                status, answer, _ = self.http(method, requests, form)
                self.assertEqual(status, 200, answer)
                answers[form].append(json_format.ParseDict(answer, response))
        self.assertEqual(answers["grpc"][0].accepted, 15)
        self.assertEqual(answers["grpc"][1].forgotten, 3)
        for form in forms:
            self.compile("eq-" + form)
            self.predict("eq-" + form)  # a first predict may grow the store's memory
        for form in ("ndjson", "array"):
            with self.subTest(form):
                self.assertEqual(answers[form], answers["grpc"])
                self.assertEqual(self.info("eq-" + form), self.info("eq-grpc"))
                self.assertEqual(self.predict("eq-" + form), self.predict("eq-grpc"))

    def test_bad_inputs_name_the_problem_and_commit_nothing(self):
        self.create("kept")
        self.stub.Adapt(iter(messages(pb.AdaptRequest, "kept", [examples(0, 9)])),
                        metadata=self.metadata, timeout=BOUND_S)
        self.compile("kept")
        self.predict("kept")  # a first predict may grow the store's memory
        before = (self.info("kept"), self.predict("kept"))
        good = json.dumps(as_dict(messages(pb.AdaptRequest, "kept", [examples(20, 3)])[0]))
        more = json.dumps(as_dict(messages(pb.AdaptRequest, "", [examples(30, 3)])[0]))
        wrong_dim = {"examples": [{"input": {"vector": {"values": [1.0, 2.0]}}, "label": "a"}]}
        huge = {"examples": [{"input": {"vector": {"values": [0.5] * 20000}}, "label": "a"}]}
        other_store = {"tenant": TENANT, "store": "kept-too", "examples": [as_dict(e) for e in
                                                                          examples(40, 2)]}
        other_tenant = {"tenant": "other", "store": "kept"}

        # A store change mid-call: refused over gRPC, so over HTTP too, with the same code.
        second = pb.AdaptRequest()
        json_format.ParseDict(other_store, second)
        with self.assertRaises(grpc.RpcError) as refused:
            self.stub.Adapt(iter([messages(pb.AdaptRequest, "kept", [examples(20, 3)])[0],
                                  second]), metadata=self.metadata, timeout=BOUND_S)
        self.assertEqual(refused.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        store_change = refused.exception.details()

        def lines(*items):
            return "\n".join(i if isinstance(i, str) else json.dumps(i) for i in items).encode()
        cases = [
            # (what, body, HTTP status, code, words the message names)
            ("a malformed line", lines(good, more, '{"examples": [', more), 400,
             "INVALID_ARGUMENT", ["message 3 (line 3)", "AdaptRequest"]),
            ("an unknown field", lines(good, {"exampels": []}), 400, "INVALID_ARGUMENT",
             ["message 2 (line 2)", "exampels"]),
            ("a wrong type", lines(good, {"examples": [{"input": {"vector": {"values": "x"}}}]}),
             400, "INVALID_ARGUMENT", ["message 2 (line 2)", "values"]),
            ("a message that is not an object", b"[" + good.encode() + b", 5]", 400,
             "INVALID_ARGUMENT", ["message 2", "AdaptRequest"]),
            ("a malformed array", b"[" + good.encode() + b", {", 400, "INVALID_ARGUMENT",
             ["not a JSON array"]),
            ("an invalid example", lines(good, wrong_dim), 400, "INVALID_ARGUMENT",
             ["message 2", "dim"]),
            ("an oversized message", lines(good, huge, more), 413, "RESOURCE_EXHAUSTED",
             ["message 2 (line 2)", str(MAX_MESSAGE_BYTES), "--max-message-bytes"]),
            ("an oversized array", json.dumps([json.loads(good), huge]).encode(), 413,
             "RESOURCE_EXHAUSTED", [str(MAX_MESSAGE_BYTES), "newline-delimited"]),
            ("an oversized call", lines(good, *[more] * (MAX_CALL_BYTES // len(more) + 1)),
             413, "RESOURCE_EXHAUSTED", [str(MAX_CALL_BYTES), "limit on one Adapt or Forget"]),
            ("another tenant's message", lines(good, other_tenant), 403, "PERMISSION_DENIED",
             []),
            ("another store's message", lines(good, other_store), 400, "INVALID_ARGUMENT",
             [store_change]),
        ]
        for what, body, http_status, code, words in cases:
            for chunk in (None, 5):
                with self.subTest(what, chunk=chunk):
                    status, answer, _ = send(self.http_port, "/v1/Adapt", body, chunk=chunk)
                    self.assertEqual(status, http_status, answer)
                    self.assertEqual(answer["code"], code, answer)
                    for word in words:
                        self.assertIn(word, answer["message"])
                    self.assertEqual((self.info("kept"), self.predict("kept")), before)
        # No token, another tenant's token: refused before a message is read.
        status, answer, _ = send(self.http_port, "/v1/Adapt", lines(good), token=None)
        self.assertEqual((status, answer["code"]), (401, "UNAUTHENTICATED"), answer)
        status, answer, _ = send(self.http_port, "/v1/Forget", lines(good),
                                 token=TOKENS["other"])
        self.assertEqual((status, answer["code"]), (403, "PERMISSION_DENIED"), answer)
        self.assertEqual((self.info("kept"), self.predict("kept")), before)

    def test_a_call_past_the_call_limit_is_413_unread(self):
        # A length past the call limit is refused before any of the body is sent.
        head, body = raw_call(
            self.http_port,
            b"POST /v1/Adapt HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
            TOKENS[TENANT].encode() + b"\r\nContent-Length: %d\r\n\r\n" % (2 << 30))
        self.assertRegex(head.split(b"\r\n")[0], rb"^HTTP/1\.[01] 413 ")
        self.assertIn(b"Connection: close", head)
        parsed = json.loads(body)
        self.assertEqual(parsed["code"], "RESOURCE_EXHAUSTED")
        self.assertIn("limit on one Adapt or Forget call", parsed["message"])

    def test_streaming_calls_still_unserved_answer_501(self):
        status, answer, _ = call(self.http_port, "POST", "/v1/PredictStream", {},
                                 TOKENS[TENANT])
        self.assertEqual((status, answer["code"]), (501, "UNIMPLEMENTED"), answer)
        status, answer, headers = call(self.http_port, "GET", "/v1/Adapt", None, TOKENS[TENANT])
        self.assertEqual((status, headers.get("Allow")), (405, "POST"), answer)


class HttpAdaptSigkillTest(unittest.TestCase):
    """HTTP Adapt calls from two clients until a SIGKILL; every acknowledged call survives."""

    def test_acknowledged_calls_survive_sigkill(self):
        with tempfile.TemporaryDirectory(prefix="adaptd-http-kill-") as tmp:
            data_dir = os.path.join(tmp, "data")
            log = open(os.path.join(tmp, "adaptd.log"), "w+b")
            grpc_address = "127.0.0.1:%d" % free_port()
            http_port = free_port()
            server = start_server(data_dir, grpc_address, http_port, log)
            try:
                status, answer, _ = call(http_port, "POST", "/v1/CreateStore", {
                    "tenant": TENANT, "store": "kill",
                    "spec": {"kind": "STORE_KIND_FAAST", "dim": DIM}})
                self.assertEqual(status, 200, answer)
                acked, unknown, lock = [], [], threading.Lock()

                def client(name):
                    for n in range(100000):
                        body = ndjson(messages(pb.AdaptRequest, "kill", [
                            examples(0, 4, "%s-%d-a" % (name, n)),
                            examples(4, 4, "%s-%d-b" % (name, n))]))
                        try:
                            status, answer, _ = send(http_port, "/v1/Adapt", body, token=None,
                                                     chunk=64)
                        except (OSError, http.client.HTTPException, ValueError):
                            with lock:
                                unknown.append(body)
                            return
                        with lock:
                            (acked if status == 200 else unknown).append(body)
                        if status != 200:
                            return
                clients = [threading.Thread(target=client, args=(c,)) for c in ("x", "y")]
                for thread in clients:
                    thread.start()
                deadline = time.monotonic() + BOUND_S
                while time.monotonic() < deadline:
                    with lock:
                        if len(acked) >= 20:
                            break
                    time.sleep(0.01)
                server.send_signal(signal.SIGKILL)
                server.wait()
                for thread in clients:
                    thread.join(BOUND_S)
                self.assertGreaterEqual(len(acked), 20)
                self.assertLessEqual(len(unknown), 2)

                server = start_server(data_dir, grpc_address, http_port, log)
                status, info, _ = call(http_port, "POST", "/v1/GetStore",
                                       {"tenant": TENANT, "store": "kill"})
                self.assertEqual(status, 200, info)
                held = int(info.get("examples", "0"))
                # Each acknowledged call is in the store: its resend is all duplicates.
                for body in acked:
                    status, answer, _ = send(http_port, "/v1/Adapt", body, token=None)
                    self.assertEqual(status, 200, answer)
                    self.assertEqual((answer["accepted"], answer.get("duplicates")),
                                     ("8", "8"), answer)
                # An interrupted call is in it entirely or not at all.
                applied = 0
                for body in unknown:
                    status, answer, _ = send(http_port, "/v1/Adapt", body, token=None)
                    self.assertEqual(status, 200, answer)
                    self.assertIn(answer.get("duplicates", "0"), ("0", "8"), answer)
                    applied += int(answer.get("duplicates", "0"))
                self.assertEqual(held, 8 * len(acked) + applied)
            finally:
                stop(server)
                log.close()


if __name__ == "__main__":
    unittest.main()
