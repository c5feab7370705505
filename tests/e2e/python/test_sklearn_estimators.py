#!/usr/bin/env python3
"""adaptd_client.sklearn against the real adaptd: AdaptdClassifier and AdaptdRegressor in
Pipelines, with clone, get_params/set_params, pickle, pandas, partial_fit, and scikit-learn's
own estimator checks (sklearn.utils.estimator_checks.check_estimator).

The checks that cannot hold for an estimator whose model is a remote store would be listed in
EXPECTED_FAILED_CHECKS with the reason, and those scikit-learn skips in EXPECTED_SKIPPED_CHECKS
(docs/CLIENTS.md repeats both lists); the test fails when any other check fails or is skipped,
and when a listed one starts to pass (so the lists stay true).

Run by the installed package's venv python (python_package_sklearn_e2e); needs scikit-learn
and pandas.
"""

import os
import pickle
import sys
import unittest
import warnings

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import check_estimator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from adaptd_process import AdaptdProcess, run_tests  # noqa: E402

from adaptd_client import Client  # noqa: E402
from adaptd_client.sklearn import AdaptdClassifier, AdaptdRegressor  # noqa: E402

TENANT = "sk"

# Estimator class -> {check name: why it cannot hold for a store on a server}; docs/CLIENTS.md
# lists the same. Every check scikit-learn generates for these estimators holds today.
EXPECTED_FAILED_CHECKS = {"AdaptdClassifier": {}, "AdaptdRegressor": {}}
# Checks scikit-learn itself skips here, and why (docs/CLIENTS.md lists them too).
EXPECTED_SKIPPED_CHECKS = {
    "check_array_api_input": "scikit-learn runs it only with SCIPY_ARRAY_API=1; the "
                             "estimators send numpy float32 rows over gRPC whatever the "
                             "array namespace",
}

SERVER = None


def setUpModule():
    global SERVER
    SERVER = AdaptdProcess()
    SERVER.start()


def tearDownModule():
    if SERVER is not None:
        SERVER.stop()


def classes_data(seed=0, rows=400, dim=5, labels=("cat", "dog", "eel")):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=2.5, size=(len(labels), dim)) + 4.0
    which = rng.integers(0, len(labels), size=rows)
    x = centers[which] + rng.normal(size=(rows, dim))
    return x, np.array(labels)[which]


class Estimators(unittest.TestCase):
    def classifier(self, store, **params):
        return AdaptdClassifier(SERVER.address, TENANT, store, **params)

    def regressor(self, store, **params):
        return AdaptdRegressor(SERVER.address, TENANT, store, **params)

    def test_classifier_in_a_pipeline(self):
        x, y = classes_data()
        model = make_pipeline(StandardScaler(), self.classifier("pipe", ridge=1.0))
        model.fit(x[:300], y[:300])
        clf = model[-1]
        np.testing.assert_array_equal(clf.classes_, ["cat", "dog", "eel"])
        self.assertEqual(clf.n_features_in_, 5)
        predicted = model.predict(x[300:])
        self.assertEqual(predicted.dtype, y.dtype)
        self.assertGreater(model.score(x[300:], y[300:]), 0.9)
        proba = model.predict_proba(x[300:])
        self.assertEqual(proba.shape, (100, 3))
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        self.assertTrue(np.all(proba >= 0))
        np.testing.assert_array_equal(clf.classes_[np.argmax(proba, axis=1)], predicted)
        # The store on the server is the model: another client reads the same answers.
        with Client(SERVER.address) as client:
            served = client.predict(TENANT, "pipe", model[0].transform(x[300:]))
        self.assertEqual([row[0][0] for row in served], list(predicted))

    def test_integer_labels_come_back_as_given(self):
        x, y = classes_data(1)
        numbers = np.searchsorted(["cat", "dog", "eel"], y) + 10
        clf = self.classifier("ints", ridge=1.0).fit(x, numbers)
        np.testing.assert_array_equal(clf.classes_, [10, 11, 12])
        self.assertEqual(clf.predict(x[:5]).dtype, numbers.dtype)
        self.assertGreater(clf.score(x, numbers), 0.9)

    def test_params_clone_and_set_params(self):
        clf = self.classifier("params", ridge=2.0, rcond=1e-6)
        params = clf.get_params()
        self.assertEqual(params["ridge"], 2.0)
        self.assertEqual(params["kind"], "faast")
        self.assertEqual(params["store"], "params")
        twin = clone(clf)
        self.assertEqual(twin.get_params(), params)
        self.assertIsNot(twin, clf)
        clf.set_params(ridge=5.0, store="params-2", alpha=0.5)
        self.assertEqual(clf.get_params()["ridge"], 5.0)
        self.assertEqual(clf.get_params()["alpha"], 0.5)
        self.assertEqual(twin.get_params()["ridge"], 2.0, "the clone is independent")
        with self.assertRaises(ValueError) as caught:
            clf.set_params(no_such_param=1)
        self.assertIn("no_such_param", str(caught.exception))
        self.assertIn("ridge", str(caught.exception), "names what faast takes")
        # The store gets the parameters: its spec shows them.
        x, y = classes_data(2)
        clf.fit(x, y)
        with Client(SERVER.address) as client:
            spec = client.get_store(TENANT, "params-2")["spec"]
        self.assertEqual(spec["params"]["ridge"], 5.0)
        self.assertEqual(spec["params"]["alpha"], 0.5)
        self.assertEqual(spec["dim"], 5)

    def test_grid_search_over_a_store_parameter(self):
        x, y = classes_data(3, rows=240)
        search = GridSearchCV(self.classifier("grid"), {"ridge": [0.1, 10.0]}, cv=2)
        search.fit(x, y)
        self.assertIn(search.best_params_["ridge"], (0.1, 10.0))
        self.assertGreater(search.score(x, y), 0.85)

    def test_partial_fit_equals_fit(self):
        # faast's statistics do not depend on batching: chunked partial_fit == one fit.
        x, y = classes_data(4)
        whole = self.classifier("whole", ridge=1.0).fit(x, y)
        parts = self.classifier("parts", ridge=1.0)
        with self.assertRaises(ValueError):
            parts.partial_fit(x[:10], y[:10])  # classes missing on the first call
        for start in range(0, len(x), 100):
            parts.partial_fit(x[start:start + 100], y[start:start + 100],
                              classes=["cat", "dog", "eel"])
        np.testing.assert_allclose(parts.predict_proba(x), whole.predict_proba(x), rtol=1e-4,
                                   atol=1e-6)
        with self.assertRaises(ValueError) as caught:
            parts.partial_fit(x[:3], np.array(["cat", "dog", "owl"]))
        self.assertIn("owl", str(caught.exception))

    def test_falcon_classifier_learns_online(self):
        x, y = classes_data(5)
        clf = self.classifier("falcon", kind="falcon", variant="1", key_norm="l2")
        clf.fit(x[:300], y[:300])
        self.assertGreater(clf.score(x[300:], y[300:]), 0.8)
        before = clf.store_version_
        clf.partial_fit(x[:20], y[:20])
        self.assertGreater(clf.store_version_, before)

    def test_regressor_one_and_several_outputs(self):
        rng = np.random.default_rng(6)
        x = rng.normal(size=(300, 4))
        w = rng.normal(size=(4, 2))
        y = x @ w
        one = make_pipeline(StandardScaler(with_mean=False),
                            self.regressor("reg-1", rcond=1e-6)).fit(x, y[:, 0])
        self.assertEqual(one.predict(x[:7]).shape, (7,))
        reference = make_pipeline(StandardScaler(with_mean=False),
                                  Ridge(alpha=1e-9, fit_intercept=False)).fit(x, y[:, 0])
        np.testing.assert_allclose(one.predict(x), reference.predict(x), rtol=1e-3, atol=1e-3)
        several = self.regressor("reg-2", rcond=1e-6).fit(pd.DataFrame(x, columns=list("abcd")),
                                                          y)
        self.assertEqual(several.n_outputs_, 2)
        np.testing.assert_array_equal(several.feature_names_in_, list("abcd"))
        self.assertEqual(several.predict(pd.DataFrame(x[:3], columns=list("abcd"))).shape,
                         (3, 2))
        self.assertGreater(several.score(pd.DataFrame(x, columns=list("abcd")), y), 0.999)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with self.assertRaises(Exception):  # the feature names must match (sklearn's rule)
                several.predict(pd.DataFrame(x[:3], columns=list("dcba")))

    def test_pickle_and_clone_of_a_fitted_estimator(self):
        x, y = classes_data(7)
        clf = self.classifier("pickled", ridge=1.0).fit(x, y)
        restored = pickle.loads(pickle.dumps(clf))
        np.testing.assert_array_equal(restored.predict(x), clf.predict(x))
        self.assertFalse(hasattr(clone(clf), "classes_"), "a clone is unfitted")

    def test_unfitted_and_bad_inputs(self):
        from sklearn.exceptions import NotFittedError

        clf = self.classifier("bad")
        with self.assertRaises(NotFittedError):
            clf.predict(np.ones((2, 3)))
        x, y = classes_data(8)
        clf.fit(x, y)
        with self.assertRaises(ValueError) as caught:
            clf.predict(np.ones((2, 4)))
        self.assertIn("features", str(caught.exception))
        with self.assertRaises(ValueError):
            clf.fit(x, np.linspace(0, 1, len(x)))  # a continuous target for a classifier
        with self.assertRaises(ValueError):
            clf.fit(np.where(np.eye(len(x), 5) > 0, np.nan, x), y)

    def test_text_encoder(self):
        texts = ["refund my order", "where is my parcel", "money back please",
                 "parcel tracking number", "I want a refund", "my parcel is late"]
        labels = ["refund", "shipping", "refund", "shipping", "refund", "shipping"]
        clf = self.classifier("texts", encoder="text", ridge=0.1).fit(texts, labels)
        self.assertEqual(clf.score(texts, labels), 1.0)

    def test_feedback_equals_partial_fit_with_the_same_rows(self):
        x, y = classes_data(9, rows=300)
        fed = self.classifier("fed", ridge=1.0, feedback_window=1000).fit(x[:200], y[:200])
        twin = self.classifier("fed-twin", ridge=1.0).fit(x[:200], y[:200])
        served = fed.predict(x[200:])
        ids = fed.last_prediction_ids_
        self.assertEqual(len(set(ids)), 100)
        self.assertTrue(all(i.startswith("p1.") for i in ids))
        twin.predict(x[:3])
        self.assertFalse(hasattr(twin, "last_prediction_ids_"), "no window: predict keeps nothing")
        before = fed.store_version_
        fed.feedback(y[200:])  # the ids of the last predict; X is not sent again
        self.assertGreater(fed.store_version_, before)
        twin.partial_fit(x[200:], y[200:])
        np.testing.assert_allclose(fed.predict_proba(x), twin.predict_proba(x), rtol=1e-4,
                                   atol=1e-6)
        with Client(SERVER.address) as client:
            info = client.get_store(TENANT, "fed")
            self.assertEqual(info["examples"], client.get_store(TENANT, "fed-twin")["examples"])
            self.assertEqual(info["served_evaluated"], 100)
            self.assertEqual(info["served_correct"], int(np.sum(served == y[200:])))
            self.assertGreater(info["remembered_bytes"], 0)
            # A resend applies once.
            fed.feedback(y[200:], ids)
            self.assertEqual(client.get_store(TENANT, "fed")["examples"], info["examples"])
        with self.assertRaises(ValueError) as caught:
            fed.feedback(np.array(["cat", "owl"]), ids[:2])
        self.assertIn("owl", str(caught.exception))
        with self.assertRaises(ValueError):
            fed.feedback(y[:3], ids[:2])
        with self.assertRaises(ValueError) as caught:
            twin.feedback(y[:3], ids[:3])
        self.assertIn("feedback_window", str(caught.exception))

    def test_feedback_past_the_window_is_not_found(self):
        from adaptd_client.errors import NotFoundError

        x, y = classes_data(10, rows=120)
        clf = self.classifier("fed-small", kind="falcon", variant="1",
                              feedback_window=5).fit(x[:100], y[:100])
        _, ids = clf.predict_with_ids(x[100:])
        with Client(SERVER.address) as client:
            before = client.get_store(TENANT, "fed-small")["examples"]
            with self.assertRaises(NotFoundError) as caught:
                clf.feedback(y[100:], ids)
            self.assertIn("window", str(caught.exception))
            self.assertEqual(client.get_store(TENANT, "fed-small")["examples"], before)
            clf.feedback(y[115:], ids[15:])  # the last five are remembered
            self.assertEqual(client.get_store(TENANT, "fed-small")["examples"], before + 5)

    def test_regressor_feedback_equals_partial_fit(self):
        rng = np.random.default_rng(11)
        x = rng.normal(size=(200, 4))
        y = x @ rng.normal(size=(4, 2))
        fed = self.regressor("fed-reg", rcond=1e-6, feedback_window=100).fit(x[:150], y[:150])
        twin = self.regressor("fed-reg-twin", rcond=1e-6).fit(x[:150], y[:150])
        predicted, ids = fed.predict_with_ids(x[150:])
        self.assertEqual(predicted.shape, (50, 2))
        fed.feedback(y[150:], ids)
        twin.partial_fit(x[150:], y[150:])
        np.testing.assert_allclose(fed.predict(x), twin.predict(x), rtol=1e-4, atol=1e-5)

    def test_scikit_learn_estimator_checks(self):
        for estimator in (self.classifier("check-clf", ridge=1.0),
                          self.regressor("check-reg", ridge=1e-3)):
            name = type(estimator).__name__
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                results = check_estimator(estimator, on_fail=None, on_skip=None,
                                          expected_failed_checks=EXPECTED_FAILED_CHECKS.get(
                                              name, {}))
            by_status = {}
            for result in results:
                by_status.setdefault(result["status"], []).append(result)
            failed = ["%s: %r" % (r["check_name"], r["exception"])
                      for r in by_status.get("failed", [])]
            self.assertEqual(failed, [], "%s failed scikit-learn checks" % name)
            expected = set(EXPECTED_FAILED_CHECKS.get(name, {}))
            xfailed = {r["check_name"] for r in by_status.get("xfail", [])}
            self.assertEqual(xfailed, expected,
                             "%s: the listed checks and those that fail differ" % name)
            skipped = {r["check_name"] for r in by_status.get("skipped", [])}
            self.assertEqual(skipped, set(EXPECTED_SKIPPED_CHECKS), "%s: skipped checks" % name)
            passed = len(by_status.get("passed", []))
            self.assertGreater(passed, 30, "%s: %d checks passed" % (name, passed))
            sys.stderr.write("%s: %d scikit-learn checks passed, %d skipped, %d cannot apply\n"
                             % (name, passed, len(by_status.get("skipped", [])), len(xfailed)))


if __name__ == "__main__":
    run_tests(lambda: SERVER)
