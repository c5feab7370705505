#!/usr/bin/python3
"""End-to-end test of the onnx encoder's images (docs/ONNX.md, "Images") through the real adaptd.

adaptd starts with an onnx encoder over server/encoders/testdata/onnx/image.onnx taking images
(resize, centre crop, mean and std as in image_reference.json's first case); a faast store on it
adapts on PNG bytes from the Python client and predicts the same for the images sent as bytes,
as files (pathlib.Path) and as numpy arrays (sent as PNG by the client, losslessly); the keys
equal a store's on the identity encoder fed the reference keys (the Python onnxruntime on numpy's
preprocessing of Pillow's decode); an undecodable image is INVALID_ARGUMENT naming the example,
the store unchanged; an image to a vector encoder likewise; adaptctl predicts from a CSV column
of image paths.

Run by ctest with ADAPTD_BIN, ADAPTCTL_BIN, ADAPTD_ONNXRUNTIME_LIBRARY, ADAPTD_ONNX_TESTDATA and
PYTHONPATH set; Debian's /usr/bin/python3 with python3-pil (to read the PNGs into arrays).
"""

import csv
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import unittest  # noqa: E402

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from adaptd_client import AdaptdError, Client  # noqa: E402
from adaptd_client._images import encode_png  # noqa: E402
from adaptd_process import run_tests  # noqa: E402
from onnx_e2e import DATA, MANUAL, TENANT, launcher, start_server, stop_server  # noqa: E402

SERVER = None
TMP = tempfile.mkdtemp(prefix="adaptd-onnx-images-e2e-")


def reference():
    with open(os.path.join(DATA, "image_reference.json")) as f:
        return json.load(f)["cases"][0]


def write_config():
    config = os.path.join(TMP, "config.json")
    case = reference()
    with open(config, "w") as f:
        json.dump({"encoders": [
            {"name": "identity", "type": "identity"},
            {"name": "pics", "type": "onnx", "input": "image",
             "modelPath": os.path.join(DATA, case["model"]), "image": case["config"]}]}, f)
    return config


def setUpModule():
    global SERVER
    SERVER = start_server(launcher(os.path.join(TMP, "adaptd-onnx-images.sh"), write_config()))


def tearDownModule():
    stop_server(SERVER, TMP)


class OnnxImagesEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = Client(SERVER.address, timeout=30.0)
        case = reference()
        cls.files = [pathlib.Path(DATA).resolve() / name for name in case["images"]]
        cls.bytes = [p.read_bytes() for p in cls.files]
        cls.keys = case["output"]
        cls.labels = ["photo", "alpha", "gray"]
        cls.client.create_store(TENANT, "pics", encoder="pics", ridge=0.1, **MANUAL)
        cls.client.create_store(TENANT, "keys", encoder="identity", ridge=0.1, **MANUAL)
        cls.client.adapt(TENANT, "pics", cls.bytes, labels=cls.labels)
        cls.client.adapt(TENANT, "keys", cls.keys, labels=cls.labels)
        cls.client.compile(TENANT, "pics")
        cls.client.compile(TENANT, "keys")

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def test_lists_the_encoder_as_taking_images(self):
        (pics,) = [e for e in self.client.encoders() if e["name"] == "pics"]
        self.assertEqual(pics["input_kind"], "image")
        self.assertEqual(pics["dim"], 6)

    def test_bytes_paths_and_arrays_predict_as_the_reference_keys(self):
        reference = self.client.predict(TENANT, "keys", self.keys, top_k=3)
        arrays = [np.asarray(Image.open(p)) for p in self.files]
        self.assertEqual([a.ndim for a in arrays], [3, 3, 2])  # RGB, RGBA, grayscale
        for inputs in (self.bytes, self.files, arrays):
            served = self.client.predict(TENANT, "pics", inputs, top_k=3)
            self.assertEqual([p[0][0] for p in served], self.labels)
            for got, want in zip(served, reference):
                self.assertEqual([label for label, _ in got], [label for label, _ in want])
                for (_, a), (_, b) in zip(got, want):
                    self.assertAlmostEqual(a, b, delta=1e-4)

    def test_arrays_are_sent_losslessly(self):
        rng = np.random.default_rng(5)
        for shape in ((7, 5), (7, 5, 1), (7, 5, 3), (7, 5, 4)):
            array = rng.integers(0, 256, size=shape).astype(np.uint8)
            decoded = np.asarray(Image.open(__import__("io").BytesIO(encode_png(array))))
            self.assertTrue(np.array_equal(decoded.reshape(array.shape), array), shape)
        with self.assertRaises(ValueError) as caught:
            encode_png(np.zeros((4, 4, 3), np.float32))
        self.assertIn("give uint8 values", str(caught.exception))

    def test_an_undecodable_image_is_refused_naming_the_example(self):
        before = self.client.get_store(TENANT, "pics")["examples"]
        with self.assertRaises(AdaptdError) as caught:
            self.client.adapt(TENANT, "pics", [self.bytes[0], self.bytes[1][:100]],
                              labels=["photo", "alpha"])
        self.assertEqual(caught.exception.code_name, "INVALID_ARGUMENT")
        self.assertIn("examples[1].input.image: PNG: ", caught.exception.message)
        self.assertEqual(self.client.get_store(TENANT, "pics")["examples"], before)
        with self.assertRaises(AdaptdError) as caught:
            self.client.predict(TENANT, "keys", self.bytes[:1])
        self.assertEqual(caught.exception.code_name, "INVALID_ARGUMENT")
        self.assertIn("inputs[0]: encoder 'identity' takes a vector, got an image",
                      caught.exception.message)

    def test_adaptctl_predicts_from_a_column_of_image_paths(self):
        table = os.path.join(TMP, "images.csv")
        with open(table, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["id", "image"])
            # The first image by a path relative to the table's folder, the rest absolute.
            shutil.copy(self.files[0], os.path.join(TMP, self.files[0].name))
            writer.writerow(["0", self.files[0].name])
            for i, path in enumerate(self.files[1:], start=1):
                writer.writerow([str(i), str(path)])
        out = os.path.join(TMP, "predicted.csv")
        result = subprocess.run(
            [os.environ["ADAPTCTL_BIN"], "--addr", SERVER.address, "--timeout", "60", "predict",
             "%s/pics" % TENANT, "--input", table, "--output", out],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        with open(out, newline="") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual([r["label"] for r in rows], self.labels)


if __name__ == "__main__":
    run_tests(lambda: SERVER)
