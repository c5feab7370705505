"""Clients against a real adaptd with tokens and mutual TLS: the Python client's token and
certificate options, adaptctl's --token / ADAPTD_TOKEN / --tls-ca / --tls-cert / --tls-key,
`adaptctl hash-token`, and start-up failures on bad certificate files.

Environment: ADAPTD_BIN, ADAPTCTL_BIN, MAKE_CERTS (tests/security/make_certs.sh), PYTHONPATH
with adaptd_client and its generated stubs.
"""

import hashlib
import json
import os
import socket
import subprocess
import tempfile
import unittest

from adaptd_client import AdaptdError, Client

BOUND_S = 30.0
TOKENS = {"acme": "acme-secret-8d1f", "other": "other-secret-2b7c"}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ClientSecurityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="adaptd-client-sec-")
        cls.certs = os.path.join(cls.tmp.name, "certs")
        subprocess.run([os.environ["MAKE_CERTS"], cls.certs], check=True)
        config = {"tokens": [{"name": t, "sha256": hashlib.sha256(v.encode()).hexdigest(),
                              "tenants": [t]} for t, v in TOKENS.items()]}
        cls.config = os.path.join(cls.tmp.name, "config.json")
        with open(cls.config, "w") as f:
            json.dump(config, f)
        cls.address = "127.0.0.1:%d" % free_port()
        cls.log = open(os.path.join(cls.tmp.name, "adaptd.log"), "w+b")
        cls.server = subprocess.Popen(
            [os.environ["ADAPTD_BIN"], "--config", cls.config, "--listen", cls.address,
             "--metrics-listen", "off", "--data-dir", os.path.join(cls.tmp.name, "data"),
             "--tls-cert", cls.cert("server.pem"), "--tls-key", cls.cert("server.key"),
             "--tls-client-ca", cls.cert("ca.pem")],
            stdin=subprocess.DEVNULL, stdout=cls.log, stderr=subprocess.STDOUT)
        Client(cls.address, token=TOKENS["acme"], **cls.tls()).wait_ready(timeout=BOUND_S)

    @classmethod
    def tearDownClass(cls):
        cls.server.terminate()
        cls.server.wait(BOUND_S)
        cls.log.close()
        cls.tmp.cleanup()

    @classmethod
    def cert(cls, name):
        return os.path.join(cls.certs, name)

    @classmethod
    def tls(cls, client_cert=True):
        def read(name):
            with open(cls.cert(name), "rb") as f:
                return f.read()
        options = {"root_certificates": read("ca.pem")}
        if client_cert:
            options.update(certificate_chain=read("client.pem"), private_key=read("client.key"))
        return options

    def adaptctl(self, *args, env=None, stdin=None):
        return subprocess.run([os.environ["ADAPTCTL_BIN"], "--addr", self.address, *args],
                              capture_output=True, text=True, timeout=BOUND_S, input=stdin,
                              env={**os.environ, **(env or {})})

    def test_startup_line_says_auth_and_tls(self):
        self.log.flush()
        with open(self.log.name, "rb") as f:
            log = f.read().decode()
        self.assertIn("auth on (2 tokens), mutual TLS", log)
        for token in TOKENS.values():
            self.assertNotIn(token, log)

    def test_python_client_token_and_certificates(self):
        with Client(self.address, token=TOKENS["acme"], **self.tls()) as acme:
            acme.create_store("acme", "py", kind="faast", output="labels")
            self.assertEqual([s["store"] for s in acme.list_stores("acme")], ["py"])
            with self.assertRaises(AdaptdError) as denied:
                acme.list_stores("other")
            self.assertEqual(denied.exception.code_name, "PERMISSION_DENIED")
        with Client(self.address, **self.tls()) as anonymous:
            with self.assertRaises(AdaptdError) as missing:
                anonymous.list_stores("acme")
            self.assertEqual(missing.exception.code_name, "UNAUTHENTICATED")
        with Client(self.address, token=TOKENS["acme"], timeout=5,
                    **self.tls(client_cert=False)) as no_cert:
            with self.assertRaises(AdaptdError) as refused:
                no_cert.list_stores("acme")
            self.assertEqual(refused.exception.code_name, "UNAVAILABLE")

    def test_adaptctl_token_and_certificates(self):
        tls = ["--tls-ca", self.cert("ca.pem"), "--tls-cert", self.cert("client.pem"),
               "--tls-key", self.cert("client.key")]
        created = self.adaptctl(*tls, "--token", TOKENS["other"], "store", "create", "other/cli",
                                "--kind", "faast")
        self.assertEqual(created.returncode, 0, created.stderr)
        listed = self.adaptctl(*tls, "store", "list", "other",
                               env={"ADAPTD_TOKEN": TOKENS["other"]})
        self.assertEqual(listed.returncode, 0, listed.stderr)
        self.assertIn("cli", listed.stdout)
        denied = self.adaptctl(*tls, "--token", TOKENS["acme"], "store", "list", "other")
        self.assertNotEqual(denied.returncode, 0)
        self.assertIn("PERMISSION_DENIED", denied.stderr)
        self.assertNotIn(TOKENS["acme"], denied.stderr)
        missing = self.adaptctl(*tls, "store", "list", "other")
        self.assertIn("UNAUTHENTICATED", missing.stderr)
        no_cert = self.adaptctl("--tls-ca", self.cert("ca.pem"), "--timeout", "5",
                                "--token", TOKENS["other"], "store", "list", "other")
        self.assertNotEqual(no_cert.returncode, 0)
        plaintext = self.adaptctl("--timeout", "5", "--token", TOKENS["other"], "store", "list",
                                  "other")
        self.assertNotEqual(plaintext.returncode, 0)

    def test_hash_token(self):
        hashed = self.adaptctl("hash-token", stdin="acme-secret-8d1f\n")
        self.assertEqual(hashed.returncode, 0, hashed.stderr)
        self.assertEqual(json.loads(hashed.stdout)["sha256"],
                         hashlib.sha256(b"acme-secret-8d1f").hexdigest())
        generated = self.adaptctl("hash-token", "--generate")
        self.assertEqual(generated.returncode, 0, generated.stderr)
        pair = json.loads(generated.stdout)
        self.assertEqual(len(pair["token"]), 64)
        self.assertEqual(pair["sha256"], hashlib.sha256(pair["token"].encode()).hexdigest())

    def test_bad_certificate_path_fails_startup(self):
        missing = os.path.join(self.tmp.name, "nope.pem")
        result = subprocess.run(
            [os.environ["ADAPTD_BIN"], "--listen", "127.0.0.1:0", "--metrics-listen", "off",
             "--data-dir", os.path.join(self.tmp.name, "data2"), "--tls-cert", missing,
             "--tls-key", self.cert("server.key")],
            capture_output=True, text=True, timeout=BOUND_S)
        self.assertEqual(result.returncode, 1)
        self.assertIn("tls_cert_file " + missing + ": cannot be read", result.stderr)


if __name__ == "__main__":
    unittest.main()
