"""ExportStore and ImportStore over HTTP (docs/HTTP.md, "ExportStore and ImportStore"): the
real adaptd binary.

`POST /v1/ExportStore` answers a chunked application/octet-stream body of length-delimited
StoreChunk messages (a varint length, then the message) equal, chunk for chunk, to the messages
the gRPC call streams. Those bytes, the first chunk naming the target, uploaded to
`POST /v1/ImportStore` in small pieces give a store equal to the one gRPC's ImportStore gives
from the same chunks (the same answer, statistics and predictions), whose own export is again
equal over both transports. Bad uploads (truncated inside a message or its length, bytes that
are not StoreChunk messages, a chunk past --max-message-bytes, a snapshot that is not one, a
later chunk naming another store, a chunk naming another tenant, no token, a store that exists)
answer their status with a JSON body naming the problem, and import nothing. Bad exports (no such store, malformed JSON, GET) answer as a unary call
does.

Environment: ADAPTD_BIN (the server), PYTHONPATH with adaptd_client's generated stubs.
"""

import http.client
import os
import sys
import tempfile
import unittest

import grpc
from google.protobuf import json_format

from adaptd_client._stubs import pb, pb_grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_e2e import (BOUND_S, call, delimited, free_port, start_adaptd, stop,  # noqa: E402
                      token_config, undelimited, varint, wait_ready)

# The export's chunks are at most half of it: 8 KiB, so a store of DIM 64 spans several.
MAX_MESSAGE_BYTES = 16 << 10
TOKENS = {"acme": "acme-secret-4c1e", "other": "other-secret-9b2a"}
TENANT = "acme"
DIM = 64


def renamed(chunks, store, tenant=TENANT):
    """The chunks with the first one naming tenant/store, as an import sends them."""
    out = [pb.StoreChunk() for _ in chunks]
    for chunk, copy in zip(chunks, out):
        copy.CopyFrom(chunk)
    out[0].tenant, out[0].store = tenant, store
    return out


class HttpStoreTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="adaptd-http-store-")
        cls.http_port = free_port()
        cls.log = open(os.path.join(cls.tmp.name, "adaptd.log"), "w+b")
        grpc_address = "127.0.0.1:%d" % free_port()
        cls.server = start_adaptd(
            ["--config", token_config(cls.tmp.name, TOKENS), "--listen", grpc_address,
             "--http-listen", "127.0.0.1:%d" % cls.http_port,
             "--max-message-bytes", str(MAX_MESSAGE_BYTES),
             "--data-dir", os.path.join(cls.tmp.name, "data")], cls.log)
        wait_ready(cls.http_port, cls.server, cls.log)
        cls.channel = grpc.insecure_channel(grpc_address)
        cls.stub = pb_grpc.AdaptationStub(cls.channel)
        cls.metadata = (("authorization", "Bearer " + TOKENS[TENANT]),)
        grpc.channel_ready_future(cls.channel).result(timeout=BOUND_S)
        cls.make_source("src")

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        stop(cls.server)
        cls.log.close()
        cls.tmp.cleanup()

    @classmethod
    def make_source(cls, store):
        request = pb.CreateStoreRequest(tenant=TENANT, store=store)
        request.spec.kind = pb.STORE_KIND_FAAST
        request.spec.dim = DIM
        cls.stub.CreateStore(request, metadata=cls.metadata, timeout=BOUND_S)
        adapts = [pb.AdaptRequest(tenant=TENANT, store=store)]
        for i in range(200):
            if len(adapts[-1].examples) == 20:  # a message within --max-message-bytes
                adapts.append(pb.AdaptRequest())
            example = adapts[-1].examples.add(label="label-%d" % (i % 5))
            example.input.vector.values.extend(
                [((i * 7 + k * 13) % 17) / 17.0 + (k % 5 == i % 5) for k in range(DIM)])
        cls.stub.Adapt(iter(adapts), metadata=cls.metadata, timeout=BOUND_S)
        cls.stub.Compile(pb.CompileRequest(tenant=TENANT, store=store), metadata=cls.metadata,
                         timeout=BOUND_S)

    # --- the two transports --------------------------------------------------------------

    def grpc_export(self, store):
        return list(self.stub.ExportStore(pb.ExportStoreRequest(tenant=TENANT, store=store),
                                          metadata=self.metadata, timeout=BOUND_S))

    def http_export(self, store):
        """(status, headers, the body's bytes) of POST /v1/ExportStore."""
        connection = http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=BOUND_S)
        try:
            connection.request("POST", "/v1/ExportStore",
                               body='{"tenant": "%s", "store": "%s"}' % (TENANT, store),
                               headers={"Authorization": "Bearer " + TOKENS[TENANT]})
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def upload(self, body, token=TOKENS[TENANT], piece=None):
        """POST /v1/ImportStore with `body`: whole, or chunked in pieces of `piece` bytes.
        (status, the parsed JSON answer, headers)."""
        headers = {"Authorization": "Bearer " + token} if token else {}
        if piece is not None:
            body = [body[i:i + piece] for i in range(0, len(body), piece)]
        return call(self.http_port, "POST", "/v1/ImportStore", body, headers=headers,
                    chunked=piece is not None)

    def info(self, store):
        """GetStore's answer, its name, compile time and memory (which a first predict grows)
        left out; None when it does not exist."""
        try:
            info = self.stub.GetStore(pb.GetStoreRequest(tenant=TENANT, store=store),
                                      metadata=self.metadata, timeout=BOUND_S)
        except grpc.RpcError as error:
            self.assertEqual(error.code(), grpc.StatusCode.NOT_FOUND, error)
            return None
        info.store = ""
        info.faast.compile_seconds = 0
        info.memory_bytes = 0
        return info

    def predict(self, store):
        request = pb.PredictRequest(tenant=TENANT, store=store, top_k=3)
        for i in range(4):
            request.inputs.add().vector.values.extend(
                [(k % 5 == i) + 0.1 * (k % 3) for k in range(DIM)])
        return self.stub.Predict(request, metadata=self.metadata, timeout=BOUND_S)

    # --- the tests -------------------------------------------------------------------------

    def test_an_export_equals_grpcs_and_imports_back(self):
        status, headers, body = self.http_export("src")
        self.assertEqual(status, 200, body[:200])
        self.assertEqual(headers.get("Content-Type"), "application/octet-stream")
        self.assertEqual(headers.get("Transfer-Encoding"), "chunked")
        chunks = self.grpc_export("src")
        self.assertGreaterEqual(len(chunks), 2)  # the export's chunking is exercised
        self.assertEqual(undelimited(body, pb.StoreChunk), chunks)
        self.assertEqual(body, delimited(chunks))

        imported_grpc = self.stub.ImportStore(iter(renamed(chunks, "via-grpc")),
                                              metadata=self.metadata, timeout=BOUND_S)
        status, answer, _ = self.upload(delimited(renamed(chunks, "via-http")), piece=1000)
        self.assertEqual(status, 200, answer)
        imported_http = json_format.ParseDict(answer, pb.StoreInfo())
        self.assertEqual(imported_http.store, "via-http")
        imported_http.store = imported_grpc.store
        self.assertEqual(imported_http, imported_grpc)
        source = self.info("src")
        for store in ("via-http", "via-grpc"):
            with self.subTest(store):
                self.assertEqual(self.info(store), source)
                self.assertEqual(self.predict(store), self.predict("src"))
        status, _, body = self.http_export("via-http")
        self.assertEqual(status, 200)
        self.assertEqual(undelimited(body, pb.StoreChunk), self.grpc_export("via-http"))
        self.assertEqual(undelimited(body, pb.StoreChunk), self.grpc_export("via-grpc"))

        # The upload sent whole (a Content-Length body) imports too.
        status, answer, _ = self.upload(delimited(renamed(chunks, "whole")))
        self.assertEqual(status, 200, answer)
        self.assertEqual(self.info("whole"), source)

    def test_bad_uploads_import_nothing(self):
        chunks = renamed(self.grpc_export("src"), "bad")
        good = delimited(chunks)
        first = len(varint(chunks[0].ByteSize())) + chunks[0].ByteSize()
        garbage = varint(6) + b"\x0f\x0f\x0f\x0f\x0f\x0f"  # a field of wire type 7: none is
        oversized = delimited(chunks[:1]) + varint(MAX_MESSAGE_BYTES + 1) + b"x" * 64
        not_a_snapshot = delimited([pb.StoreChunk(tenant=TENANT, store="bad",
                                                  data=b"not a snapshot file")])
        other = delimited(renamed(chunks, "bad", tenant="other"))
        two_stores = renamed(chunks, "bad")
        two_stores[1].store = "elsewhere"
        cases = [
            # (what, body, token, HTTP status, code, words the message names)
            ("truncated inside a message", good[:first + 100], TOKENS[TENANT], 400,
             "INVALID_ARGUMENT", ["message 2", "truncated"]),
            ("truncated inside a length", good[:first + 1], TOKENS[TENANT], 400,
             "INVALID_ARGUMENT", ["message 2", "truncated"]),
            ("not StoreChunk messages", garbage, TOKENS[TENANT], 400, "INVALID_ARGUMENT",
             ["message 1", "StoreChunk"]),
            ("JSON instead", b'{"tenant": "acme", "store": "bad", "data": "eA=="}',
             TOKENS[TENANT], 400, "INVALID_ARGUMENT", ["message 1", "StoreChunk"]),
            ("a chunk past the message limit", oversized, TOKENS[TENANT], 413,
             "RESOURCE_EXHAUSTED", ["message 2", str(MAX_MESSAGE_BYTES),
                                    "--max-message-bytes"]),
            ("not a snapshot", not_a_snapshot, TOKENS[TENANT], 400, "INVALID_ARGUMENT", []),
            ("a later chunk naming another store", delimited(two_stores), TOKENS[TENANT], 400,
             "INVALID_ARGUMENT", ["same store"]),
            ("another tenant's chunk", other, TOKENS[TENANT], 403, "PERMISSION_DENIED",
             ["other"]),
            ("no token", good, None, 401, "UNAUTHENTICATED", []),
        ]
        for what, body, token, http_status, code, words in cases:
            for piece in (None, 777):
                with self.subTest(what, piece=piece):
                    status, answer, _ = self.upload(body, token=token, piece=piece)
                    self.assertEqual(status, http_status, answer)
                    self.assertEqual(answer["code"], code, answer)
                    for word in words:
                        self.assertIn(word, answer["message"])
                    self.assertIsNone(self.info("bad"))
        # A store that exists is kept as it was.
        before = self.info("src")
        status, answer, _ = self.upload(delimited(renamed(chunks, "src")), piece=4096)
        self.assertEqual((status, answer["code"]), (409, "ALREADY_EXISTS"), answer)
        self.assertEqual(self.info("src"), before)
        # The server still imports after every refusal.
        status, answer, _ = self.upload(good, piece=4096)
        self.assertEqual(status, 200, answer)
        self.assertEqual(self.info("bad"), self.info("src"))

    def test_bad_exports_answer_as_unary_calls(self):
        cases = [
            ("no such store", '{"tenant": "acme", "store": "nowhere"}', 404, "NOT_FOUND",
             ["nowhere"]),
            ("malformed JSON", '{"tenant": ', 400, "INVALID_ARGUMENT",
             ["ExportStoreRequest"]),
            ("an unknown field", '{"tenant": "acme", "stor": "src"}', 400, "INVALID_ARGUMENT",
             ["stor"]),
        ]
        for what, body, http_status, code, words in cases:
            with self.subTest(what):
                status, answer, headers = call(self.http_port, "POST", "/v1/ExportStore", body,
                                               TOKENS[TENANT])
                self.assertEqual(status, http_status, answer)
                self.assertEqual(headers.get("Content-Type"), "application/json")
                self.assertEqual(answer["code"], code, answer)
                for word in words:
                    self.assertIn(word, answer["message"])
        status, answer, _ = call(self.http_port, "POST", "/v1/ExportStore",
                                 '{"tenant": "acme", "store": "src"}', TOKENS["other"])
        self.assertEqual((status, answer["code"]), (403, "PERMISSION_DENIED"), answer)
        status, answer, headers = call(self.http_port, "GET", "/v1/ExportStore")
        self.assertEqual((status, headers.get("Allow")), (405, "POST"), answer)


if __name__ == "__main__":
    unittest.main()
