#!/usr/bin/python3
"""End-to-end test of the onnx encoder (docs/ONNX.md) through the real adaptd.

adaptd starts with a config naming an onnx encoder over the small model
server/encoders/testdata/onnx/linear.onnx and ONNX Runtime's library named by
ADAPTD_ONNXRUNTIME_LIBRARY; a faast store on the encoder adapts and predicts as a store on the
identity encoder fed the keys the Python onnxruntime computed (reference.json); a vector of the
wrong width is INVALID_ARGUMENT naming the example; and a start without the runtime stops with
one line saying how to get it. A text encoder over text/text.onnx (WordPiece from the vocab.txt
beside it) lists its tensors and max_tokens, and a store on it predicts as one on the identity
encoder fed the Python runtime's pooled rows; --onnxruntime-library names the library over the
environment's.

Run by ctest with ADAPTD_BIN, ADAPTD_ONNXRUNTIME_LIBRARY, ADAPTD_ONNX_TESTDATA and PYTHONPATH set.
"""

import json
import os
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import unittest  # noqa: E402

from adaptd_client import AdaptdError, Client  # noqa: E402
from adaptd_process import AdaptdProcess, free_port, run_tests  # noqa: E402
from onnx_e2e import DATA, LIBRARY, MANUAL, TENANT, start_server, stop_server  # noqa: E402
import onnx_e2e  # noqa: E402

SERVER = None
TMP = tempfile.mkdtemp(prefix="adaptd-onnx-e2e-")


def write_config():
    path = os.path.join(TMP, "config.json")
    with open(path, "w") as f:
        json.dump({"encoders": [
            {"name": "identity", "type": "identity"},
            {"name": "proj", "type": "onnx", "input": "vector",
             "modelPath": os.path.join(DATA, "linear.onnx"), "maxBatch": 2},
            {"name": "words", "type": "onnx", "input": "text",
             "modelPath": os.path.join(DATA, "text", "text.onnx"), "outputTensor": "hidden",
             "maxTokens": 6, "maxBatch": 4}]}, f)
    return path


def launcher(library, flag=None):
    """An executable that runs adaptd with the config and the runtime named by `library` in the
    environment, and by `flag` with --onnxruntime-library when given (AdaptdProcess adds the
    listen address and data directory)."""
    path = os.path.join(TMP, "adaptd-onnx-%d.sh" % len(os.listdir(TMP)))
    extra = ' --onnxruntime-library "%s"' % flag if flag else ""
    return onnx_e2e.launcher(path, write_config(), library, extra)


def predicts_alike(test, client, served, reference, labels, top_k):
    """A faast store on the encoder (served: store, encoder, inputs) and one on the identity
    encoder fed the reference keys (reference: store, keys) adapt on `labels` and predict
    alike: the same labels in order, scores within 1e-4."""
    (store, encoder, inputs), (ref_store, keys) = served, reference
    client.create_store(TENANT, store, encoder=encoder, ridge=0.1, **MANUAL)
    client.create_store(TENANT, ref_store, encoder="identity", ridge=0.1, **MANUAL)
    test.assertEqual(client.adapt(TENANT, store, inputs, labels=labels)["accepted"], len(labels))
    client.adapt(TENANT, ref_store, keys, labels=labels)
    client.compile(TENANT, store)
    client.compile(TENANT, ref_store)
    got_all = client.predict(TENANT, store, inputs, top_k=top_k)
    want_all = client.predict(TENANT, ref_store, keys, top_k=top_k)
    test.assertEqual(len(got_all), len(labels))
    for got, want in zip(got_all, want_all):
        test.assertEqual([label for label, _ in got], [label for label, _ in want])
        for (_, a), (_, b) in zip(got, want):
            test.assertAlmostEqual(a, b, delta=1e-4)


def setUpModule():
    global SERVER
    SERVER = start_server(launcher(LIBRARY))


def tearDownModule():
    stop_server(SERVER, TMP)


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
        predicts_alike(self, self.client, ("onnx", "proj", self.inputs),
                       ("keys", self.keys), self.labels, top_k=3)

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

    def test_the_flag_names_the_library_over_the_environment(self):
        server = AdaptdProcess(binary=launcher("/nonexistent/libonnxruntime.so.1", flag=LIBRARY))
        server.start()
        try:
            with Client(server.address, timeout=30.0) as client:
                names = [e["name"] for e in client.encoders()]
            self.assertIn("words", names)
        finally:
            server.stop()


class OnnxTextEncoderEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = Client(SERVER.address, timeout=30.0)
        with open(os.path.join(DATA, "reference.json")) as f:
            cls.runs = json.load(f)["text/text.onnx"]["runs"]
        cls.texts = [run["text"] for run in cls.runs]
        cls.keys = [run["mean"] for run in cls.runs]
        cls.labels = ["x", "y", "y", "x", "x", "y"]

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def test_lists_the_models_tensors_and_max_tokens(self):
        (words,) = [e for e in self.client.encoders() if e["name"] == "words"]
        self.assertEqual(words["input_kind"], "text")
        self.assertEqual(words["dim"], 4)
        self.assertEqual(words["max_tokens"], 6)
        self.assertEqual([t["name"] for t in words["input_tensors"]],
                         ["input_ids", "attention_mask", "token_type_ids"])
        self.assertEqual({t["element_type"] for t in words["input_tensors"]}, {"int64"})
        self.assertEqual(words["output_tensors"][0]["name"], "hidden")
        self.assertEqual([int(d) for d in words["output_tensors"][0]["shape"]], [-1, -1, 4])
        (proj,) = [e for e in self.client.encoders() if e["name"] == "proj"]
        self.assertEqual(proj["input_tensors"][0]["name"], "features")

    def test_texts_cut_to_max_tokens_are_counted_in_prometheus_and_the_responses(self):
        """adaptd_encoder_truncated_texts_total{encoder="words"}: 0 from the start, then the
        texts cut to maxTokens (6: [CLS], 4 words, [SEP]); none for the vector encoder. Adapt's
        and Predict's truncated_texts count the call's own texts cut."""
        port = free_port()
        server = AdaptdProcess(binary=launcher(LIBRARY), metrics_listen="127.0.0.1:%d" % port)
        server.start()

        def series():
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
                lines = r.read().decode().splitlines()
            return {line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1]) for line in lines
                    if line.startswith("adaptd_encoder_truncated_texts_total")}
        try:
            self.assertEqual(series(), {'adaptd_encoder_truncated_texts_total{encoder="words"}': 0})
            with Client(server.address, timeout=30.0) as client:
                client.create_store(TENANT, "cut", encoder="words", ridge=0.1, **MANUAL)
                long_texts = ["the cat sat on the mat a dog ran", "cat", "the dogs ran on the mat"]
                adapted = client.adapt(TENANT, "cut", long_texts, labels=["x", "y", "x"])
                self.assertEqual(adapted["truncated_texts"], 2)
                self.assertEqual(series(),
                                 {'adaptd_encoder_truncated_texts_total{encoder="words"}': 2})
                adapted = client.adapt(TENANT, "cut", ["a dog", "cat"], labels=["x", "y"])
                self.assertEqual(adapted["truncated_texts"], 0)
                client.compile(TENANT, "cut")
                self.assertEqual(client.predict_raw(TENANT, "cut", long_texts).truncated_texts, 2)
                self.assertEqual(client.predict_raw(TENANT, "cut", ["a dog"]).truncated_texts, 0)
            self.assertEqual(series(), {'adaptd_encoder_truncated_texts_total{encoder="words"}': 4})
        finally:
            server.stop()

    def test_a_text_store_predicts_as_one_on_the_pooled_rows(self):
        predicts_alike(self, self.client, ("words", "words", self.texts),
                       ("rows", self.keys), self.labels, top_k=2)
        with self.assertRaises(AdaptdError) as caught:
            self.client.adapt(TENANT, "words", [[1.0, 2.0, 3.0, 4.0]], labels=["x"])
        self.assertEqual(caught.exception.code_name, "INVALID_ARGUMENT")
        self.assertEqual(self.client.get_store(TENANT, "words")["examples"], 6)


if __name__ == "__main__":
    run_tests(lambda: SERVER)
