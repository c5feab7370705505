#!/usr/bin/env python3
"""Feedback end to end (docs/FEEDBACK.md), against the real adaptd.

A real labelled stream (scikit-learn's bundled handwritten digits, 1,797 rows of 64 pixels):
served in chunks, each chunk's true labels sent back by prediction id, the store learns as a
twin fed the same rows by Adapt (equal example counts and predictions), and its StoreInfo
shows the served accuracy the feedback revealed.

Feedback survives SIGKILL. In each round a faast store with a feedback
window serves predictions, two clients send Feedback calls on them, and adaptd is killed with
SIGKILL at a random moment; it restarts on the same data directory. After each restart every
acknowledged call is in the store exactly once (its resend reports every item a duplicate and
changes nothing) and a call the kill interrupted is in it entirely or not at all. At the end
the store equals, statistic for statistic, a store fed by Adapt with the inputs and labels of
the applied items: the same example count and the same predictions (keys of small integers,
so the sums are exact in any order and the solves agree).

Environment: ADAPTD_BIN (the server), PYTHONPATH with adaptd_client's generated stubs; needs
Debian's python3-sklearn (for the digits).
"""

import os
import random
import sys
import threading
import time
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from adaptd_process import AdaptdProcess, run_tests  # noqa: E402

from adaptd_client import Client  # noqa: E402
from adaptd_client.errors import AdaptdError, NotFoundError  # noqa: E402

TENANT = "crash"
DIM = 4
LABELS = ("a", "b", "c")
ROUNDS = 3
SERVED = 2000     # predictions served in each round
ITEMS = 20        # items per Feedback call
ACKED_BEFORE_KILL = 10
BOUND_S = 60.0

SERVERS = []  # every test's server, stopped after its test and removed at the end


def last_server():
    """For run_tests: removes every server but the last, whose log it prints on a failure."""
    for server in SERVERS[:-1]:
        server.cleanup()
    return SERVERS[-1] if SERVERS else None


def spec(client, store, window):
    client.create_store(TENANT, store, kind="faast", output="labels", dim=DIM,
                        feedback_window=window, ridge=1.0, auto_compile_every=0,
                        auto_compile_delay_ms=0)


def truth(rows):
    return [LABELS[int(r.sum()) % len(LABELS)] for r in rows]


def items(ids, labels, call):
    return [(ids[i], labels[i]) for i in call]


class ServerTest(unittest.TestCase):
    def setUp(self):
        self.server = AdaptdProcess()
        SERVERS.append(self.server)
        self.server.start()
        self.addCleanup(self.server.stop)
        self.rng = np.random.default_rng(42)


class FeedbackStreamTest(ServerTest):
    def test_a_real_labelled_stream_learned_by_feedback_equals_adapt(self):
        from sklearn.datasets import load_digits

        x, y = load_digits(return_X_y=True)
        labels = [str(v) for v in y]
        with Client(self.server.address) as client:
            for store, window in (("digits", 500), ("digits-twin", 0)):
                client.create_store(TENANT, store, kind="faast", output="labels", dim=64,
                                    feedback_window=window, ridge=1.0, auto_compile_every=0,
                                    auto_compile_delay_ms=0)
                client.adapt(TENANT, store, x[:300], labels=labels[:300])
                client.compile(TENANT, store)
            right = 0
            for start in range(300, len(x), 100):
                rows = slice(start, start + 100)
                served, ids = client.predict_with_ids(TENANT, "digits", x[rows])
                right += sum(p[0][0] == t for p, t in zip(served, labels[rows]))
                answer = client.feedback(TENANT, "digits", zip(ids, labels[rows]))
                self.assertEqual(answer["accepted"], len(ids))
                client.adapt(TENANT, "digits-twin", x[rows], labels=labels[rows])
                for store in ("digits", "digits-twin"):
                    client.compile(TENANT, store)
            fed, twin = client.get_store(TENANT, "digits"), client.get_store(TENANT, "digits-twin")
            self.assertEqual(fed["examples"], twin["examples"])
            self.assertEqual(fed["examples"], len(x))
            self.assertEqual(fed["served_evaluated"], len(x) - 300)
            self.assertEqual(fed["served_correct"], right)
            self.assertGreater(right / (len(x) - 300), 0.85, "served accuracy on the digits")
            names_f, scores_f = client.predict_scores(TENANT, "digits", x[:200])
            names_t, scores_t = client.predict_scores(TENANT, "digits-twin", x[:200])
        self.assertEqual(names_f, names_t)
        np.testing.assert_allclose(scores_f, scores_t, rtol=1e-4, atol=1e-5)


class FeedbackSigkillTest(ServerTest):

    def serve(self):
        """One round's predictions of `fb`: (their inputs, ids, true labels)."""
        served = self.rng.integers(-3, 4, size=(SERVED, DIM)).astype(np.float64)
        ids = []
        with Client(self.server.address) as client:
            client.compile(TENANT, "fb")
            for start in range(0, SERVED, 500):
                _, batch = client.predict_with_ids(TENANT, "fb", served[start:start + 500])
                ids.extend(batch)
        self.assertEqual(len(set(ids)), SERVED)
        return served, ids, truth(served)

    def feed_until_killed(self, ids, labels):
        """Feedback calls from two clients until a SIGKILL: (acknowledged, unknown) calls."""
        calls = [list(range(start, start + ITEMS)) for start in range(0, SERVED, ITEMS)]
        acked, unknown, lock = [], [], threading.Lock()
        address = self.server.address

        def sender(mine):
            with Client(address, timeout=10.0) as client:
                for call in mine:
                    try:
                        answer = client.feedback(TENANT, "fb", items(ids, labels, call))
                    except AdaptdError:
                        with lock:
                            unknown.append(call)
                        return
                    with lock:
                        acked.append((call, answer))

        senders = [threading.Thread(target=sender, args=(calls[k::2],)) for k in range(2)]
        for thread in senders:
            thread.start()
        kill_after = ACKED_BEFORE_KILL + random.randrange(40)
        deadline = time.monotonic() + BOUND_S
        while time.monotonic() < deadline:
            with lock:
                if len(acked) >= kill_after:
                    break
            time.sleep(0.001)
        self.server.process.kill()  # SIGKILL
        self.server.process.wait()
        for thread in senders:
            thread.join(BOUND_S)
        self.assertGreaterEqual(len(acked), ACKED_BEFORE_KILL)
        self.assertLess(len(acked), len(calls), "the kill came before the calls ran out")
        for call, answer in acked:
            self.assertEqual((answer["accepted"], answer["duplicates"]), (ITEMS, 0), call)
        return [call for call, _ in acked], unknown

    def test_acknowledged_feedback_is_applied_exactly_once_after_sigkill(self):
        seed = self.rng.integers(-3, 4, size=(30, DIM)).astype(np.float64)
        with Client(self.server.address) as client:
            spec(client, "fb", window=SERVED)
            client.adapt(TENANT, "fb", seed, labels=truth(seed))
        inputs, targets = [seed], [truth(seed)]
        for _ in range(ROUNDS):
            served, ids, labels = self.serve()
            acked, unknown = self.feed_until_killed(ids, labels)
            self.server.start()  # the same data directory, a new port
            with Client(self.server.address) as client:
                examples = client.get_store(TENANT, "fb")["examples"]
                # Every acknowledged call is in the store once: its resend skips every item.
                for call in acked:
                    again = client.feedback(TENANT, "fb", items(ids, labels, call))
                    self.assertEqual(again["duplicates"], ITEMS, call)
                # A call the kill interrupted is in it entirely or not at all: the restart
                # forgot the remembered keys, so one not applied is NOT_FOUND (the applied-ids
                # window is checked first, so a half-applied one would be NOT_FOUND too, and
                # the count below would tell).
                applied = list(acked)
                for call in unknown:
                    try:
                        again = client.feedback(TENANT, "fb", items(ids, labels, call))
                        self.assertEqual(again["duplicates"], ITEMS, call)
                        applied.append(call)
                    except NotFoundError as error:
                        self.assertIn("restarted", str(error))
                self.assertEqual(client.get_store(TENANT, "fb")["examples"], examples)
            rows = [i for call in applied for i in call]
            inputs.append(served[rows])
            targets.append([labels[i] for i in rows])
            self.assertEqual(examples, sum(len(x) for x in inputs))

        # The store equals one fed the same examples by Adapt.
        with Client(self.server.address) as client:
            spec(client, "twin", window=0)
            client.adapt(TENANT, "twin", np.vstack(inputs), labels=sum(targets, []))
            client.compile(TENANT, "fb")
            client.compile(TENANT, "twin")
            fed, twin = client.get_store(TENANT, "fb"), client.get_store(TENANT, "twin")
            self.assertEqual(fed["examples"], twin["examples"])
            self.assertEqual(sorted(fed["labels"]), sorted(twin["labels"]))
            probe = self.rng.normal(size=(64, DIM))
            fed_scores = client.predict(TENANT, "fb", probe, top_k=len(LABELS))
            twin_scores = client.predict(TENANT, "twin", probe, top_k=len(LABELS))
        for a, b in zip(fed_scores, twin_scores):
            self.assertEqual([label for label, _ in a], [label for label, _ in b])
            np.testing.assert_allclose([s for _, s in a], [s for _, s in b], rtol=1e-5,
                                       atol=1e-6)


if __name__ == "__main__":
    run_tests(last_server)
