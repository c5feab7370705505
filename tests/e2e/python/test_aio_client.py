#!/usr/bin/env python3
"""adaptd_client.aio.Client against the real adaptd: every call as a coroutine, the same
results as the sync Client, concurrent calls on one channel, async predict_stream, typed
errors, and a lost Adapt answer retried and applied once (through fault_proxy.FaultProxy).

Run by the installed package's venv python (python_package_aio_e2e); needs pandas.
"""

import asyncio
import os
import sys
import unittest

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from adaptd_process import AdaptdProcess, run_tests  # noqa: E402
from fault_proxy import FaultProxy  # noqa: E402

from adaptd_client import (AlreadyExistsError, Client, NotFoundError,  # noqa: E402
                           RetryPolicy, UnavailableError)
from adaptd_client import aio  # noqa: E402

TENANT = "aio"
DIM = 6
MANUAL = dict(auto_compile_every=0, auto_compile_delay_ms=0)

SERVER = None


def setUpModule():
    global SERVER
    SERVER = AdaptdProcess()
    SERVER.start()


def tearDownModule():
    if SERVER is not None:
        SERVER.stop()


def data(seed=5, rows=200):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=3.0, size=(2, DIM))
    which = rng.integers(0, 2, size=rows)
    x = (centers[which] + rng.normal(size=(rows, DIM))).astype(np.float32)
    return x, [("left", "right")[i] for i in which]


class AioClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.x, cls.y = data()
        cls.sync = Client(SERVER.address)

    @classmethod
    def tearDownClass(cls):
        cls.sync.close()

    def run_async(self, coroutine):
        return asyncio.run(asyncio.wait_for(coroutine, 60))

    def test_round_trip_equals_the_sync_client(self):
        async def main():
            async with aio.Client(SERVER.address, timeout=20.0) as client:
                await client.wait_ready(timeout=5.0)
                self.assertEqual(await client.health(), "SERVING")
                await client.ping()
                info = await client.create_store(TENANT, "round", ridge=1.0, **MANUAL)
                self.assertEqual(info["spec"]["kind"], "faast")
                frame = pd.DataFrame(self.x)
                result = await client.adapt(TENANT, "round", frame, labels=pd.Series(self.y),
                                            batch=64)
                self.assertEqual((result["accepted"], result["duplicates"]), (len(self.x), 0))
                compiled = await client.compile(TENANT, "round")
                self.assertGreaterEqual(compiled["version"], 1)
                got = await client.predict(TENANT, "round", self.x[:20], top_k=2)
                labels, scores = await client.predict_scores(TENANT, "round", self.x[:20])
                names = [s["store"] for s in await client.list_stores(TENANT)]
                pages = [s["store"] async for s in client.iter_stores(TENANT, page_size=1)]
                encoders = await client.encoders()
                pinned = await client.pin_store(TENANT, "round")
                data_bytes = await client.export_store(TENANT, "round")
                copy = await client.import_store(TENANT, "round-copy", data_bytes)
                return got, labels, scores, names, pages, encoders, pinned, copy

        got, labels, scores, names, pages, encoders, pinned, copy = self.run_async(main())
        self.assertEqual(got, self.sync.predict(TENANT, "round", self.x[:20], top_k=2))
        sync_labels, sync_scores = self.sync.predict_scores(TENANT, "round", self.x[:20])
        self.assertEqual(labels, sync_labels)
        np.testing.assert_array_equal(scores, sync_scores)
        self.assertIn("round", names)
        self.assertEqual(pages, names, "page by page, the same listing")
        self.assertIn("identity", [e["name"] for e in encoders])
        self.assertEqual(pinned["store"], "round")
        self.assertEqual(copy["examples"], len(self.x))
        self.assertEqual(self.sync.predict(TENANT, "round-copy", self.x[:20], top_k=2), got)

    def test_concurrent_calls_and_async_stream(self):
        self.sync.create_store(TENANT, "concurrent", ridge=1.0, **MANUAL)
        self.sync.adapt(TENANT, "concurrent", self.x, labels=self.y)
        self.sync.compile(TENANT, "concurrent")
        batches = [self.x[i:i + 10] for i in range(0, 100, 10)]
        expected = [self.sync.predict(TENANT, "concurrent", b) for b in batches]

        async def main():
            async with aio.Client(SERVER.address) as client:
                together = await asyncio.gather(
                    *[client.predict(TENANT, "concurrent", b) for b in batches])

                async def produce():
                    for b in batches:
                        await asyncio.sleep(0)
                        yield b

                streamed = [p async for p in client.predict_stream(TENANT, "concurrent",
                                                                   produce())]
                from_list = [p async for p in client.predict_stream(TENANT, "concurrent",
                                                                    batches)]
                return together, streamed, from_list

        together, streamed, from_list = self.run_async(main())
        for got in (list(together), streamed, from_list):
            self.assert_same_predictions(got, expected)

    def assert_same_predictions(self, got, expected):
        """Same labels; scores within float32 rounding (concurrent calls are batched together
        by the server's scheduler, which may sum in another order)."""
        self.assertEqual(len(got), len(expected))
        for batch_got, batch_expected in zip(got, expected):
            self.assertEqual([[label for label, _ in row] for row in batch_got],
                             [[label for label, _ in row] for row in batch_expected])
            np.testing.assert_allclose([[score for _, score in row] for row in batch_got],
                                       [[score for _, score in row] for row in batch_expected],
                                       rtol=1e-5, atol=1e-6)

    def test_sequences_equal_the_sync_client(self):
        items = np.random.default_rng(5).normal(size=(12, 4)).astype(np.float32)
        for name in ("seq-sync", "seq-aio"):
            self.sync.create_store(TENANT, name, kind="falcon", output="next", dim=4)
        want = self.sync.adapt_sequences(TENANT, "seq-sync", [items[:5], items[5:]], batch=4)

        async def main():
            async with aio.Client(SERVER.address) as client:
                got = await client.adapt_sequences(TENANT, "seq-aio", [items[:5], items[5:]],
                                                   batch=4)
                more = await client.adapt_sequence(TENANT, "seq-aio", items[:3],
                                                   continue_sequence=True)
                return got, more

        got, more = self.run_async(main())
        self.assertEqual(got["sequences"], 2)
        self.assertEqual(got["evaluated"], 10)
        self.assertEqual(more["evaluated"], 3)
        self.sync.adapt_sequence(TENANT, "seq-sync", items[:3], continue_sequence=True)
        np.testing.assert_array_equal(self.sync.predict(TENANT, "seq-sync", items),
                                      self.sync.predict(TENANT, "seq-aio", items))
        self.assertEqual(want["loss"], got["loss"])

    def test_typed_errors(self):
        async def main():
            async with aio.Client(SERVER.address) as client:
                with self.assertRaises(NotFoundError) as missing:
                    await client.get_store(TENANT, "missing")
                await client.create_store(TENANT, "twice", **MANUAL)
                with self.assertRaises(AlreadyExistsError):
                    await client.create_store(TENANT, "twice", **MANUAL)
                with self.assertRaises(NotFoundError):
                    [p async for p in client.predict_stream(TENANT, "missing", [self.x[:1]])]
                with self.assertRaises(ValueError):
                    await client.adapt(TENANT, "twice", self.x[:2])  # no labels nor targets
                return missing.exception

        error = self.run_async(main())
        self.assertEqual((error.code_name, error.method), ("NOT_FOUND", "GetStore"))
        self.assertTrue(error.message)

    def test_feedback_equals_the_sync_client(self):
        async def main():
            async with aio.Client(SERVER.address) as client:
                await client.create_store(TENANT, "fb", feedback_window=100, ridge=1.0,
                                          **MANUAL)
                await client.adapt(TENANT, "fb", self.x[:100], labels=self.y[:100])
                await client.compile(TENANT, "fb")
                _, ids = await client.predict_with_ids(TENANT, "fb", self.x[100:120])
                first = await client.feedback(TENANT, "fb", zip(ids, self.y[100:120]))
                again = await client.feedback(TENANT, "fb", zip(ids, self.y[100:120]))
                return ids, first, again

        ids, first, again = self.run_async(main())
        self.assertEqual(len(set(ids)), 20)
        self.assertEqual((first["accepted"], first["duplicates"]), (20, 0))
        self.assertEqual((again["accepted"], again["duplicates"]), (20, 20))
        self.assertEqual(self.sync.get_store(TENANT, "fb")["examples"], 120)

    def test_lost_adapt_answer_is_applied_once(self):
        proxy = FaultProxy(SERVER.address)
        self.sync.create_store(TENANT, "aio-retry", ridge=1.0, **MANUAL)
        proxy.fail("Adapt", "after")
        retry = RetryPolicy(initial_backoff=0.01, max_backoff=0.05)

        async def main():
            async with aio.Client(proxy.address, retry=retry) as client:
                applied_once = await client.adapt(TENANT, "aio-retry", self.x, labels=self.y)
            proxy.fail("Adapt", "before")
            async with aio.Client(proxy.address, retry=None) as client:
                with self.assertRaises(UnavailableError):
                    await client.adapt(TENANT, "aio-retry", self.x, labels=self.y)
            return applied_once

        try:
            result = self.run_async(main())
        finally:
            proxy.stop()
        self.assertEqual(result["duplicates"], len(self.x))
        self.assertEqual(proxy.attempts["Adapt"], 3)
        self.assertEqual(self.sync.get_store(TENANT, "aio-retry")["examples"], len(self.x))


if __name__ == "__main__":
    run_tests(lambda: SERVER)
