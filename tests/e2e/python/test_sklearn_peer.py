#!/usr/bin/python3
"""Peer check: faast predictions served by the real adaptd equal scikit-learn's and numpy's.

- ridge > 0: S = (KᵀK + ridge·I)⁻¹ KᵀY with one-hot Y (columns in first-seen label order), no
  intercept, is sklearn's Ridge(alpha=ridge, fit_intercept=False) on the same targets;
- spectral (ridge unset, explicit rcond): S = pinv(K, rcond) · Y in float64 numpy. numpy zeroes
  σ ≤ rcond·σ_max where the store drops σ < rcond·σ_max; the data here is well conditioned, so
  no singular value is near the cut-off;
- N < d exercises the few-shot path (the N×N Gram), N > d the d×d statistics.

Inputs travel as float32, so the references are fitted on the float32-rounded inputs in
float64. Scores travel as float32 too: the error is max|served − reference| / max|reference|,
and float32 rounding alone contributes at most 2⁻²⁴ ≈ 6e-8 of it. It must be ≤ 1e-6.

Run by ctest with ADAPTD_BIN and PYTHONPATH set; needs Debian's python3-sklearn,
python3-numpy, python3-grpcio and python3-protobuf.
"""

import os
import sys

try:
    import numpy as np
    from sklearn.linear_model import Ridge
except ImportError as error:
    sys.exit("test_sklearn_peer.py needs numpy and scikit-learn (Debian: apt-get install "
             "python3-numpy python3-sklearn): %s" % error)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import unittest  # noqa: E402

from adaptd_client import Client  # noqa: E402
from adaptd_process import AdaptdProcess, run_tests  # noqa: E402

TENANT = "peer"
PEER_RTOL = 1e-6
MANUAL = dict(auto_compile_every=0, auto_compile_delay_ms=0)

SERVER = None


def setUpModule():
    global SERVER
    SERVER = AdaptdProcess()
    SERVER.start()


def tearDownModule():
    if SERVER is not None:
        SERVER.stop()


def relative_error(served, reference):
    return float(np.max(np.abs(served - reference)) / np.max(np.abs(reference)))


def classification_data(seed, rows, test_rows, dim, labels):
    """Float32 inputs around one center per label (sigma 1) and their labels, train and test."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=1.0, size=(labels, dim))
    names = ["class-%d" % k for k in range(labels)]

    def draw(n):
        ids = rng.integers(0, labels, size=n)
        return (centers[ids] + rng.normal(size=(n, dim))).astype(np.float32), ids

    x, ids = draw(rows)
    x_test, _ = draw(test_rows)
    return x, [names[i] for i in ids], x_test


def one_hot(labels, columns):
    """rows × len(columns) one-hot targets, columns in the given label order."""
    index = {label: j for j, label in enumerate(columns)}
    y = np.zeros((len(labels), len(columns)))
    y[np.arange(len(labels)), [index[label] for label in labels]] = 1.0
    return y


class SklearnPeer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = Client(SERVER.address, timeout=60.0)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def served_label_scores(self, store, x, labels, x_test, **params):
        """Creates, adapts and compiles a label store; returns (label columns, the served
        scores rows × labels in that order, the compile statistics)."""
        self.client.create_store(TENANT, store, output="labels", **MANUAL, **params)
        self.assertEqual(self.client.adapt(TENANT, store, x, labels=labels, batch=128)["accepted"],
                         len(x))
        stats = self.client.compile(TENANT, store)["stats"]
        columns, scores = self.client.predict_scores(TENANT, store, x_test)
        self.assertEqual(columns, list(dict.fromkeys(labels)),
                         "label columns follow first-seen order")
        self.assertFalse(np.isnan(scores).any(), "every label scored")
        # predict_scores reorders Predict's top-k lists; check one row against them directly.
        top = self.client.predict(TENANT, store, x_test[:1], top_k=len(columns))[0]
        self.assertEqual([score for _, score in top], sorted(scores[0], reverse=True))
        return columns, scores, stats

    def report(self, name, served, reference, stats):
        """Prints the relative error, and the part of it float32 transport does not explain
        (the error against the reference rounded to float32)."""
        error = relative_error(served, reference)
        beyond_float32 = relative_error(served, reference.astype(np.float32).astype(np.float64))
        print("\n  peer %-34s solver=%-9s relative error %.3e (vs float32-rounded reference "
              "%.3e)" % (name, stats.get("solver"), error, beyond_float32), end=" ")
        return error

    def check(self, name, served, reference, stats, solver):
        error = self.report(name, served, reference, stats)
        self.assertEqual(stats.get("solver"), solver)
        self.assertLessEqual(error, PEER_RTOL, "%s: max|a-b|/max|b| = %.3e" % (name, error))
        self.assertTrue(np.array_equal(np.argmax(served, axis=1), np.argmax(reference, axis=1)),
                        "%s: top-1 labels differ" % name)

    def ridge_case(self, store, seed, rows, dim, labels, solver, **params):
        x, y, x_test = classification_data(seed, rows, 200, dim, labels)
        columns, served, stats = self.served_label_scores(store, x, y, x_test, ridge=1.0,
                                                          **params)
        peer = Ridge(alpha=1.0, fit_intercept=False)
        peer.fit(x.astype(np.float64), one_hot(y, columns))
        reference = peer.predict(x_test.astype(np.float64))
        self.check("%s (N=%d, d=%d)" % (store, rows, dim), served, reference, stats, solver)

    def pinv_case(self, store, seed, rows, dim, labels, solver, rcond=1e-6):
        x, y, x_test = classification_data(seed, rows, 200, dim, labels)
        columns, served, stats = self.served_label_scores(store, x, y, x_test, rcond=rcond)
        k = x.astype(np.float64)
        singular = np.linalg.svd(k, compute_uv=False)
        self.assertGreater(singular[-1], 10 * rcond * singular[0],
                           "well conditioned: no singular value near the cut-off")
        weights = np.linalg.pinv(k, rcond=rcond) @ one_hot(y, columns)
        reference = x_test.astype(np.float64) @ weights
        self.check("%s (N=%d, d=%d)" % (store, rows, dim), served, reference, stats, solver)

    # -- tests -----------------------------------------------------------------------------

    def test_ridge_matches_sklearn(self):
        self.ridge_case("ridge", seed=1, rows=600, dim=48, labels=6, solver="ridge")

    def test_ridge_few_shot_matches_sklearn(self):
        self.ridge_case("ridge-few-shot", seed=2, rows=20, dim=64, labels=6, solver="few_shot")

    def test_ridge_few_rows_without_few_shot_matches_sklearn(self):
        self.ridge_case("ridge-few-rows-gram", seed=3, rows=20, dim=64, labels=6,
                        solver="ridge", few_shot=False)

    def test_spectral_matches_numpy_pinv(self):
        self.pinv_case("spectral", seed=4, rows=600, dim=48, labels=6, solver="spectral")

    def test_spectral_few_shot_matches_numpy_pinv(self):
        self.pinv_case("spectral-few-shot", seed=5, rows=20, dim=64, labels=6,
                       solver="few_shot")

    def test_vector_ridge_matches_sklearn(self):
        rng = np.random.default_rng(6)
        x = rng.normal(size=(500, 40)).astype(np.float32)
        targets = (x @ rng.normal(size=(40, 4)) + 0.1 * rng.normal(size=(500, 4))).astype(
            np.float32)
        x_test = rng.normal(size=(150, 40)).astype(np.float32)
        self.client.create_store(TENANT, "vector-ridge", output="vector:4", ridge=1.0, **MANUAL)
        self.client.adapt(TENANT, "vector-ridge", x, targets=targets, batch=100)
        stats = self.client.compile(TENANT, "vector-ridge")["stats"]
        served = self.client.predict(TENANT, "vector-ridge", x_test).astype(np.float64)
        peer = Ridge(alpha=1.0, fit_intercept=False)
        peer.fit(x.astype(np.float64), targets.astype(np.float64))
        reference = peer.predict(x_test.astype(np.float64))
        error = self.report("vector-ridge (N=500, d=40, M=4)", served, reference, stats)
        self.assertLessEqual(error, PEER_RTOL)


if __name__ == "__main__":
    run_tests(lambda: SERVER)
