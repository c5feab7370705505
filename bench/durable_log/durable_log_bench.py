#!/usr/bin/env python3
"""The durable log in etcd against the local log (docs/DURABLE_LOG.md; issue 37's figures).

Starts a 3-member etcd on loopback (each member with its own data directory on this disk) and
SeaweedFS (S3), then, side by side in one run, adaptd with the local default (the data
directory's WAL, fsync on) against adaptd with `--etcd-endpoints` and `--snapshot-store`:

  ack      Adapt acknowledgment latency p50/p99 and examples/s: `adaptctl bench` at --clients
           concurrent clients, each call one message of 16 examples (d = 64, faast), as many
           stores as clients, so each client writes its own store (the bench's clients cycle
           through the stores: client t always lands on store t). Rounds alternate local,
           etcd, local, etcd, ..., each on a fresh adaptd (a fresh data directory; for etcd
           also a fresh key prefix in etcd and the bucket).
  restore  Restore time at --stores stores over 10 tenants (each created with automatic
           compiles off, fed --examples examples and compiled): the server that filled them
           killed with SIGKILL, then started again, and again after a SIGTERM each later
           round: the local default on its own data directory, etcd on an empty one; the
           seconds from the exec until grpc.health answers SERVING and until a Predict on a
           random store answers. Restarts alternate local, etcd, local, etcd, ...
  steady   etcd's database size (Maintenance Status dbSize and dbSizeInUse of each member),
           the keys under the prefix, and the objects in the bucket, sampled every --sample
           seconds under a steady Adapt load of --rate calls/s for --steady-seconds over
           --steady-stores stores, so that the stores' logs pass their snapshot bound and
           are trimmed while it runs.

Prints progress on stderr and writes every figure as JSON to --out.

Usage: PYTHONPATH=build/client/python:client/python:bench/durable_log \\
         /usr/bin/python3 bench/durable_log/durable_log_bench.py --build build --out FILE.json
(bench/durable_log/run.sh sets the paths and renders the tables).
"""

import argparse
import concurrent.futures
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

from adaptd_client._stubs import pb
import services as S

DIM = 64
LABELS = ["label%d" % i for i in range(16)]


def log(*parts):
    print(time.strftime("%H:%M:%S"), *parts, file=sys.stderr, flush=True)


def load_average():
    return [float(x) for x in open("/proc/loadavg").read().split()[:3]]


class Run:
    """The shared services and what each side of the comparison starts."""

    def __init__(self, args, work):
        self.args, self.work = args, work
        # Copies, so that a rebuild of the build tree during the run changes nothing.
        self.adaptd = shutil.copy(os.path.join(args.build, "server", "adaptd"), work)
        self.adaptctl = shutil.copy(os.path.join(args.build, "client", "adaptctl", "adaptctl"),
                                    work)
        log("starting a 3-member etcd and SeaweedFS under", work)
        self.etcd = S.Etcd(os.path.join(args.build, "etcd", "usr", "bin", "etcd"), work)
        self.s3 = S.SeaweedFs(os.path.join(args.build, "seaweedfs", "weed"), work)
        self.serial = 0

    def start(self, mode, prefix, data_dir=None):
        """A fresh adaptd of `mode` (a fresh data directory unless `data_dir`)."""
        self.serial += 1
        if data_dir is None:
            data_dir = os.path.join(self.work, "data-%d" % self.serial)
        server = S.Adaptd(self.adaptd, data_dir,
                          os.path.join(self.work, "adaptd-%s-%d.log" % (mode, self.serial)),
                          mode, self.etcd, self.s3, prefix)
        server.data_dir = data_dir
        server.serving_s = server.wait_serving()
        return server

    def close(self):
        self.s3.close()
        self.etcd.close()


def ack(run, a):
    rows = []
    for r in range(1, a.rounds + 1):
        for mode in ("local", "etcd"):
            server = run.start(mode, "ack-%d" % r)
            log("ack round %d, %s: adaptctl bench at %d clients" % (r, mode, a.clients))
            before = load_average()
            out = subprocess.run(
                [run.adaptctl, "--addr", server.address, "--timeout", "60", "bench",
                 "--concurrency", str(a.clients), "--stores", str(a.clients), "--kind", "faast",
                 "--dim", str(DIM), "--labels", str(len(LABELS)), "--adapt-examples",
                 str(a.adapt_examples), "--duration", str(a.duration)],
                capture_output=True, text=True)
            server.stop()
            if out.returncode != 0:
                sys.exit("adaptctl bench failed: " + out.stderr[-2000:])
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row.update(mode=mode, round=r, load_before=before, load_after=load_average())
            log("  adapt p50 %.2f ms, p99 %.2f ms, %.0f examples/s, errors %d" % (
                row["adapt_p50_ms"], row["adapt_p99_ms"], row["adapt_examples_per_s"],
                row["adapt_errors"]))
            rows.append(row)
            shutil.rmtree(server.data_dir, ignore_errors=True)
    return rows


def vectors(rng, n):
    return rng.normal(size=(n, DIM)).astype(np.float32)


def populate(server, a):
    """--stores stores over 10 tenants, each fed --examples examples and compiled."""
    names = [("t%d" % (i % 10), "s%d" % i) for i in range(a.stores)]
    begin = time.monotonic()

    def one(i):
        rng = np.random.default_rng(i)
        tenant, store = names[i]
        with_client = clients[i % len(clients)]
        with_client.create_store(tenant, store, kind="faast", dim=DIM, auto_compile_every=0)
        with_client.adapt(tenant, store, vectors(rng, a.examples),
                          labels=[LABELS[j % 4] for j in range(a.examples)])
        with_client.compile(tenant, store)

    clients = [server.client() for _ in range(4)]
    with concurrent.futures.ThreadPoolExecutor(a.setup_threads) as pool:
        for done, _ in enumerate(pool.map(one, range(a.stores)), 1):
            if done % 2000 == 0:
                log("  %d stores" % done)
    for c in clients:
        c.close()
    return names, time.monotonic() - begin


def first_predict(server, names, rng, limit=300.0):
    """Seconds from the server's exec until a Predict on a random store answers."""
    tenant, store = names[rng.randrange(len(names))]
    x = vectors(np.random.default_rng(0), 1)
    with server.client(timeout=limit) as c:
        c.predict(tenant, store, x)
    return time.monotonic() - server.started, "%s/%s" % (tenant, store)


def restore(run, a):
    rng = random.Random(37)
    setup = {}
    data = {}
    names = None
    for mode in ("local", "etcd"):
        server = run.start(mode, "restore")
        log("restore: creating %d stores (%s)" % (a.stores, mode))
        names, seconds = populate(server, a)
        # SIGKILL: the first restart recovers from a crash, the later ones from a SIGTERM.
        server.kill()
        setup[mode] = {"populate_s": seconds}
        if mode == "etcd":
            setup[mode]["etcd_keys"] = run.etcd.count("/restore/")
            setup[mode]["objects"] = run.s3.count("restore/")[0]
        data[mode] = server.data_dir
        log("  %.1f s" % seconds)
    rows = []
    for r in range(1, a.restore_rounds + 1):
        for mode in ("local", "etcd"):
            if mode == "etcd":
                shutil.rmtree(data[mode], ignore_errors=True)  # an empty data directory
            before = load_average()
            server = run.start(mode, "restore", data_dir=data[mode])
            predict_s, store = first_predict(server, names, rng)
            row = {"mode": mode, "round": r, "after": "SIGKILL" if r == 1 else "SIGTERM",
                   "serving_s": server.serving_s,
                   "predict_s": predict_s, "store": store, "load_before": before}
            row["stop_s"] = server.stop()
            log("restore round %d (after %s), %s: serving after %.2f s, a Predict on %s after "
                "%.2f s" % (r, row["after"], mode, server.serving_s, store, predict_s))
            rows.append(row)
    return {"setup": setup, "rounds": rows}


def steady(run, a):
    server = run.start("etcd", "steady")
    names = [("steady", "s%d" % i) for i in range(a.steady_stores)]
    rng = np.random.default_rng(1)
    with server.client() as c:
        for tenant, store in names:
            c.create_store(tenant, store, kind="faast", dim=DIM)
            c.adapt(tenant, store, vectors(rng, 16), labels=LABELS)
            c.compile(tenant, store)
    requests = []
    for k in range(64):
        x = vectors(rng, a.adapt_examples)
        requests.append([pb.Example(input=pb.Input(vector=pb.FloatVector(values=row.tolist())),
                                    label=LABELS[(k + j) % len(LABELS)])
                         for j, row in enumerate(x)])
    stop_at = time.monotonic() + a.steady_seconds
    lock = threading.Lock()
    latencies, errors, first_error = [], [0], []
    threads = 4
    interval = threads / a.rate

    def writer(t):
        with server.client(timeout=30) as c:
            n, due = t, time.monotonic() + t * interval / threads
            while True:
                now = time.monotonic()
                if now >= stop_at:
                    return
                if due > now:
                    time.sleep(due - now)
                due += interval
                tenant, store = names[n % len(names)]
                request = pb.AdaptRequest(tenant=tenant, store=store,
                                          examples=requests[n % len(requests)])
                n += threads
                begin = time.monotonic()
                try:
                    c._stub.Adapt(iter([request]), timeout=30)
                    with lock:
                        latencies.append(time.monotonic() - begin)
                except Exception as e:  # counted; the load goes on
                    with lock:
                        errors[0] += 1
                        if not first_error:
                            first_error.append(str(e)[:300])

    workers = [threading.Thread(target=writer, args=(t,)) for t in range(threads)]
    begin = time.monotonic()
    for w in workers:
        w.start()
    samples = []
    while True:
        elapsed = time.monotonic() - begin
        status = run.etcd.status()
        objects, object_bytes = run.s3.count("steady/")
        with lock:
            done = list(latencies)
        sample = {
            "t_s": round(elapsed, 1), "calls": len(done), "errors": errors[0],
            "db_size": [int(s["dbSize"]) for s in status],
            "db_in_use": [int(s["dbSizeInUse"]) for s in status],
            "revision": int(status[0]["header"]["revision"]),
            "keys": run.etcd.count("/steady/"), "log_keys": run.etcd.count("/steady/log/"),
            "objects": objects, "object_bytes": object_bytes, "load": load_average()}
        samples.append(sample)
        log("steady %4.0f s: %d calls, db %s / in use %s, %d keys (%d log), %d objects" % (
            elapsed, sample["calls"], max(sample["db_size"]), max(sample["db_in_use"]),
            sample["keys"], sample["log_keys"], objects))
        if elapsed >= a.steady_seconds + a.sample:
            break
        time.sleep(max(0.0, a.sample - (time.monotonic() - begin - elapsed)))
    for w in workers:
        w.join()
    server.stop()
    # What etcd would hold once its history is compacted (adaptd does not compact it itself:
    # slice 6 of docs/DURABLE_LOG.md): compact to the current revision, then read the status.
    revision = int(run.etcd.status()[0]["header"]["revision"])
    run.etcd.post(run.etcd.client_urls[0], "/v3/kv/compaction",
                  {"revision": revision, "physical": True})
    compacted = run.etcd.status()
    after = {"revision": revision, "db_size": [int(x["dbSize"]) for x in compacted],
             "db_in_use": [int(x["dbSizeInUse"]) for x in compacted],
             "keys": run.etcd.count("/steady/"), "objects": run.s3.count("steady/")[0]}
    log("after the stop and a compaction: db %s, in use %s" % (after["db_size"], after["db_in_use"]))
    ms = sorted(1000 * x for x in latencies)
    return {"samples": samples, "calls": len(ms), "errors": errors[0],
            "first_error": first_error[0] if first_error else "",
            "p50_ms": ms[len(ms) // 2] if ms else None,
            "p99_ms": ms[int(len(ms) * 0.99)] if ms else None,
            "rate": a.rate, "stores": a.steady_stores, "seconds": a.steady_seconds,
            "after_stop_and_compaction": after}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--out", required=True)
    p.add_argument("--parts", default="ack,restore,steady")
    p.add_argument("--clients", type=int, default=64)
    p.add_argument("--adapt-examples", type=int, default=16)
    p.add_argument("--duration", type=float, default=15, help="seconds of each bench phase")
    p.add_argument("--rounds", type=int, default=3, help="ack rounds (local then etcd)")
    p.add_argument("--stores", type=int, default=10000)
    p.add_argument("--examples", type=int, default=4, help="examples per restored store")
    p.add_argument("--setup-threads", type=int, default=16)
    p.add_argument("--restore-rounds", type=int, default=2)
    p.add_argument("--rate", type=float, default=100, help="steady Adapt calls/s")
    p.add_argument("--steady-stores", type=int, default=16)
    p.add_argument("--steady-seconds", type=float, default=360)
    p.add_argument("--sample", type=float, default=30, help="seconds between steady samples")
    p.add_argument("--work", default="", help="keep the services' files here (else a temp dir)")
    a = p.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="adaptd-durable-log-")
    os.makedirs(work, exist_ok=True)
    run = Run(a, work)
    results = {"args": vars(a), "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "cpu": subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'"],
                                     capture_output=True, text=True).stdout.strip(),
               "cores": os.cpu_count(),
               "commit": subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)),
                                         "log", "-1", "--format=%h"], capture_output=True,
                                        text=True).stdout.strip(),
               "adaptd_built": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(os.path.getmtime(
                   os.path.join(a.build, "server", "adaptd"))))}
    try:
        for part in a.parts.split(","):
            results[part] = {"ack": ack, "restore": restore, "steady": steady}[part](run, a)
            with open(a.out, "w") as f:
                json.dump(results, f, indent=1)
    finally:
        run.close()
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    results["finished"] = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
