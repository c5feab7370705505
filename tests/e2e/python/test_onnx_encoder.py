#!/usr/bin/python3
"""End-to-end test of the onnx encoder (docs/ONNX.md) through the real adaptd.

adaptd starts with a config naming an onnx encoder over the small model
server/encoders/testdata/onnx/linear.onnx and ONNX Runtime's library named by
ADAPTD_ONNXRUNTIME_LIBRARY; a faast store on the encoder adapts and predicts as a store on the
identity encoder fed the keys the Python onnxruntime computed (reference.json); a vector of the
wrong width is INVALID_ARGUMENT naming the example; and a start without the runtime stops with
one line saying how to get it.

Run by ctest with ADAPTD_BIN, ADAPTD_ONNXRUNTIME_LIBRARY, ADAPTD_ONNX_TESTDATA and PYTHONPATH set.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import unittest  # noqa: E402

from adaptd_client import AdaptdError, Client  # noqa: E402
from adaptd_process import AdaptdProcess, run_tests  # noqa: E402

TENANT = "acme"
DATA = os.environ.get("ADAPTD_ONNX_TESTDATA", "")
LIBRARY = os.environ.get("ADAPTD_ONNXRUNTIME_LIBRARY", "")
MANUAL = dict(auto_compile_every=0, auto_compile_delay_ms=0)
SERVER = None
TMP = tempfile.mkdtemp(prefix="adaptd-onnx-e2e-")


def write_config():
    path = os.path.join(TMP, "config.json")
    with open(path, "w") as f:
        json.dump({"encoders": [
            {"name": "identity", "type": "identity"},
            {"name": "proj", "type": "onnx", "input": "vector",
             "modelPath": os.path.join(DATA, "linear.onnx"), "maxBatch": 2}]}, f)
    return path


def launcher(library):
    """An executable that runs adaptd with the config and the runtime named by `library`
    (AdaptdProcess adds the listen address and data directory)."""
    path = os.path.join(TMP, "adaptd-onnx-%d.sh" % len(os.listdir(TMP)))
    with open(path, "w") as f:
        f.write('#!/bin/sh\nADAPTD_ONNXRUNTIME_LIBRARY="%s" exec "%s" --config "%s" "$@"\n' %
                (library, os.environ["ADAPTD_BIN"], write_config()))
    os.chmod(path, stat.S_IRWXU)
    return path


def setUpModule():
    global SERVER
    if not os.path.exists(LIBRARY):
        raise RuntimeError("ONNX Runtime's library not found at ADAPTD_ONNXRUNTIME_LIBRARY=%r "
                           "(bash .ci/dev build fetches it)" % LIBRARY)
    SERVER = AdaptdProcess(binary=launcher(LIBRARY))
    SERVER.start()


def tearDownModule():
    if SERVER is not None:
        SERVER.stop()
    shutil.rmtree(TMP, ignore_errors=True)


class OnnxEncoderEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = Client(SERVER.address, timeout=30.0)
        with open(os.path.join(DATA, "reference.json")) as f:
            run = json.load(f)["linear.onnx"]["runs"][1]
        cls.inputs = [run["input"]["values"][4 * r:4 * r + 4] for r in range(5)]
        cls.keys = [run["output"]["values"][3 * r:3 * r + 3] for r in range(5)]
        cls.labels = ["a", "b", "a", "c", "b"]

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def test_lists_the_encoder_with_the_models_dimension(self):
        (proj,) = [e for e in self.client.encoders() if e["name"] == "proj"]
        self.assertEqual(proj["type"], "onnx")
        self.assertEqual(proj["input_kind"], "vector")
        self.assertEqual(proj["dim"], 3)
        self.assertTrue(proj["fingerprint"].startswith("onnx:"))

    def test_a_store_on_the_encoder_predicts_as_one_on_the_reference_keys(self):
        self.client.create_store(TENANT, "onnx", encoder="proj", ridge=0.1, **MANUAL)
        self.client.create_store(TENANT, "keys", encoder="identity", ridge=0.1, **MANUAL)
        self.assertEqual(self.client.adapt(TENANT, "onnx", self.inputs,
                                           labels=self.labels)["accepted"], 5)
        self.client.adapt(TENANT, "keys", self.keys, labels=self.labels)
        self.client.compile(TENANT, "onnx")
        self.client.compile(TENANT, "keys")
        served = self.client.predict(TENANT, "onnx", self.inputs, top_k=3)
        reference = self.client.predict(TENANT, "keys", self.keys, top_k=3)
        self.assertEqual(len(served), 5)
        for got, want in zip(served, reference):
            self.assertEqual([label for label, _ in got], [label for label, _ in want])
            for (_, a), (_, b) in zip(got, want):
                self.assertAlmostEqual(a, b, delta=1e-4)

        with self.assertRaises(AdaptdError) as caught:
            self.client.adapt(TENANT, "onnx", [self.inputs[1][:3]], labels=["b"])
        self.assertEqual(caught.exception.code_name, "INVALID_ARGUMENT")
        self.assertIn("examples[0].input.vector: 3 values; encoder 'proj' takes 4",
                      caught.exception.message)
        self.assertEqual(self.client.get_store(TENANT, "onnx")["examples"], 5)

    def test_a_start_without_the_runtime_stops_in_one_line(self):
        result = subprocess.run(
            [launcher("/nonexistent/libonnxruntime.so.1"), "--listen", "127.0.0.1:0",
             "--metrics-listen", "off", "--data-dir", os.path.join(TMP, "no-runtime")],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        self.assertNotEqual(result.returncode, 0)
        lines = [line for line in result.stderr.splitlines() if "onnx" in line]
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertIn("encoders[1] (onnx): ONNX Runtime's library "
                      "'/nonexistent/libonnxruntime.so.1' could not be opened", lines[0])
        self.assertIn("pip download onnxruntime", lines[0])


if __name__ == "__main__":
    run_tests(lambda: SERVER)
