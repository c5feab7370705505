"""TLS and mutual TLS on the HTTP listener (docs/HTTP.md, "TLS"): the real adaptd binary with
the gRPC listener's certificate files, called with curl.

With --tls-cert and --tls-key the HTTP port speaks HTTPS only: curl trusting the test CA gets
its answers, curl trusting another CA refuses the server, and plain HTTP to the port gets no
answer. With --tls-client-ca too (mutual TLS), a client certificate the CA signed is required,
as gRPC requires it: curl with one is served (a store created, its export downloaded equal to
the export over gRPC with the same certificate), and curl without one, with a certificate of
another CA, or in plain HTTP is refused in the handshake, before any HTTP answer.

Environment: ADAPTD_BIN, MAKE_CERTS (tests/security/make_certs.sh), PYTHONPATH with
adaptd_client's generated stubs.
"""

import json
import os
import ssl
import subprocess
import sys
import tempfile
import unittest

import grpc

from adaptd_client._stubs import pb, pb_grpc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_e2e import (BOUND_S, free_port, start_adaptd, stop, token_config,  # noqa: E402
                      undelimited, wait_ready)

TOKENS = {"acme": "acme-secret-4c1e"}
TENANT = "acme"


class HttpTlsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="adaptd-http-tls-")
        cls.certs = os.path.join(cls.tmp.name, "certs")
        subprocess.run([os.environ["MAKE_CERTS"], cls.certs], check=True)
        cls.logs, cls.servers, cls.ports = [], {}, {}
        for mode in ("tls", "mtls"):
            args = ["--tls-cert", cls.cert("server.pem"), "--tls-key", cls.cert("server.key")]
            if mode == "mtls":
                args += ["--tls-client-ca", cls.cert("ca.pem")]
            cls.start(mode, args)

    @classmethod
    def start(cls, mode, tls_args):
        log = open(os.path.join(cls.tmp.name, mode + ".log"), "w+b")
        cls.logs.append(log)
        http_port, grpc_port = free_port(), free_port()
        server = start_adaptd(
            ["--config", token_config(cls.tmp.name, TOKENS),
             "--listen", "127.0.0.1:%d" % grpc_port,
             "--http-listen", "127.0.0.1:%d" % http_port,
             "--data-dir", os.path.join(cls.tmp.name, mode)] + tls_args, log)
        cls.servers[mode] = server
        cls.ports[mode] = (http_port, grpc_port)
        context = ssl.create_default_context(cafile=cls.cert("ca.pem"))
        if mode == "mtls":
            context.load_cert_chain(cls.cert("client.pem"), cls.cert("client.key"))
        wait_ready(http_port, server, log, tls=context)

    @classmethod
    def tearDownClass(cls):
        for server in cls.servers.values():
            stop(server)
        for log in cls.logs:
            log.close()
        cls.tmp.cleanup()

    @classmethod
    def cert(cls, name):
        return os.path.join(cls.certs, name)

    def curl(self, mode, path, body, ca="ca.pem", client=None, scheme="https"):
        """curl POSTing `body` (JSON) to the server of `mode`: (exit code, HTTP status or 0,
        the body, stderr). `client` is the name of a certificate in the test directory
        (with its .key), presented to the server."""
        argv = ["curl", "--silent", "--show-error", "--max-time", str(int(BOUND_S)),
                "--output", "-", "--write-out", "\n%{http_code}",
                "--header", "Authorization: Bearer " + TOKENS[TENANT],
                "--data-binary", json.dumps(body), "--cacert", self.cert(ca)]
        if client is not None:
            argv += ["--cert", self.cert(client + ".pem"), "--key", self.cert(client + ".key")]
        argv.append("%s://127.0.0.1:%d%s" % (scheme, self.ports[mode][0], path))
        done = subprocess.run(argv, capture_output=True, timeout=BOUND_S * 2)
        out, _, code = done.stdout.rpartition(b"\n")
        return done.returncode, int(code or 0), out, done.stderr.decode(errors="replace")

    def assert_refused(self, result, why):
        returncode, status, _, stderr = result
        self.assertNotEqual(returncode, 0, why)
        self.assertEqual(status, 0, why)  # no HTTP answer at all
        return stderr

    def test_tls_serves_https_only(self):
        returncode, status, body, stderr = self.curl("tls", "/v1/Ping", {})
        self.assertEqual((returncode, status), (0, 200), stderr)
        self.assertEqual(json.loads(body), {})
        # Without a client CA no client certificate is asked for; one presented is not needed.
        returncode, status, _, stderr = self.curl("tls", "/v1/Ping", {}, client="client")
        self.assertEqual((returncode, status), (0, 200), stderr)
        stderr = self.assert_refused(self.curl("tls", "/v1/Ping", {}, ca="rogue.pem"),
                                     "a server certificate another CA signed")
        self.assertIn("certificate", stderr)
        self.assert_refused(self.curl("tls", "/v1/Ping", {}, scheme="http"),
                            "plain HTTP to the TLS port")

    def test_mutual_tls_requires_a_client_certificate_of_the_ca(self):
        spec = {"tenant": TENANT, "store": "s", "spec": {"kind": "STORE_KIND_FAAST", "dim": 3}}
        returncode, status, body, stderr = self.curl("mtls", "/v1/CreateStore", spec,
                                                     client="client")
        self.assertEqual((returncode, status), (0, 200), stderr + body.decode())
        self.assertEqual(json.loads(body)["store"], "s")
        # A download over TLS: the chunked export arrives whole.
        returncode, status, body, stderr = self.curl(
            "mtls", "/v1/ExportStore", {"tenant": TENANT, "store": "s"}, client="client")
        self.assertEqual((returncode, status), (0, 200), stderr)
        self.assertEqual(undelimited(body, pb.StoreChunk), self.grpc_export("s"))

        self.assert_refused(self.curl("mtls", "/v1/Ping", {}),
                            "no client certificate")
        self.assert_refused(self.curl("mtls", "/v1/Ping", {}, client="rogue"),
                            "a client certificate another CA signed")
        self.assert_refused(self.curl("mtls", "/v1/Ping", {}, client="client", scheme="http"),
                            "plain HTTP to the mutual-TLS port")
        # The store is there, and unchanged by the refused calls.
        returncode, status, body, stderr = self.curl(
            "mtls", "/v1/GetStore", {"tenant": TENANT, "store": "s"}, client="client")
        self.assertEqual((returncode, status), (0, 200), stderr)


    def grpc_export(self, store):
        """ExportStore over gRPC with the client certificate, on the mutual-TLS server."""
        with open(self.cert("ca.pem"), "rb") as ca, open(self.cert("client.pem"), "rb") as c, \
                open(self.cert("client.key"), "rb") as k:
            credentials = grpc.ssl_channel_credentials(ca.read(), k.read(), c.read())
        with grpc.secure_channel("127.0.0.1:%d" % self.ports["mtls"][1], credentials) as channel:
            return list(pb_grpc.AdaptationStub(channel).ExportStore(
                pb.ExportStoreRequest(tenant=TENANT, store=store),
                metadata=(("authorization", "Bearer " + TOKENS[TENANT]),), timeout=BOUND_S))


if __name__ == "__main__":
    unittest.main()
