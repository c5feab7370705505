#!/usr/bin/python3
"""Cluster-wide tenant quotas (bench/RESULTS.md, "Cluster quotas"; docs/CLUSTER.md, "Quotas").

Starts members a, b, c on loopback with one quota config and the default exchange interval
(--interval-ms, 1000), then measures, for one tenant each:

- examples per second: a client per member adapts to a store that member owns, as fast as the
  quota lets it (10 examples a message; a refused message is sent again after 20 ms), for
  --seconds; the examples granted in the last part of the run (after --warmup seconds) per
  second, over the limit. Two loads: every client flat out, and one flat out with the other two
  asking a tenth of the limit each.
- memory: stores owned by the members in turn, each grown by 30 examples of d = 64 (about
  54 kB), one every --create-gap-ms, until refused; the tenant's memory across the cluster at
  that point over its limit, once with a gap under the exchange interval and once above it.
- stores: --creates concurrent creates through the three members against a limit of --max-stores;
  how many succeeded.

  PYTHONPATH=build/client/python bench/cluster/quota_bench.py --adaptd build/server/adaptd
"""
import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time

import grpc
from adapt.v1 import adapt_pb2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from handoff_bench import Members  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "e2e", "cluster"))
from cluster_e2e_test import owner_of  # noqa: E402  (the documented rendezvous weight)

DIM = 8
MEMBERS = ["a", "b", "c"]


def spec(dim):
    s = adapt_pb2.StoreSpec(kind=adapt_pb2.STORE_KIND_FAAST, encoder="identity", dim=dim)
    s.output.kind = adapt_pb2.OutputSpec.KIND_LABELS
    return s


def owned(tenant, prefix, member):
    return next("%s%d" % (prefix, i) for i in range(100000)
                if owner_of("%s/%s%d" % (tenant, prefix, i)) == member)


def rate_run(cluster, tenant, limit, seconds, warmup, slow_rate):
    """Examples granted per second after `warmup`, a client per member; `slow_rate` (examples
    per second) paces the clients of b and c (None: flat out)."""
    stores = {m: owned(tenant, "r", m) for m in MEMBERS}
    for m in MEMBERS:
        cluster.stub("a").CreateStore(adapt_pb2.CreateStoreRequest(
            tenant=tenant, store=stores[m], spec=spec(DIM)), timeout=30)
    start = time.monotonic()
    granted = {m: 0 for m in MEMBERS}
    stop = start + seconds

    def client(m):
        stub = cluster.stub(m)
        rng = random.Random(m)
        pace = slow_rate if (slow_rate and m != "a") else None
        sent = 0
        while time.monotonic() < stop:
            if pace:
                due = start + sent / pace
                if due > time.monotonic():
                    time.sleep(due - time.monotonic())
            request = adapt_pb2.AdaptRequest(tenant=tenant, store=stores[m])
            for _ in range(10):
                e = request.examples.add(label=rng.choice("ab"))
                e.input.vector.values.extend([rng.random() for _ in range(DIM)])
            sent += 10
            try:
                n = stub.Adapt(iter([request]), timeout=30).accepted
                if time.monotonic() - start >= warmup:
                    granted[m] += n
            except grpc.RpcError as e:
                if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                    raise
                time.sleep(0.02)

    threads = [threading.Thread(target=client, args=(m,)) for m in MEMBERS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    window = seconds - warmup
    total = sum(granted.values()) / window
    return {"granted_per_s": round(total, 1), "over_limit": round(total / limit, 3),
            "per_member_per_s": {m: round(g / window, 1) for m, g in granted.items()}}


def memory_run(cluster, tenant, limit, gap_s):
    """Stores owned by the members in turn, each grown by 30 examples of d = 64, one every
    `gap_s`, until a create or an adapt is refused; the tenant's memory then over its limit."""
    sizes = []
    rng = random.Random(7)
    while True:
        m = MEMBERS[len(sizes) % 3]
        store = owned(tenant, "m%d-" % len(sizes), m)
        stub = cluster.stub(m)
        request = adapt_pb2.AdaptRequest(tenant=tenant, store=store)
        for _ in range(30):
            e = request.examples.add(label=rng.choice("abc"))
            e.input.vector.values.extend([rng.random() for _ in range(64)])
        try:
            stub.CreateStore(adapt_pb2.CreateStoreRequest(
                tenant=tenant, store=store, spec=spec(64)), timeout=30)
            stub.Adapt(iter([request]), timeout=30)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise
            break
        sizes.append(stub.GetStore(adapt_pb2.GetStoreRequest(tenant=tenant, store=store),
                                   timeout=30).memory_bytes)
        time.sleep(gap_s)
    time.sleep(1)  # automatic compiles
    held = sum(stub.memory_bytes for stub in (
        cluster.stub("a").GetStore(adapt_pb2.GetStoreRequest(
            tenant=tenant, store=s.store), timeout=30)
        for s in cluster.stub("a").ListStores(adapt_pb2.ListStoresRequest(
            tenant=tenant, page_size=1000), timeout=30).stores))
    return {"stores": len(sizes), "store_bytes": sizes[0] if sizes else 0,
            "held_over_limit": round(held / limit, 3)}


def stores_run(cluster, tenant, creates):
    ok = []

    def create(i):
        try:
            cluster.stub(MEMBERS[i % 3]).CreateStore(adapt_pb2.CreateStoreRequest(
                tenant=tenant, store="s%04d" % i, spec=spec(DIM)), timeout=60)
            ok.append(i)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                raise

    threads = [threading.Thread(target=create, args=(i,)) for i in range(creates)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(ok)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adaptd", required=True)
    parser.add_argument("--rate", type=float, default=500)
    parser.add_argument("--seconds", type=float, default=25)
    parser.add_argument("--warmup", type=float, default=5)
    parser.add_argument("--memory", type=int, default=2000000)
    parser.add_argument("--create-gap-ms", type=int, default=100)
    parser.add_argument("--max-stores", type=int, default=20)
    parser.add_argument("--creates", type=int, default=60)
    parser.add_argument("--interval-ms", type=int, default=1000)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="adaptd-quota-bench-")
    config = os.path.join(tmp, "config.json")
    with open(config, "w") as f:
        json.dump({"tenant_quotas": {
            "flat": {"examples_per_second": args.rate},
            "skew": {"examples_per_second": args.rate},
            "mem%d" % args.create_gap_ms: {"max_memory_bytes": args.memory},
            "mem%d" % (2 * args.interval_ms): {"max_memory_bytes": args.memory},
            "cnt": {"max_stores": args.max_stores}}}, f)
    cluster = Members(args.adaptd, tmp, MEMBERS, "on", ["--config", config], args.interval_ms)
    try:
        for m in MEMBERS:
            cluster.start(m, MEMBERS)
        while not (cluster.settled("a") and cluster.settled("a").settled):
            time.sleep(0.2)
        out = {"interval_ms": args.interval_ms, "rate_limit": args.rate}
        out["rate_all_flat_out"] = rate_run(cluster, "flat", args.rate, args.seconds,
                                            args.warmup, None)
        out["rate_one_flat_out_two_slow"] = rate_run(cluster, "skew", args.rate, args.seconds,
                                                     args.warmup, args.rate / 10)
        out["memory_limit"] = args.memory
        for gap_ms in (args.create_gap_ms, 2 * args.interval_ms):
            out["memory_gap_%dms" % gap_ms] = memory_run(cluster, "mem%d" % gap_ms, args.memory,
                                                         gap_ms / 1000)
        out["stores"] = {"limit": args.max_stores, "concurrent_creates": args.creates,
                         "created": stores_run(cluster, "cnt", args.creates)}
        print(json.dumps(out))
    finally:
        for m in list(cluster.procs):
            cluster.stop(m)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
