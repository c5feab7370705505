"""The adaptd process itself: --help, config file and flag precedence, the underscore flag
spelling, one-line failures (port in use, bad config), the metrics endpoint, server
reflection, and a clean exit on SIGTERM."""

import json
import os
import signal
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

import grpc

from adaptd_client import Client
from adaptd_process import AdaptdProcess, free_port, run_tests

BINARY = os.environ.get("ADAPTD_BIN", "")
_server = None


def run(args, timeout=15):
    return subprocess.run([BINARY] + args, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=timeout)


def wait_serving(address, process, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError("adaptd exited: " + process.stderr.read())
        with Client(address, timeout=1.0) as probe:
            try:
                if probe.health() == "SERVING":
                    return
            except Exception:
                pass
        time.sleep(0.1)
    raise AssertionError("adaptd did not serve on " + address)


class ProcessTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        global _server
        _server = AdaptdProcess()
        cls.address = _server.start()
        cls.tmp = tempfile.mkdtemp(prefix="adaptd-proc-")

    def test_help_lists_every_flag(self):
        result = run(["--help"])
        self.assertEqual(result.returncode, 0, result.stderr)
        for flag in ["--config", "--listen", "--metrics-listen", "--data-dir",
                     "--max-message-bytes", "--worker-threads", "--compile-threads",
                     "--max-dim"]:
            self.assertIn(flag, result.stdout)

    def assert_one_line_failure(self, result, needle):
        self.assertNotEqual(result.returncode, 0)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn(needle, lines[0])

    def test_port_in_use_fails_in_one_line(self):
        result = run(["--listen", self.address, "--metrics-listen", "off",
                      "--data-dir", os.path.join(self.tmp, "busy")])
        self.assert_one_line_failure(result, "cannot listen on " + self.address)

    def test_metrics_port_in_use_fails_in_one_line(self):
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen(1)
            port = taken.getsockname()[1]
            result = run(["--listen", "127.0.0.1:%d" % free_port(),
                          "--metrics-listen", "127.0.0.1:%d" % port,
                          "--data-dir", os.path.join(self.tmp, "busy-metrics")])
        self.assert_one_line_failure(result, "cannot serve metrics")

    def test_bad_config_fails_in_one_line(self):
        path = os.path.join(self.tmp, "bad.textproto")
        with open(path, "w") as f:
            f.write("listen: 12\n")
        self.assert_one_line_failure(run(["--config", path]), path)
        path = os.path.join(self.tmp, "bad.json")
        with open(path, "w") as f:
            json.dump({"listen": "no-port-here"}, f)
        self.assert_one_line_failure(run(["--config", path]), "listen:")
        self.assert_one_line_failure(run(["--config", os.path.join(self.tmp, "missing.json")]),
                                     "cannot be read")
        self.assert_one_line_failure(run(["--no-such-flag"]), "--no-such-flag")

    def test_flags_override_config_which_overrides_default(self):
        config_port, flag_port, metrics_port = free_port(), free_port(), free_port()
        data_dir = os.path.join(self.tmp, "from-config")
        path = os.path.join(self.tmp, "config.json")
        with open(path, "w") as f:
            json.dump({"listen": "127.0.0.1:%d" % config_port, "data_dir": data_dir,
                       "encoders": [{"name": "vec4", "type": "identity", "dim": 4}]}, f)
        address = "127.0.0.1:%d" % flag_port
        process = subprocess.Popen(
            [BINARY, "--config", path, "--listen", address,
             "--metrics_listen", "127.0.0.1:%d" % metrics_port],  # underscore spelling
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)
        try:
            wait_serving(address, process)
            self.assertTrue(os.path.isdir(data_dir))
            with Client(address) as client:
                names = [e["name"] for e in client.encoders()]
                self.assertEqual(names, ["vec4"])
                client.create_store("t", "s", kind="faast", encoder="vec4")
                self.assertEqual(client.get_store("t", "s")["spec"]["dim"], 4)
            body = urllib.request.urlopen(
                "http://127.0.0.1:%d/metrics" % metrics_port, timeout=10).read().decode()
            self.assertIn('adaptd_requests_total{code="OK",method="CreateStore",transport="grpc"} 1',
                          body)
            self.assertIn("adaptd_request_duration_seconds_bucket", body)
            self.assertIn('adaptd_stores{kind="faast",tier="hot"} 1', body)
            process.send_signal(signal.SIGTERM)
            self.assertEqual(process.wait(timeout=20), 0)
            self.assertIn("SIGTERM received", process.stderr.read())
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()

    def test_server_reflection_lists_the_services(self):
        # grpc.reflection.v1alpha.ServerReflectionRequest{list_services: "*"}, hand-encoded:
        # field 7, length-delimited.
        request = b"\x3a\x01*"
        with grpc.insecure_channel(self.address) as channel:
            call = channel.stream_stream(
                "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo")
            responses = list(call(iter([request]), timeout=10))
        self.assertEqual(len(responses), 1)
        self.assertIn(b"adapt.v1.Adaptation", responses[0])
        self.assertIn(b"grpc.health.v1.Health", responses[0])


if __name__ == "__main__":
    run_tests(lambda: _server)
