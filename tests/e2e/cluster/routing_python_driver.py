#!/usr/bin/python3
"""routing_python_driver: the Python client (adaptd_client.Client, or with --aio
adaptd_client.aio.Client), routing to holders unless --no-route, running calls without pause,
for routing_clients_e2e_test.py; the Python twin of routing_client_driver.cc, with the same
protocol.

It creates --stores faast stores of tenant --tenant through --addr, then --workers threads (or
asyncio tasks) call them in turn, --pause-ms apart: predict and, every fourth call, adapt of one
example with an id of its own. A call the client raises UnavailableError for (past its own retries and the
fallback to --addr, as while a killed member's shards fail over) is resent by the driver, the
adapt with the same id (as docs/CLIENTS.md tells applications to), up to 10 times within 20 s;
such resends are counted apart from failures. Each line "report" on stdin prints one JSON line
of counts on stdout ({"calls", "predicts", "adapts", "resent", "failed", "routing", "errors"}:
the first few failures); end of input stops the calls and prints the last report.
"""

import argparse
import asyncio
import json
import sys
import threading
import time

import numpy as np

from adaptd_client import AlreadyExistsError, Client, FailedPreconditionError, UnavailableError
from adaptd_client import aio

DIM = 4
LABELS = ("north", "south", "east")
RESEND_ATTEMPTS = 10
RESEND_WITHIN_S = 20.0


def example(i):
    label = i % 3
    return [3.0 if d == label else 0.1 * (i % 7) for d in range(DIM)], LABELS[label]


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.calls = self.predicts = self.adapts = self.resent = self.failed = 0
        self.errors = []

    def add(self, field, n=1):
        with self.lock:
            setattr(self, field, getattr(self, field) + n)

    def fail(self, what, error):
        with self.lock:
            self.failed += 1
            if len(self.errors) < 5:
                self.errors.append("%s: %s" % (what, error))

    def report(self, routing):
        with self.lock:
            print(json.dumps({"calls": self.calls, "predicts": self.predicts,
                              "adapts": self.adapts, "resent": self.resent,
                              "failed": self.failed, "routing": routing,
                              "errors": list(self.errors)}), flush=True)


def call_plan(worker, workers, stores, n):
    """The n-th call of a worker: (store, adapt id or None for a predict, the example)."""
    store = "s%d" % ((worker + n * workers) % stores)
    x, y = example(n)
    return store, ("run-%d-%d" % (worker, n) if n % 4 == 3 else None), x, y


def over(counts, adapt_id, store, error, attempt, give_up):
    """After a failed attempt: False to resend it (an UnavailableError with attempts and time
    left, counted as a resend), True when the call failed (counted, with its message)."""
    if isinstance(error, UnavailableError) and attempt + 1 < RESEND_ATTEMPTS and \
            time.monotonic() <= give_up:
        counts.add("resent")
        return False
    counts.fail("%s %s" % ("adapt" if adapt_id else "predict", store), error)
    return True


def run_sync(args, counts, stop):
    client = Client(args.addr, timeout=20.0, route_to_holders=not args.no_route)
    for s in range(args.stores):
        setup_store_sync(client, args.tenant, "s%d" % s)

    def worker(w):
        n = 0
        while not stop.is_set():
            store, adapt_id, x, y = call_plan(w, args.workers, args.stores, n)
            n += 1
            counts.add("calls")
            time.sleep(args.pause_ms / 1000.0)
            if adapt_id is not None:
                call = lambda: client.adapt(args.tenant, store, [x], labels=[y], ids=[adapt_id])
            else:
                call = lambda: client.predict(args.tenant, store, [x])
            give_up = time.monotonic() + RESEND_WITHIN_S
            for attempt in range(RESEND_ATTEMPTS):
                time.sleep(0.25 * attempt)
                try:
                    call()
                    break
                except Exception as error:  # any failure: resent or counted, with its message
                    if over(counts, adapt_id, store, error, attempt, give_up):
                        break
            counts.add("adapts" if adapt_id is not None else "predicts")

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(args.workers)]
    for t in threads:
        t.start()
    serve_reports(counts, client.routing)
    stop.set()
    for t in threads:
        t.join()
    counts.report(client.routing())
    client.close()


def setup_store_sync(client, tenant, store):
    try:
        client.create_store(tenant, store, kind="faast", dim=DIM)
    except AlreadyExistsError:
        pass
    rows = [example(i) for i in range(12)]
    client.adapt(tenant, store, np.array([x for x, _ in rows]), labels=[y for _, y in rows],
                 ids=["init-%s-%d" % (store, i) for i in range(12)])
    try:
        client.compile(tenant, store)
    except FailedPreconditionError:
        pass


def serve_reports(counts, routing):
    """Answers "report" lines on stdin until it ends (from the main thread)."""
    counts.report(routing())  # the stores exist: the calls run
    for line in sys.stdin:
        if line.strip() == "report":
            counts.report(routing())


async def run_aio(args, counts):
    client = aio.Client(args.addr, timeout=20.0, route_to_holders=not args.no_route)
    for s in range(args.stores):
        store = "s%d" % s
        try:
            await client.create_store(args.tenant, store, kind="faast", dim=DIM)
        except AlreadyExistsError:
            pass
        rows = [example(i) for i in range(12)]
        await client.adapt(args.tenant, store, np.array([x for x, _ in rows]),
                           labels=[y for _, y in rows],
                           ids=["init-%s-%d" % (store, i) for i in range(12)])
        try:
            await client.compile(args.tenant, store)
        except FailedPreconditionError:
            pass
    stop = asyncio.Event()

    async def worker(w):
        n = 0
        while not stop.is_set():
            store, adapt_id, x, y = call_plan(w, args.workers, args.stores, n)
            n += 1
            counts.add("calls")
            await asyncio.sleep(args.pause_ms / 1000.0)
            give_up = time.monotonic() + RESEND_WITHIN_S
            for attempt in range(RESEND_ATTEMPTS):
                await asyncio.sleep(0.25 * attempt)
                try:
                    if adapt_id is not None:
                        await client.adapt(args.tenant, store, [x], labels=[y], ids=[adapt_id])
                    else:
                        await client.predict(args.tenant, store, [x])
                    break
                except Exception as error:  # any failure: resent or counted, with its message
                    if over(counts, adapt_id, store, error, attempt, give_up):
                        break
            counts.add("adapts" if adapt_id is not None else "predicts")

    tasks = [asyncio.ensure_future(worker(w)) for w in range(args.workers)]
    loop = asyncio.get_running_loop()
    # stdin is read on a thread; the reports print from there (the counts have their lock).
    await loop.run_in_executor(None, serve_reports, counts, client.routing)
    stop.set()
    await asyncio.gather(*tasks)
    counts.report(client.routing())
    await client.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--addr", required=True)
    parser.add_argument("--tenant", default="route-py")
    parser.add_argument("--stores", type=int, default=24)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--pause-ms", type=float, default=0.0,
                        help="a pause before each call (keeps the driver's CPU share small)")
    parser.add_argument("--aio", action="store_true")
    parser.add_argument("--no-route", action="store_true")
    args = parser.parse_args()
    counts = Counts()
    if args.aio:
        asyncio.run(run_aio(args, counts))
    else:
        run_sync(args, counts, threading.Event())


if __name__ == "__main__":
    main()
