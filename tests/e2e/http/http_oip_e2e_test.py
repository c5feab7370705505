"""The Open Inference Protocol over HTTP (docs/HTTP.md, "The Open Inference Protocol"): the real
adaptd binary called by Triton's own Python client (tritonclient[http], unchanged).

A label store on vectors, a vector store and a label store on texts answer the client's infer
calls, with binary tensors (the client's default) and JSON tensors, FP32 and FP64 rows and BYTES
texts, the classification extension's k and no outputs named, exactly as POST /v1/Predict
answers the same inputs. The server, its health and the models' metadata and readiness answer
as the protocol says. Bad inputs answer 400 naming the input or field (a wrong datatype, a shape
the data does not fill, a malformed Inference-Header-Content-Length, an unknown output), an
unknown model 404, a missing or another tenant's token 401 and 403.

Environment: ADAPTD_BIN (the server); run by the client venv's python (.ci/dev's
python_client_venv installs tritonclient[http] there).
"""

import json
import os
import sys
import tempfile
import unittest

import numpy as np
import tritonclient.http as triton
from tritonclient.utils import InferenceServerException

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from http_e2e import (call, free_port, start_adaptd, stop, token_config,  # noqa: E402
                      wait_ready)

TOKENS = {"acme": "acme-secret-7d1f", "other": "other-secret-2a9c"}
TENANT = "acme"
DIM = 8
LABELS = "abc"
WORDS = {"a": "red apple fruit", "b": "blue ocean water", "c": "green forest tree"}


def rows(n, seed):
    return np.random.default_rng(seed).normal(size=(n, DIM)).astype(np.float32)


class HttpOipTest(unittest.TestCase):
    maxDiff = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="adaptd-http-oip-")
        cls.port = free_port()
        cls.log = open(os.path.join(cls.tmp.name, "adaptd.log"), "w+b")
        cls.server = start_adaptd(
            ["--listen", "127.0.0.1:%d" % free_port(), "--http-listen",
             "127.0.0.1:%d" % cls.port, "--data-dir", os.path.join(cls.tmp.name, "data"),
             "--config", token_config(cls.tmp.name, TOKENS)], cls.log)
        wait_ready(cls.port, cls.server, cls.log)
        cls.client = triton.InferenceServerClient("127.0.0.1:%d" % cls.port)
        cls.auth = {"Authorization": "Bearer " + TOKENS[TENANT]}
        train = rows(60, 1)
        cls.v1("CreateStore", {"tenant": TENANT, "store": "labels",
                               "spec": {"kind": "STORE_KIND_FAAST", "dim": DIM}})
        cls.adapt("labels", [{"input": {"vector": {"values": r.tolist()}},
                              "label": LABELS[int(np.argmax(r[:3]))]} for r in train])
        cls.v1("CreateStore", {"tenant": TENANT, "store": "vectors",
                               "spec": {"kind": "STORE_KIND_FAAST", "dim": DIM,
                                        "output": {"kind": "KIND_VECTOR", "dim": 3}}})
        cls.adapt("vectors", [{"input": {"vector": {"values": r.tolist()}},
                               "vector": {"values": (r[:3] * 2 - r[3:6]).tolist()}}
                              for r in train])
        cls.v1("CreateStore", {"tenant": TENANT, "store": "words",
                               "spec": {"kind": "STORE_KIND_FAAST", "encoder": "text"}})
        cls.adapt("words", [{"input": {"text": "%s %d" % (text, i)}, "label": label}
                            for i in range(5) for label, text in WORDS.items()])

    @classmethod
    def tearDownClass(cls):
        cls.client.close()
        stop(cls.server)
        cls.log.close()
        cls.tmp.cleanup()

    @classmethod
    def v1(cls, method, body):
        status, answer, _ = call(cls.port, "POST", "/v1/" + method, body, TOKENS[TENANT])
        assert status == 200, (method, status, answer)
        return answer

    @classmethod
    def adapt(cls, store, examples):
        cls.v1("Adapt", {"tenant": TENANT, "store": store, "examples": examples})
        cls.v1("Compile", {"tenant": TENANT, "store": store})

    def predict(self, store, inputs, top_k=1):
        """/v1/Predict's answer: each input's labels and scores, or vectors."""
        answer = self.v1("Predict", {"tenant": TENANT, "store": store, "top_k": top_k,
                                     "inputs": inputs})
        return answer["predictions"]

    def infer(self, store, inputs, outputs=None, **kwargs):
        # The client adds Inference-Header-Content-Length to the headers it is given: a copy.
        return self.client.infer(TENANT + "/" + store, inputs, outputs=outputs,
                                 headers=dict(self.auth), **kwargs)

    @staticmethod
    def vector_input(x, binary=True, datatype="FP32"):
        tensor = triton.InferInput("INPUT", list(x.shape), datatype)
        tensor.set_data_from_numpy(x, binary_data=binary)
        return tensor

    @staticmethod
    def text_input(texts, binary=True):
        x = np.array([t.encode() for t in texts], dtype=np.object_)
        tensor = triton.InferInput("INPUT", [len(texts)], "BYTES")
        tensor.set_data_from_numpy(x, binary_data=binary)
        return tensor

    def assert_labels(self, result, expected, k):
        labels = result.as_numpy("labels")
        scores = result.as_numpy("scores")
        self.assertEqual(labels.shape, (len(expected), k))
        self.assertEqual(scores.shape, (len(expected), k))
        self.assertEqual(scores.dtype, np.float32)
        for row, prediction in enumerate(expected):
            # The client reads BYTES as bytes in binary, as str in JSON.
            self.assertEqual([l.decode() if isinstance(l, bytes) else l for l in labels[row]],
                             [p["label"] for p in prediction["labels"]])
            np.testing.assert_allclose(scores[row], [p.get("score", 0.0)
                                                     for p in prediction["labels"]], rtol=1e-6)

    def test_server_and_models_answer_as_the_protocol_says(self):
        self.assertTrue(self.client.is_server_live())
        self.assertTrue(self.client.is_server_ready())
        metadata = self.client.get_server_metadata()
        self.assertEqual(metadata["name"], "adaptd")
        self.assertIn("classification", metadata["extensions"])
        self.assertIn("binary_tensor_data", metadata["extensions"])
        self.assertTrue(self.client.is_model_ready("acme/labels", headers=self.auth))
        self.assertFalse(self.client.is_model_ready("acme/nosuch", headers=self.auth))
        model = self.client.get_model_metadata("acme/labels", headers=self.auth)
        self.assertEqual(model["name"], "acme/labels")
        self.assertEqual(model["inputs"], [{"name": "INPUT", "datatype": "FP32",
                                            "shape": [-1, DIM]}])
        self.assertEqual([o["name"] for o in model["outputs"]], ["labels", "scores"])
        model = self.client.get_model_metadata("acme/vectors", headers=self.auth)
        self.assertEqual(model["outputs"], [{"name": "vectors", "datatype": "FP32",
                                             "shape": [-1, 3]}])
        model = self.client.get_model_metadata("acme/words", headers=self.auth)
        self.assertEqual(model["inputs"], [{"name": "INPUT", "datatype": "BYTES",
                                            "shape": [-1]}])

    def test_label_store_answers_as_predict_in_binary_and_json(self):
        x = rows(5, 2)
        inputs = [{"vector": {"values": r.tolist()}} for r in x]
        for binary in (True, False):
            for k in (1, 2):
                outputs = [triton.InferRequestedOutput("labels", binary_data=binary,
                                                       class_count=k),
                           triton.InferRequestedOutput("scores", binary_data=binary)]
                result = self.infer("labels", [self.vector_input(x, binary)], outputs,
                                    request_id="r%d" % k)
                self.assert_labels(result, self.predict("labels", inputs, k), k)
                response = result.get_response()
                self.assertEqual(response["id"], "r%d" % k)
                self.assertEqual(response["model_name"], "acme/labels")
        # FP64 rows, and no outputs named: every output, top 1, in binary.
        result = self.infer("labels", [self.vector_input(x.astype(np.float64), True, "FP64")])
        self.assert_labels(result, self.predict("labels", inputs, 1), 1)

    def test_vector_store_answers_as_predict(self):
        x = rows(4, 3)
        expected = np.array([p["vector"] for p in self.predict(
            "vectors", [{"vector": {"values": r.tolist()}} for r in x])], dtype=np.float32)
        for binary in (True, False):
            result = self.infer("vectors", [self.vector_input(x, binary)],
                                [triton.InferRequestedOutput("vectors", binary_data=binary)])
            vectors = result.as_numpy("vectors")
            self.assertEqual(vectors.shape, (4, 3))
            np.testing.assert_allclose(vectors, expected, rtol=1e-6)

    def test_text_store_answers_as_predict(self):
        texts = ["a red apple", "the blue water", "green tree forest", "é ü"]
        expected = self.predict("words", [{"text": t} for t in texts], 2)
        for binary in (True, False):
            outputs = [triton.InferRequestedOutput("labels", binary_data=binary, class_count=2),
                       triton.InferRequestedOutput("scores", binary_data=binary)]
            result = self.infer("words", [self.text_input(texts, binary)], outputs)
            self.assert_labels(result, expected, 2)
        self.assertEqual([p["labels"][0]["label"] for p in expected[:3]], ["a", "b", "c"])

    def assert_refused(self, status, words, *args, headers=None, **kwargs):
        with self.assertRaises(InferenceServerException) as refused:
            self.client.infer(*args, headers=dict(headers or self.auth), **kwargs)
        self.assertEqual(refused.exception.status(), str(status), refused.exception.message())
        for word in words:
            self.assertIn(word, refused.exception.message())

    def test_bad_inputs_are_refused_naming_the_problem(self):
        x = rows(2, 4)
        self.assert_refused(404, ["acme/nosuch"], "acme/nosuch", [self.vector_input(x)])
        wrong = triton.InferInput("INPUT", [2, DIM], "INT32")
        wrong.set_data_from_numpy(x.astype(np.int32))
        self.assert_refused(400, ["input INPUT", "datatype INT32"], "acme/labels", [wrong])
        self.assert_refused(400, ["output probs"], "acme/labels", [self.vector_input(x)],
                            outputs=[triton.InferRequestedOutput("probs")])
        self.assert_refused(400, ["output vectors"], "acme/labels", [self.vector_input(x)],
                            outputs=[triton.InferRequestedOutput("vectors")])
        other = triton.InferInput("X", [2, DIM], "FP32")
        other.set_data_from_numpy(x)
        self.assert_refused(400, ["input X"], "acme/labels", [other])
        self.assert_refused(400, ["dim"], "acme/labels", [self.vector_input(rows(2, 5)[:, :3])])
        self.assert_refused(401, [], "acme/labels", [self.vector_input(x)],
                            headers={"Authorization": "Bearer nope"})
        self.assert_refused(403, [], "acme/labels", [self.vector_input(x)],
                            headers={"Authorization": "Bearer " + TOKENS["other"]})
        path = "/v2/models/acme/labels/infer"
        body = {"inputs": [{"name": "INPUT", "datatype": "FP32", "shape": [2, DIM],
                            "data": x[0].tolist()}]}
        status, answer, _ = call(self.port, "POST", path, body, TOKENS[TENANT])
        self.assertEqual(status, 400, answer)
        self.assertIn("shape [2,8] holds 16 elements, the data 8", answer["error"])
        header = json.dumps({"inputs": [{"name": "INPUT", "datatype": "FP32", "shape": [1, DIM],
                                         "parameters": {"binary_data_size": 4 * DIM}}]})
        for length in ("twelve", str(len(header) + 4 * DIM + 1)):
            status, answer, _ = call(
                self.port, "POST", path, header.encode() + x[0].tobytes(), TOKENS[TENANT],
                headers={"Inference-Header-Content-Length": length})
            self.assertEqual(status, 400, answer)
            self.assertIn("Inference-Header-Content-Length: \"%s\"" % length, answer["error"])
        status, answer, _ = call(self.port, "GET", path, None, TOKENS[TENANT])
        self.assertEqual(status, 405, answer)
        status, answer, _ = call(self.port, "GET", "/v2/models/acme", None, TOKENS[TENANT])
        self.assertEqual(status, 404, answer)
        self.assertIn("TENANT/STORE", answer["error"])


if __name__ == "__main__":
    unittest.main()
