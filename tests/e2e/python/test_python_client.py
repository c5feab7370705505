#!/usr/bin/python3
"""End-to-end test of the Python client package (adaptd_client) against the real adaptd.

One server is started for the module (free loopback port, temporary data directory) and
driven only through adaptd_client: label and vector stores, adapt/compile/predict, top-k
order, prequential statistics, forget, export/import, and the mapping of errors to
AdaptdError codes.

Run by ctest with ADAPTD_BIN and PYTHONPATH (<build>/client/python:<source>/client/python)
set; needs Debian's python3-numpy, python3-grpcio and python3-protobuf.
"""

import os
import sys

try:
    import numpy as np
except ImportError as error:
    sys.exit("test_python_client.py needs numpy (Debian: apt-get install python3-numpy): %s" %
             error)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import unittest  # noqa: E402

from adaptd_client import AdaptdError, Client  # noqa: E402
from adaptd_process import AdaptdProcess, run_tests  # noqa: E402

TENANT = "acme"
DIM = 32
CLASSES = ["cat", "dog", "bird", "fish", "frog"]
# auto-compiles off: every version in these tests comes from an explicit Compile.
MANUAL = dict(auto_compile_every=0, auto_compile_delay_ms=0)

SERVER = None


def setUpModule():
    global SERVER
    SERVER = AdaptdProcess()
    SERVER.start()


def tearDownModule():
    if SERVER is not None:
        SERVER.stop()


def gaussian_classes(rng, rows, centers):
    """rows inputs (float32) drawn around the class centers (sigma 1) and their labels."""
    ids = rng.integers(0, len(CLASSES), size=rows)
    x = (centers[ids] + rng.normal(size=(rows, DIM))).astype(np.float32)
    return x, [CLASSES[i] for i in ids]


class PythonClientEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = Client(SERVER.address, timeout=30.0)
        rng = np.random.default_rng(20240607)
        centers = rng.normal(scale=1.5, size=(len(CLASSES), DIM))
        cls.x_train, cls.y_train = gaussian_classes(rng, 500, centers)
        cls.x_test, cls.y_test = gaussian_classes(rng, 300, centers)
        cls.x_more, cls.y_more = gaussian_classes(rng, 100, centers)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def make_label_store(self, name, **params):
        info = self.client.create_store(TENANT, name, kind="faast", encoder="identity",
                                        output="labels", ridge=1.0, **MANUAL, **params)
        result = self.client.adapt(TENANT, name, self.x_train, labels=self.y_train, batch=64)
        self.assertEqual(result["accepted"], len(self.x_train))
        self.assertEqual(result["evaluated"], 0, "nothing was published before the first adapt")
        self.assertIsNone(result["accuracy"])
        compiled = self.client.compile(TENANT, name)
        self.assertGreaterEqual(compiled["version"], 1)
        return info, compiled

    def assert_code(self, code_name, call, *args, **kwargs):
        with self.assertRaises(AdaptdError) as caught:
            call(*args, **kwargs)
        self.assertEqual(caught.exception.code_name, code_name, str(caught.exception))
        self.assertTrue(caught.exception.message, "the error carries the server's message")
        return caught.exception

    # -- tests -----------------------------------------------------------------------------

    def test_health_and_encoders(self):
        self.assertEqual(self.client.health(), "SERVING")
        names = [e["name"] for e in self.client.encoders()]
        self.assertIn("identity", names)

    def test_label_store_round_trip(self):
        info, compiled = self.make_label_store("labels")
        self.assertEqual(info["spec"]["kind"], "faast")
        self.assertEqual(info["spec"]["output"], "labels")
        self.assertEqual(info["spec"]["params"]["ridge"], 1.0)
        self.assertEqual(compiled["stats"]["solver"], "ridge")

        top1 = self.client.predict(TENANT, "labels", self.x_test)
        self.assertEqual(len(top1), len(self.x_test))
        self.assertTrue(all(len(row) == 1 for row in top1))
        accuracy = np.mean([row[0][0] == y for row, y in zip(top1, self.y_test)])
        self.assertGreaterEqual(accuracy, 0.9)

        got = self.client.get_store(TENANT, "labels")
        self.assertEqual(got["version"], compiled["version"])
        self.assertEqual(got["examples"], len(self.x_train))
        self.assertEqual(got["spec"]["dim"], DIM)
        first_seen = list(dict.fromkeys(self.y_train))
        self.assertEqual(got["labels"], first_seen, "label columns follow first-seen order")
        self.assertIn("labels", [s["store"] for s in self.client.list_stores(TENANT)])

        # Prequential statistics: the new examples are scored by the published version first.
        more = self.client.adapt(TENANT, "labels", self.x_more, labels=self.y_more, batch=30)
        self.assertEqual(more["accepted"], len(self.x_more))
        self.assertEqual(more["evaluated"], len(self.x_more))
        self.assertAlmostEqual(more["accuracy"], more["correct"] / more["evaluated"])
        self.assertGreaterEqual(more["accuracy"], 0.85)
        self.assertAlmostEqual(more["loss"], 1.0 - more["accuracy"])

    def test_base_store_answers_at_once_and_refreshes(self):
        self.make_label_store("base-src")
        info = self.client.create_store("python-base", "child", kind="faast", ridge=1.0,
                                        base=f"{TENANT}/base-src", **MANUAL)
        self.assertEqual(info["spec"]["base"], f"{TENANT}/base-src")
        self.assertEqual(info["version"], 1, "the copy of the base is published at once")
        queries = self.x_test[:20]
        self.assertEqual(self.client.predict("python-base", "child", queries),
                         self.client.predict(TENANT, "base-src", queries))
        refreshed = self.client.compile("python-base", "child", refresh_base=True)
        self.assertEqual(refreshed["stats"]["base_version"],
                         self.client.get_store(TENANT, "base-src")["version"])
        error = self.assert_code("FAILED_PRECONDITION", self.client.delete_store, TENANT,
                                 "base-src")
        self.assertIn("python-base/child", error.message)
        self.assert_code("INVALID_ARGUMENT", self.client.create_store, "python-base", "bad",
                         kind="fwpkm", base=f"{TENANT}/base-src")
        self.client.delete_store("python-base", "child")
        self.client.delete_store(TENANT, "base-src")

    def test_declared_labels_answer_zero_shot(self):
        # Keys and label names through the server's text encoder: before any example, a text
        # that is a label's name decodes to that label; examples then move the read-out.
        name = "zero-shot"
        info = self.client.create_store(TENANT, name, kind="faast", encoder="text",
                                        label_encoder="text", labels=["refund", "shipping",
                                                                      "password"],
                                        prior_examples=4, **MANUAL)
        self.assertEqual(info["version"], 1)
        self.assertEqual(info["labels"], ["refund", "shipping", "password"])
        self.assertEqual(info["stats"]["solver"], "zero_shot")
        got = self.client.predict(TENANT, name, ["password", "shipping", "refund"])
        self.assertEqual([row[0][0] for row in got], ["password", "shipping", "refund"])
        self.client.adapt(TENANT, name, ["where is my parcel", "money back please"],
                          labels=["shipping", "refund"])
        compiled = self.client.compile(TENANT, name)
        self.assertAlmostEqual(compiled["stats"]["fast_weight_share"], 2 / 6)
        self.assert_code("INVALID_ARGUMENT", self.client.create_store, TENANT, "zs-bad",
                         kind="faast", encoder="text", labels=["a"])
        self.client.delete_store(TENANT, name)

    def test_top_k_order(self):
        self.make_label_store("topk")
        x = self.x_test[:40]
        top1 = self.client.predict(TENANT, "topk", x, top_k=1)
        top3 = self.client.predict(TENANT, "topk", x, top_k=3)
        full = self.client.predict(TENANT, "topk", x, top_k=len(CLASSES))
        for one, three, every in zip(top1, top3, full):
            self.assertEqual(sorted(label for label, _ in every), sorted(CLASSES))
            scores = [score for _, score in every]
            self.assertEqual(scores, sorted(scores, reverse=True), "best first")
            self.assertEqual(three, every[:3])
            self.assertEqual(one, every[:1])
        # top_k beyond the label count is clamped to it.
        many = self.client.predict(TENANT, "topk", x[:2], top_k=len(CLASSES) + 4)
        self.assertTrue(all(len(row) == len(CLASSES) for row in many))
        labels, scores = self.client.predict_scores(TENANT, "topk", x)
        self.assertEqual(scores.shape, (len(x), len(CLASSES)))
        self.assertEqual([labels[j] for j in np.argmax(scores, axis=1)],
                         [row[0][0] for row in top1])

    def test_vector_store_round_trip(self):
        rng = np.random.default_rng(7)
        weights = rng.normal(size=(DIM, 3))
        x = rng.normal(size=(300, DIM)).astype(np.float32)
        targets = (x.astype(np.float64) @ weights).astype(np.float32)
        info = self.client.create_store(TENANT, "vectors", output="vector:3", rcond=1e-6,
                                        **MANUAL)
        self.assertEqual(info["spec"]["output"], "vector:3")
        result = self.client.adapt(TENANT, "vectors", x, targets=targets, batch=100)
        self.assertEqual(result["accepted"], len(x))
        self.client.compile(TENANT, "vectors")
        x_new = rng.normal(size=(50, DIM)).astype(np.float32)
        predicted = self.client.predict(TENANT, "vectors", x_new)
        self.assertIsInstance(predicted, np.ndarray)
        self.assertEqual(predicted.shape, (50, 3))
        expected = x_new.astype(np.float64) @ weights
        error = np.max(np.abs(predicted - expected)) / np.max(np.abs(expected))
        self.assertLess(error, 1e-4, "a noise-free linear map is recovered")
        _, scores = self.client.predict_scores(TENANT, "vectors", x_new)
        np.testing.assert_array_equal(scores, predicted)

    def test_export_import_identical_predictions(self):
        self.make_label_store("source")
        data = self.client.export_store(TENANT, "source")
        self.assertIsInstance(data, bytes)
        self.assertTrue(data.startswith(b"ADAPTDSS"), "snapshot file magic")
        imported = self.client.import_store(TENANT, "copy", data)
        original = self.client.get_store(TENANT, "source")
        for key in ("version", "examples", "labels", "spec"):
            self.assertEqual(imported[key], original[key], key)
        labels_a, scores_a = self.client.predict_scores(TENANT, "source", self.x_test)
        labels_b, scores_b = self.client.predict_scores(TENANT, "copy", self.x_test)
        self.assertEqual(labels_a, labels_b)
        np.testing.assert_array_equal(scores_a, scores_b)
        self.assertEqual(self.client.predict(TENANT, "source", self.x_test, top_k=2),
                         self.client.predict(TENANT, "copy", self.x_test, top_k=2))
        self.assert_code("ALREADY_EXISTS", self.client.import_store, TENANT, "copy", data)
        self.assert_code("INVALID_ARGUMENT", self.client.import_store, TENANT, "broken",
                         data[:len(data) // 2])

    def test_forget_equals_never_adapted(self):
        self.make_label_store("forget")
        forgotten = self.client.forget(TENANT, "forget", self.x_train[:100],
                                       labels=self.y_train[:100], batch=40)
        self.assertEqual(forgotten["forgotten"], 100)
        self.client.compile(TENANT, "forget")
        self.client.create_store(TENANT, "never", ridge=1.0, **MANUAL)
        self.client.adapt(TENANT, "never", self.x_train[100:], labels=self.y_train[100:])
        self.client.compile(TENANT, "never")
        self.assertEqual(self.client.get_store(TENANT, "forget")["examples"],
                         len(self.x_train) - 100)
        labels_f, scores_f = self.client.predict_scores(TENANT, "forget", self.x_test)
        labels_n, scores_n = self.client.predict_scores(TENANT, "never", self.x_test)
        scores_n = scores_n[:, [labels_n.index(label) for label in labels_f]]
        error = np.max(np.abs(scores_f - scores_n)) / np.max(np.abs(scores_n))
        self.assertLess(error, 1e-5)

    def test_feedback_by_prediction_id_equals_adapt(self):
        self.make_label_store("feedback", feedback_window=1000)
        self.make_label_store("feedback-twin")
        served, ids = self.client.predict_with_ids(TENANT, "feedback", self.x_more)
        self.assertEqual(len(set(ids)), len(self.x_more))
        result = self.client.feedback(TENANT, "feedback", zip(ids, self.y_more))
        self.assertEqual((result["accepted"], result["duplicates"]), (len(self.x_more), 0))
        self.assertEqual(result["served_correct"],
                         sum(row[0][0] == y for row, y in zip(served, self.y_more)))
        again = self.client.feedback(TENANT, "feedback", zip(ids, self.y_more))
        self.assertEqual(again["duplicates"], len(self.x_more))
        self.client.adapt(TENANT, "feedback-twin", self.x_more, labels=self.y_more)
        for name in ("feedback", "feedback-twin"):
            self.client.compile(TENANT, name)
        labels_f, scores_f = self.client.predict_scores(TENANT, "feedback", self.x_test)
        labels_t, scores_t = self.client.predict_scores(TENANT, "feedback-twin", self.x_test)
        self.assertEqual(labels_f, labels_t)
        np.testing.assert_allclose(scores_f, scores_t, rtol=1e-5, atol=1e-6)
        error = self.assert_code("NOT_FOUND", self.client.feedback, TENANT, "feedback",
                                 [ids[0] + "0000"])
        self.assertIn("feedback window", error.message)
        self.assert_code("FAILED_PRECONDITION", self.client.feedback, TENANT, "feedback-twin",
                         [ids[0]])

    def test_feedback_window_age_and_the_served_figures(self):
        info, _ = self.make_label_store("feedback-age", feedback_window=50, feedback_age_s=3600)
        self.assertEqual(info["spec"]["feedback"], {"count": 50, "max_age_s": 3600})
        served, ids = self.client.predict_with_ids(TENANT, "feedback-age", self.x_more[:10])
        self.client.feedback(TENANT, "feedback-age", zip(ids, self.y_more[:10]))
        info = self.client.get_store(TENANT, "feedback-age")
        self.assertEqual(info["served_evaluated"], 10)
        self.assertEqual(info["served_correct"],
                         sum(row[0][0] == y for row, y in zip(served, self.y_more[:10])))
        self.assertGreater(info["remembered_bytes"], 0)
        self.assertGreaterEqual(info["memory_bytes"], info["remembered_bytes"])
        with self.assertRaises(ValueError):
            self.client.create_store(TENANT, "age-alone", feedback_age_s=60)

    def test_errors(self):
        self.make_label_store("errors")
        error = self.assert_code("NOT_FOUND", self.client.get_store, TENANT, "no-such-store")
        self.assertEqual(error.method, "GetStore")
        self.assert_code("NOT_FOUND", self.client.predict, TENANT, "no-such-store",
                         self.x_test[:2])
        self.assert_code("NOT_FOUND", self.client.adapt, TENANT, "no-such-store",
                         self.x_train[:2], labels=self.y_train[:2])
        error = self.assert_code("INVALID_ARGUMENT", self.client.predict, TENANT, "errors",
                                 self.x_test[:2, :DIM - 1])
        self.assertEqual(error.message,
                         "inputs[0].vector: dimension %d, expected %d" % (DIM - 1, DIM))
        self.assert_code("INVALID_ARGUMENT", self.client.adapt, TENANT, "errors",
                         np.ones((2, DIM + 3)), labels=["cat", "dog"])
        self.assert_code("ALREADY_EXISTS", self.client.create_store, TENANT, "errors")
        self.assert_code("INVALID_ARGUMENT", self.client.create_store, TENANT, "bad name!")
        self.assert_code("INVALID_ARGUMENT", self.client.create_store, TENANT, "bad-encoder",
                         encoder="no-such-encoder")
        self.client.create_store(TENANT, "uncompiled", **MANUAL)
        self.assert_code("FAILED_PRECONDITION", self.client.predict, TENANT, "uncompiled",
                         self.x_test[:2])
        # An invalid stream changes nothing: the last row has the wrong dimension.
        before = self.client.get_store(TENANT, "errors")["examples"]
        bad = [list(row) for row in self.x_train[:10]] + [[1.0] * (DIM + 1)]
        with self.assertRaises(ValueError):  # a ragged array is refused by the client
            self.client.adapt(TENANT, "errors", bad, labels=self.y_train[:11])
        rows = np.vstack([self.x_train[:10], np.zeros((1, DIM), np.float32)])
        rows[10, 0] = np.nan
        self.assert_code("INVALID_ARGUMENT", self.client.adapt, TENANT, "errors", rows,
                         labels=self.y_train[:11], batch=4)
        self.assertEqual(self.client.get_store(TENANT, "errors")["examples"], before)
        self.client.delete_store(TENANT, "errors")
        self.assert_code("NOT_FOUND", self.client.get_store, TENANT, "errors")

    def test_list_stores_follows_every_page(self):
        tenant = "paging"  # a tenant of its own: the other tests' stores come and go
        names = ["p%02d" % i for i in range(7)]
        for name in reversed(names):
            self.client.create_store(tenant, name, dim=DIM, **MANUAL)
        for size in (0, 1, 2, 7, 1000):
            listed = self.client.list_stores(tenant, page_size=size)
            self.assertEqual([s["store"] for s in listed], names, size)
            self.assertEqual({s["tenant"] for s in listed}, {tenant})
        self.assertEqual(self.client.list_stores("nobody-here"), [])

        first = self.client.list_stores_page(tenant, page_size=3)
        self.assertEqual([s.store for s in first.stores], names[:3])
        self.assertTrue(first.next_page_token)
        last = self.client.list_stores_page(tenant, 1000, first.next_page_token)
        self.assertEqual([s.store for s in last.stores], names[3:])
        self.assertEqual(last.next_page_token, "", "the last page ends the listing")

        # Lazily: a store created after the first page, past the resume point, is listed; one
        # deleted before its page is not; nothing comes twice.
        stores = self.client.iter_stores(tenant, page_size=2)
        seen = [next(stores)["store"], next(stores)["store"]]
        self.client.create_store(tenant, "p99", dim=DIM, **MANUAL)
        self.client.delete_store(tenant, "p05")
        seen.extend(s["store"] for s in stores)
        self.assertEqual(seen, names[:5] + ["p06", "p99"])

        error = self.assert_code("INVALID_ARGUMENT", self.client.list_stores, tenant, 1001)
        self.assertTrue(error.message.startswith("page_size: at most 1000"), error.message)
        error = self.assert_code("INVALID_ARGUMENT", self.client.list_stores_page, tenant, 1,
                                 "garbage!")
        self.assertTrue(error.message.startswith("page_token: "), error.message)
        error = self.assert_code("INVALID_ARGUMENT", self.client.list_stores_page, TENANT, 1,
                                 first.next_page_token)
        self.assertIn("another tenant", error.message)

    def test_client_side_validation(self):
        with self.assertRaises(ValueError):
            self.client.create_store(TENANT, "x", output="vector:0")
        with self.assertRaises(ValueError):
            self.client.create_store(TENANT, "x", no_such_param=1)
        with self.assertRaises(ValueError):
            self.client.adapt(TENANT, "x", self.x_train[:2])  # neither labels nor targets
        with self.assertRaises(ValueError):
            self.client.adapt(TENANT, "x", self.x_train[:2], labels=["cat"])
        with self.assertRaises(ValueError):
            Client(SERVER.address, timeout=0)

    def test_deadline_and_unreachable_server(self):
        port = SERVER.address.rsplit(":", 1)[1]
        with Client("127.0.0.1:1", timeout=2.0) as nowhere:
            self.assertNotEqual(port, "1")
            with self.assertRaises(AdaptdError) as caught:
                nowhere.encoders()
            self.assertIn(caught.exception.code_name, ("UNAVAILABLE", "DEADLINE_EXCEEDED"))


if __name__ == "__main__":
    run_tests(lambda: SERVER)
