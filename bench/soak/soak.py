"""Soak: ten minutes (by default) of bounded, mixed load on a real adaptd, with the server's
resident memory sampled every few seconds.

The load, each loop paced to a fixed rate so the machine is never saturated:
  - adapters stream labelled examples into faast, falcon and fwpkm stores;
  - predictors call Predict on every store;
  - a churn loop creates a store, adapts, compiles, exports it, imports the copy and deletes
    both, so store memory comes and goes;
  - a tenant with an examples-per-second quota is fed faster than its quota: its refusals
    (RESOURCE_EXHAUSTED) are counted apart, as the refusals the quotas mean to make.
Every other failed call is a failure. After a warm-up, RSS growth is measured from the median
of the first minute's samples after warm-up to the median of the last minute's.

Writes a Markdown report (default bench/soak/RESULTS-soak.md) and prints its verdict line.
Usage (Debian's python3 with python3-grpcio and python3-numpy):
  PYTHONPATH=build/client/python:client/python /usr/bin/python3 bench/soak/soak.py \
      --adaptd build/server/adaptd [--minutes 10] [--warmup-minutes 2] [--report FILE]
"""

import argparse
import collections
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from adaptd_client import AdaptdError, Client

DIM = 32
LABELS = 8


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.ok = collections.Counter()
        self.failed = collections.Counter()
        self.quota_refused = 0
        self.first_errors = []

    def record(self, name, fn, quota_expected=False):
        try:
            result = fn()
        except AdaptdError as error:
            with self.lock:
                if quota_expected and error.code_name == "RESOURCE_EXHAUSTED":
                    self.quota_refused += 1
                else:
                    self.failed[name] += 1
                    if len(self.first_errors) < 10:
                        self.first_errors.append("%s: %s: %s" % (name, error.code_name, error.message))
            return None
        with self.lock:
            self.ok[name] += 1
        return result


def paced(stop, period, body):
    next_time = time.monotonic()
    while not stop.is_set():
        body()
        next_time += period
        delay = next_time - time.monotonic()
        if delay > 0:
            stop.wait(delay)
        else:
            next_time = time.monotonic()


def batch(rng, n):
    x = rng.normal(size=(n, DIM)).astype(np.float32)
    labels = ["c%d" % int(v) for v in np.argmax(x[:, :LABELS], axis=1)]
    return x, labels


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--adaptd", default="build/server/adaptd")
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--warmup-minutes", type=float, default=2.0)
    parser.add_argument("--sample-seconds", type=float, default=5.0)
    parser.add_argument("--report", default=os.path.join(os.path.dirname(__file__),
                                                          "RESULTS-soak.md"))
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="adaptd-soak-")
    config = os.path.join(tmp, "config.json")
    with open(config, "w") as f:
        json.dump({"tenant_quotas": {"limited": {"examples_per_second": 50,
                                                  "examples_burst": 100}}}, f)
    address = "127.0.0.1:%d" % free_port()
    log = open(os.path.join(tmp, "adaptd.log"), "wb")
    server = subprocess.Popen(
        [args.adaptd, "--config", config, "--listen", address, "--metrics-listen", "off",
         "--data-dir", os.path.join(tmp, "data"), "--worker-threads", "2"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        return run(args, server, address)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def run(args, server, address):
    client = Client(address, timeout=30)
    client.wait_ready(timeout=30)
    counters = Counters()
    rng = np.random.default_rng(0)

    stores = [("soak", "faast", "faast", {"auto_compile_every": 512}),
              ("soak", "falcon", "falcon", {"variant": "1", "key_norm": "l2"}),
              # 32² slots: every slot is written during warm-up, so the store's own memory
              # (value rows appear as they are first written) is at its steady state.
              ("soak", "fwpkm", "fwpkm", {"sub_keys": 32})]
    for tenant, name, kind, params in stores:
        client.create_store(tenant, name, kind=kind, output="labels", dim=DIM, **params)
        x, labels = batch(rng, 256)
        client.adapt(tenant, name, x, labels=labels)
    client.compile("soak", "faast")
    client.compile("soak", "fwpkm")  # applies the partial first chunk, so Predict can read
    client.create_store("limited", "s", kind="falcon", output="labels", dim=DIM, variant="1")

    stop = threading.Event()
    threads = []

    def adapter(tenant, name, seed, period):
        local = np.random.default_rng(seed)

        def body():
            x, labels = batch(local, 64)
            counters.record("Adapt/" + name, lambda: client.adapt(tenant, name, x, labels=labels))
        return lambda: paced(stop, period, body)

    def predictor(seed):
        local = np.random.default_rng(seed)

        def body():
            for tenant, name, _, _ in stores:
                x, _ = batch(local, 16)
                counters.record("Predict/" + name,
                                lambda: client.predict(tenant, name, x, top_k=2))
        return lambda: paced(stop, 0.05, body)

    churn_round = [0]

    def churn():
        local = np.random.default_rng(7)
        kinds = ["faast", "falcon", "fwpkm"]

        def body():
            i = churn_round[0]
            churn_round[0] += 1
            kind = kinds[i % 3]
            name = "churn%d" % i
            params = {"variant": "2"} if kind == "falcon" else {}
            if counters.record("CreateStore", lambda: client.create_store(
                    "churn", name, kind=kind, output="labels", dim=DIM, **params)) is None:
                return
            x, labels = batch(local, 128)
            counters.record("Adapt/churn", lambda: client.adapt("churn", name, x, labels=labels))
            if kind == "faast":
                counters.record("Compile", lambda: client.compile("churn", name))
            data = counters.record("ExportStore", lambda: client.export_store("churn", name))
            if data is not None:
                counters.record("ImportStore",
                                lambda: client.import_store("churn", name + "-copy", data))
                counters.record("DeleteStore",
                                lambda: client.delete_store("churn", name + "-copy"))
            counters.record("DeleteStore", lambda: client.delete_store("churn", name))
        return lambda: paced(stop, 0.5, body)

    def over_quota():
        local = np.random.default_rng(11)

        def body():
            x, labels = batch(local, 20)
            counters.record("Adapt/limited",
                            lambda: client.adapt("limited", "s", x, labels=labels),
                            quota_expected=True)
        return lambda: paced(stop, 0.2, body)  # 100 examples/s against a quota of 50

    for fn in [adapter("soak", "faast", 1, 0.1), adapter("soak", "falcon", 2, 0.1),
               adapter("soak", "fwpkm", 3, 0.1), predictor(4), predictor(5), churn(),
               over_quota()]:
        t = threading.Thread(target=fn, daemon=True)
        t.start()
        threads.append(t)

    samples = []  # (seconds since start, rss bytes)
    store_samples = []  # sum of the long-lived stores' memory_bytes, at the same times
    start = time.monotonic()
    end = start + args.minutes * 60
    while time.monotonic() < end:
        if server.poll() is not None:
            break
        samples.append((time.monotonic() - start, rss_bytes(server.pid)))
        store_bytes = counters.record("GetStore", lambda: sum(
            int(client.get_store(tenant, name).get("memory_bytes", 0)) for tenant, name, _, _ in stores))
        store_samples.append(store_bytes or 0)
        time.sleep(args.sample_seconds)
    stop.set()
    for t in threads:
        t.join(60)
    alive = server.poll() is None
    if alive:
        server.terminate()
        exit_code = server.wait(60)
    else:
        exit_code = server.returncode

    warm = args.warmup_minutes * 60
    after = [(t, r) for t, r in samples if t >= warm]
    first = [r for t, r in after if t < warm + 60]
    last = [r for t, r in after if t >= samples[-1][0] - 60] if samples else []
    base = statistics.median(first) if first else float("nan")
    final = statistics.median(last) if last else float("nan")
    growth = (final - base) / base * 100 if first and last else float("nan")
    stores_at = {t: b for (t, _), b in zip(samples, store_samples)}
    store_base = statistics.median([stores_at[t] for t, _ in after if t < warm + 60] or [0])
    store_final = statistics.median(
        [stores_at[t] for t, _ in after if samples and t >= samples[-1][0] - 60] or [0])
    failed = sum(counters.failed.values())
    ok_calls = sum(counters.ok.values())
    verdict = ("PASS" if alive and exit_code == 0 and failed == 0 and growth < 5
               else "FAIL")

    lines = [
        "# Soak: %g minutes of bounded mixed load" % args.minutes,
        "",
        "Command (from the repository root; RelWithDebInfo build):",
        "",
        "```sh",
        "PYTHONPATH=%s /usr/bin/python3 bench/soak/soak.py "
        "--adaptd %s --minutes %g --warmup-minutes %g"
        % (os.environ.get("PYTHONPATH", ""), args.adaptd, args.minutes, args.warmup_minutes),
        "```",
        "",
        "Machine: %s, %d cores, %s. Server: `--worker-threads 2`, tenant `limited` with a "
        "quota of 50 examples/s (burst 100) fed 100 examples/s." % (
            platform.processor() or platform.machine(), os.cpu_count(), platform.platform()),
        "",
        "| figure | value | goal |",
        "| --- | --- | --- |",
        "| RSS after warm-up (median of minute %g-%g) | %.1f MiB | |" % (
            args.warmup_minutes, args.warmup_minutes + 1, base / 2**20),
        "| RSS at the end (median of the last minute) | %.1f MiB | |" % (final / 2**20),
        "| RSS growth after warm-up | %+.2f %% | < 5 %% |" % growth,
        "| RSS peak | %.1f MiB | |" % (max(r for _, r in samples) / 2**20 if samples else 0),
        "| long-lived stores' memory_bytes, after warm-up / at the end | %.2f / %.2f MiB | |" % (
            store_base / 2**20, store_final / 2**20),
        "| successful calls | %d | |" % ok_calls,
        "| failed calls (other than quota refusals) | %d | 0 |" % failed,
        "| quota refusals (RESOURCE_EXHAUSTED, tenant `limited`) | %d | > 0 |" % (
            counters.quota_refused),
        "| server exit status after SIGTERM | %s | 0 |" % (exit_code if alive else
                                                            "died during the run"),
        "| verdict | **%s** | |" % verdict,
        "",
        "Successful calls by kind: " + ", ".join(
            "%s %d" % kv for kv in sorted(counters.ok.items())) + ".",
        "",
    ]
    if counters.first_errors:
        lines += ["First failures:", ""] + ["- " + e for e in counters.first_errors] + [""]
    lines += ["RSS samples (seconds, MiB), every %g s:" % args.sample_seconds, "", "```",
              " ".join("%d:%.1f" % (t, r / 2**20) for t, r in samples), "```", ""]
    with open(args.report, "w") as f:
        f.write("\n".join(lines))
    print("soak %s: rss growth %+.2f%%, %d ok, %d failed, %d quota refusals -> %s" % (
        verdict, growth, ok_calls, failed, counters.quota_refused, args.report))
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
