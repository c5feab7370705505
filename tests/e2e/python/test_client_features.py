#!/usr/bin/env python3
"""The sync Client's features beyond the basic calls, against the real adaptd: pandas inputs,
labels and targets; predict_stream; typed exceptions; example ids; and the retry policy, through
FaultProxy (fault_proxy.py), which forwards to the real server and loses chosen calls.

Run by the installed package's venv python (python_package_client_e2e); needs pandas.
"""

import os
import queue
import sys
import unittest

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from adaptd_process import AdaptdProcess, run_tests  # noqa: E402
from fault_proxy import LOST_ANSWER, NOT_FORWARDED, FaultProxy  # noqa: E402

from adaptd_client import (AdaptdError, AlreadyExistsError, Client,  # noqa: E402
                           FailedPreconditionError, InvalidArgumentError, NotFoundError,
                           RetryPolicy, UnavailableError)

TENANT = "features"
DIM = 8
MANUAL = dict(auto_compile_every=0, auto_compile_delay_ms=0)
FAST_RETRY = RetryPolicy(max_attempts=5, initial_backoff=0.01, max_backoff=0.05)

SERVER = None


def setUpModule():
    global SERVER
    SERVER = AdaptdProcess()
    SERVER.start()


def tearDownModule():
    if SERVER is not None:
        SERVER.stop()


def blobs(seed, rows, labels=("a", "b", "c")):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(len(labels), DIM))
    which = rng.integers(0, len(labels), size=rows)
    x = (centers[which] + rng.normal(size=(rows, DIM))).astype(np.float32)
    return x, [labels[i] for i in which]


class ClientFeatures(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = Client(SERVER.address, timeout=30.0)
        cls.x, cls.y = blobs(1, 300)

    @classmethod
    def tearDownClass(cls):
        cls.client.close()

    def labelled_store(self, name, client=None):
        client = client or self.client
        client.create_store(TENANT, name, ridge=1.0, **MANUAL)
        client.adapt(TENANT, name, self.x, labels=self.y)
        client.compile(TENANT, name)

    # -- sequences and passes ----------------------------------------------------------------

    def test_sequences_into_a_next_store(self):
        cycle = np.eye(4, dtype=np.float32)  # e0 -> e1 -> e2 -> e3
        self.client.create_store(TENANT, "next", kind="falcon", output="next", dim=4)
        # Six sequences of one cycle: each starts afresh, so e3 -> e0 is never a pair.
        first = self.client.adapt_sequences(TENANT, "next", [cycle] * 6 + [cycle[:0]], batch=3)
        self.assertEqual((first["accepted"], first["sequences"], first["evaluated"]),
                         (24, 6, 18))
        continued = self.client.adapt_sequence(TENANT, "next", cycle, continue_sequence=True)
        self.assertEqual((continued["sequences"], continued["evaluated"]), (1, 4))
        fresh = self.client.adapt_sequence(TENANT, "next", pd.DataFrame(cycle))
        self.assertEqual(fresh["evaluated"], 3)
        predicted = self.client.predict(TENANT, "next", cycle[:3])
        self.assertEqual(predicted.shape, (3, 4))
        self.assertEqual(list(np.argmax(predicted, axis=1)), [1, 2, 3])

    def test_sequence_and_passes_errors(self):
        self.client.create_store(TENANT, "not-next", ridge=1.0, **MANUAL)
        before = self.client.get_store(TENANT, "not-next")["examples"]
        with self.assertRaises(InvalidArgumentError) as wrong_kind:
            self.client.adapt_sequence(TENANT, "not-next", self.x[:5])
        self.assertIn("sequence", wrong_kind.exception.message)
        with self.assertRaises(InvalidArgumentError) as no_rereading:
            self.client.adapt(TENANT, "not-next", self.x[:5], labels=self.y[:5], passes=2)
        self.assertTrue(no_rereading.exception.message.startswith("passes:"),
                        no_rereading.exception.message)
        self.assertEqual(self.client.get_store(TENANT, "not-next")["examples"], before)
        with self.assertRaises(ValueError):
            self.client.adapt(TENANT, "not-next", self.x[:5], labels=self.y[:5], passes=0)
        with self.assertRaises(ValueError):
            self.client.adapt_sequences(TENANT, "not-next", "abc")
        with self.assertRaises(ValueError) as bad_item:
            self.client.adapt_sequences(TENANT, "not-next", [self.x[:2], [1.0, 2.0]])
        self.assertIn("sequences[1]", str(bad_item.exception))

    def test_passes_feed_an_fwpkm_store_again(self):
        for name, passes in (("once", None), ("thrice", 3)):
            self.client.create_store(TENANT, "pkm-" + name, kind="fwpkm")
            result = self.client.adapt(TENANT, "pkm-" + name, self.x[:64], labels=self.y[:64],
                                       passes=passes)
            self.assertEqual(result["accepted"], 64)
        once = self.client.predict_scores(TENANT, "pkm-once", self.x[:16])[1]
        thrice = self.client.predict_scores(TENANT, "pkm-thrice", self.x[:16])[1]
        self.assertFalse(np.allclose(once, thrice))

    # -- pandas ------------------------------------------------------------------------------

    def test_pandas_frames_and_series_equal_numpy(self):
        frame = pd.DataFrame(self.x, columns=["f%d" % i for i in range(DIM)])
        self.client.create_store(TENANT, "pandas", ridge=1.0, **MANUAL)
        self.client.create_store(TENANT, "numpy", ridge=1.0, **MANUAL)
        result = self.client.adapt(TENANT, "pandas", frame, labels=pd.Series(self.y))
        self.assertEqual(result["accepted"], len(self.x))
        self.client.adapt(TENANT, "numpy", self.x, labels=np.array(self.y))
        self.client.compile(TENANT, "pandas")
        self.client.compile(TENANT, "numpy")
        self.assertEqual(self.client.predict(TENANT, "pandas", frame.iloc[:50], top_k=3),
                         self.client.predict(TENANT, "numpy", self.x[:50], top_k=3))
        # A one-column DataFrame of labels, integer labels (sent as str), an int frame.
        self.client.create_store(TENANT, "pandas-int", ridge=1.0, **MANUAL)
        numbers = pd.DataFrame({"label": ["abc".index(v) for v in self.y]})
        self.client.adapt(TENANT, "pandas-int", frame, labels=numbers)
        self.client.compile(TENANT, "pandas-int")
        self.assertEqual(sorted(self.client.get_store(TENANT, "pandas-int")["labels"]),
                         ["0", "1", "2"])

    def test_pandas_targets_and_texts(self):
        rng = np.random.default_rng(3)
        weights = rng.normal(size=(DIM, 2))
        frame = pd.DataFrame(rng.normal(size=(200, DIM)))
        targets = pd.DataFrame(frame.to_numpy() @ weights, columns=["u", "v"])
        self.client.create_store(TENANT, "pandas-vec", output="vector:2", rcond=1e-6, **MANUAL)
        self.client.adapt(TENANT, "pandas-vec", frame, targets=targets)
        self.client.compile(TENANT, "pandas-vec")
        got = self.client.predict(TENANT, "pandas-vec", frame.iloc[:5])
        np.testing.assert_allclose(got, targets.to_numpy()[:5], rtol=1e-3, atol=1e-3)
        # A Series of texts through a text encoder.
        texts = pd.Series(["refund my order", "where is my parcel", "money back",
                           "parcel tracking"], dtype="string")
        self.client.create_store(TENANT, "pandas-text", encoder="text", ridge=1.0, **MANUAL)
        self.client.adapt(TENANT, "pandas-text", texts,
                          labels=pd.Series(["refund", "shipping", "refund", "shipping"]))
        self.client.compile(TENANT, "pandas-text")
        self.assertEqual(len(self.client.predict(TENANT, "pandas-text", texts)), 4)
        with self.assertRaises(ValueError) as caught:
            self.client.adapt(TENANT, "pandas-text", pd.DataFrame({"a": ["x"], "b": ["y"]}),
                              labels=["refund"])
        self.assertIn("one column", str(caught.exception))
        with self.assertRaises(ValueError) as caught:
            self.client.adapt(TENANT, "pandas", frame.iloc[:2], labels=pd.Series(["a", None]))
        self.assertIn("row 1 has no label", str(caught.exception))

    # -- predict_stream ----------------------------------------------------------------------

    def test_predict_stream_answers_each_batch_in_order(self):
        self.labelled_store("stream")
        batches = [self.x[i:i + 17] for i in range(0, 170, 17)]
        streamed = list(self.client.predict_stream(TENANT, "stream", batches, top_k=2))
        self.assertEqual(len(streamed), len(batches))
        for batch, answer in zip(batches, streamed):
            self.assertEqual(answer, self.client.predict(TENANT, "stream", batch, top_k=2))
        raw = list(self.client.predict_stream(TENANT, "stream", batches[:2], raw=True))
        self.assertTrue(all(r.version >= 1 for r in raw))

    def test_predict_stream_reads_batches_lazily(self):
        # The batches come from a generator that waits for each answer before it makes the next
        # batch: one call that stays open while the caller reacts to what it reads.
        self.labelled_store("lazy")
        pending = queue.Queue()
        pending.put(self.x[0:3])

        def batches():
            while True:
                batch = pending.get(timeout=20)
                if batch is None:
                    return
                yield batch

        answers = []
        for answer in self.client.predict_stream(TENANT, "lazy", batches()):
            answers.append(answer)
            i = len(answers)
            pending.put(self.x[i * 3:(i + 1) * 3] if i < 5 else None)
        self.assertEqual(answers, [self.client.predict(TENANT, "lazy", self.x[i * 3:(i + 1) * 3])
                                   for i in range(5)])

    def test_predict_stream_errors(self):
        self.labelled_store("stream-errors")

        def with_bad_batch():
            yield self.x[:2]
            yield np.ones(3)  # not 2-D

        got = []
        with self.assertRaises(ValueError):
            for answer in self.client.predict_stream(TENANT, "stream-errors", with_bad_batch()):
                got.append(answer)
        self.assertEqual(len(got), 1, "the batch before the bad one was answered")
        with self.assertRaises(NotFoundError) as caught:
            list(self.client.predict_stream(TENANT, "no-such-store", [self.x[:2]]))
        self.assertEqual(caught.exception.method, "PredictStream")

    # -- typed exceptions --------------------------------------------------------------------

    def test_typed_exceptions(self):
        self.labelled_store("typed")
        cases = [
            (NotFoundError, "NOT_FOUND", lambda: self.client.get_store(TENANT, "missing")),
            (AlreadyExistsError, "ALREADY_EXISTS",
             lambda: self.client.create_store(TENANT, "typed")),
            (InvalidArgumentError, "INVALID_ARGUMENT",
             lambda: self.client.predict(TENANT, "typed", self.x[:2, :DIM - 1])),
            (FailedPreconditionError, "FAILED_PRECONDITION",
             lambda: (self.client.create_store(TENANT, "empty", **MANUAL),
                      self.client.predict(TENANT, "empty", self.x[:1]))),
        ]
        for error_type, code_name, call in cases:
            with self.assertRaises(error_type) as caught:
                call()
            error = caught.exception
            self.assertIsInstance(error, AdaptdError)
            self.assertEqual(error.code_name, code_name)
            self.assertEqual(error.code.name, code_name)
            self.assertTrue(error.message, "carries the server's message")
            self.assertIn(code_name, str(error))
        with self.assertRaises(InvalidArgumentError) as caught:
            self.client.predict(TENANT, "typed", self.x[:2, :DIM - 1])
        self.assertEqual(caught.exception.message,
                         "inputs[0].vector: dimension %d, expected %d" % (DIM - 1, DIM))
        self.assertEqual(caught.exception.method, "Predict")
        with Client("127.0.0.1:1", timeout=2.0, retry=None) as nowhere:
            with self.assertRaises(AdaptdError) as caught:
                nowhere.ping()
            self.assertIn(caught.exception.code_name, ("UNAVAILABLE", "DEADLINE_EXCEEDED"))

    # -- example ids -------------------------------------------------------------------------

    def test_explicit_ids_make_a_resend_apply_once(self):
        self.client.create_store(TENANT, "ids", ridge=1.0, **MANUAL)
        ids = ["row-%d" % i for i in range(len(self.x))]
        first = self.client.adapt(TENANT, "ids", self.x, labels=self.y, ids=ids, batch=50)
        self.assertEqual((first["accepted"], first["duplicates"]), (len(self.x), 0))
        again = self.client.adapt(TENANT, "ids", self.x, labels=self.y, ids=ids, batch=50)
        self.assertEqual((again["accepted"], again["duplicates"]), (len(self.x), len(self.x)))
        self.assertEqual(self.client.get_store(TENANT, "ids")["examples"], len(self.x))

    def test_automatic_ids_differ_between_calls(self):
        # Two calls with the same rows are two sets of examples: the ids are per call.
        self.client.create_store(TENANT, "auto-ids", ridge=1.0, **MANUAL)
        for _ in range(2):
            result = self.client.adapt(TENANT, "auto-ids", self.x[:40], labels=self.y[:40])
            self.assertEqual(result["duplicates"], 0)
        self.assertEqual(self.client.get_store(TENANT, "auto-ids")["examples"], 80)


class Retries(unittest.TestCase):
    """The retry policy against the real server, through a proxy that loses chosen calls."""

    @classmethod
    def setUpClass(cls):
        cls.proxy = FaultProxy(SERVER.address)
        cls.direct = Client(SERVER.address)
        cls.x, cls.y = blobs(2, 120)

    @classmethod
    def tearDownClass(cls):
        cls.direct.close()
        cls.proxy.stop()

    def setUp(self):
        self.proxy.reset()

    def client(self, **kwargs):
        kwargs.setdefault("retry", FAST_RETRY)
        return Client(self.proxy.address, timeout=20.0, **kwargs)

    def examples(self, name):
        return self.direct.get_store(TENANT, name)["examples"]

    def test_lost_adapt_answer_is_retried_and_applied_once(self):
        self.direct.create_store(TENANT, "retry-adapt", ridge=1.0, **MANUAL)
        self.proxy.fail("Adapt", "after", times=2)
        with self.client() as client:
            result = client.adapt(TENANT, "retry-adapt", self.x, labels=self.y, batch=40)
        self.assertEqual(self.proxy.attempts["Adapt"], 3)
        self.assertEqual(self.proxy.retried["Adapt"], 2)
        self.assertEqual(result["accepted"], len(self.x))
        self.assertEqual(result["duplicates"], len(self.x), "the retry found every id applied")
        self.assertEqual(self.examples("retry-adapt"), len(self.x))

    def test_lost_sequence_answer_is_retried_and_applied_once(self):
        # Sequence items carry ids too: the retried call's messages are skipped whole, so the
        # store learns exactly what one call teaches a store reached directly.
        sequences = [self.x[:10], self.x[10:25]]
        for name in ("seq-retried", "seq-once"):
            self.direct.create_store(TENANT, name, kind="falcon", output="next", dim=DIM)
        once = self.direct.adapt_sequences(TENANT, "seq-once", sequences, batch=4)
        self.proxy.fail("Adapt", "after", times=2)
        with self.client() as client:
            result = client.adapt_sequences(TENANT, "seq-retried", sequences, batch=4)
        self.assertEqual(self.proxy.retried["Adapt"], 2)
        self.assertEqual((result["accepted"], result["duplicates"]), (25, 25))
        self.assertEqual(once["duplicates"], 0)
        self.assertEqual(self.examples("seq-retried"), self.examples("seq-once"))
        np.testing.assert_array_equal(self.direct.predict(TENANT, "seq-retried", self.x[:8]),
                                      self.direct.predict(TENANT, "seq-once", self.x[:8]))

    def test_without_ids_a_retry_applies_twice(self):
        # The counter-case: what the ids prevent.
        self.direct.create_store(TENANT, "retry-no-ids", ridge=1.0, **MANUAL)
        self.proxy.fail("Adapt", "after")
        with self.client(auto_example_ids=False) as client:
            result = client.adapt(TENANT, "retry-no-ids", self.x, labels=self.y)
        self.assertEqual(result["duplicates"], 0)
        self.assertEqual(self.examples("retry-no-ids"), 2 * len(self.x))

    def test_without_retries_the_caller_resends_with_the_same_ids(self):
        self.direct.create_store(TENANT, "resend", ridge=1.0, **MANUAL)
        self.proxy.fail("Adapt", "after")
        ids = ["r%d" % i for i in range(len(self.x))]
        with self.client(retry=None) as client:
            with self.assertRaises(UnavailableError) as caught:
                client.adapt(TENANT, "resend", self.x, labels=self.y, ids=ids)
            self.assertEqual(caught.exception.message, LOST_ANSWER)
            self.assertEqual(self.proxy.attempts["Adapt"], 1)
            self.assertEqual(self.examples("resend"), len(self.x), "applied; the answer lost")
            result = client.adapt(TENANT, "resend", self.x, labels=self.y, ids=ids)
        self.assertEqual(result["duplicates"], len(self.x))
        self.assertEqual(self.examples("resend"), len(self.x))

    def test_reads_are_retried_until_the_attempts_run_out(self):
        self.direct.create_store(TENANT, "retry-read", ridge=1.0, **MANUAL)
        self.direct.adapt(TENANT, "retry-read", self.x, labels=self.y)
        self.direct.compile(TENANT, "retry-read")
        expected = self.direct.predict(TENANT, "retry-read", self.x[:5])
        self.proxy.fail("Predict", "before", times=4)
        with self.client() as client:
            self.assertEqual(client.predict(TENANT, "retry-read", self.x[:5]), expected)
            self.assertEqual(self.proxy.attempts["Predict"], 5)
            self.proxy.fail("Predict", "before", times=5)
            with self.assertRaises(UnavailableError) as caught:
                client.predict(TENANT, "retry-read", self.x[:5])
            self.assertEqual(caught.exception.message, NOT_FORWARDED)
        self.assertEqual(self.proxy.attempts["Predict"], 10, "5 attempts at most per call")

    def test_forget_is_never_retried(self):
        self.direct.create_store(TENANT, "retry-forget", ridge=1.0, **MANUAL)
        self.direct.adapt(TENANT, "retry-forget", self.x, labels=self.y)
        self.proxy.fail("Forget", "after")
        with self.client() as client:
            with self.assertRaises(UnavailableError):
                client.forget(TENANT, "retry-forget", self.x[:10], labels=self.y[:10])
        self.assertEqual(self.proxy.attempts["Forget"], 1)
        self.assertEqual(self.examples("retry-forget"), len(self.x) - 10, "forgotten once")

    def test_retry_policy_arguments(self):
        for bad in (dict(max_attempts=1), dict(max_attempts=6), dict(initial_backoff=0),
                    dict(initial_backoff=2.0, max_backoff=1.0), dict(multiplier=0)):
            with self.assertRaises(ValueError):
                RetryPolicy(**bad)
        with self.assertRaises(ValueError):
            Client(SERVER.address, retry="yes")


if __name__ == "__main__":
    run_tests(lambda: SERVER)
