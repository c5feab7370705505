#!/usr/bin/python3
"""Cluster hand-off: settling 3 -> 4 members with many stores (bench/RESULTS.md, "Cluster
hand-off").

Starts members a, b, c on loopback, creates --stores small stores (faast and falcon in turn,
d = 8, --examples examples each, through the generated stubs), then does what a StatefulSet
roll does: starts d with the four-member list and restarts c, b, a with it one at a time. It
prints one JSON line: how many stores moved (those whose owner became d) and the time from
d's start until `ClusterStatus` says settled; then drains d (its stores move back) and times
the drain; and, side by side on the same machine, the stores per second of a client doing the
same work itself through one member (ExportStore, ImportStore under another name, DeleteStore
of the copy; one after the other).

  PYTHONPATH=build/client/python bench/cluster/handoff_bench.py --adaptd build/server/adaptd \\
      [--stores 10000] [--examples 8]
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import grpc
from adapt.v1 import adapt_pb2, adapt_pb2_grpc

DIM = 8


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Members:
    def __init__(self, adaptd, tmp, names, fsync, extra=(), interval_ms=200):
        self.adaptd, self.tmp, self.fsync = adaptd, tmp, fsync
        self.extra, self.interval_ms = list(extra), interval_ms
        self.addr = {m: "127.0.0.1:%d" % free_port() for m in names}
        self.procs = {}

    def start(self, m, members):
        listed = ",".join("%s=%s" % (n, self.addr[n]) for n in members)
        self.procs[m] = subprocess.Popen(
            [self.adaptd, "--listen", self.addr[m], "--metrics-listen", "off", "--data-dir",
             os.path.join(self.tmp, "data-" + m), "--cluster-self", m, "--cluster-members",
             listed, "--fsync", self.fsync, "--handoff-interval-ms", str(self.interval_ms)] +
            self.extra,
            stdout=open(os.path.join(self.tmp, m + ".log"), "a"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            try:
                self.stub(m).Ping(adapt_pb2.PingRequest(), timeout=5, wait_for_ready=True)
                return
            except grpc.RpcError:
                if self.procs[m].poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("adaptd %s did not start (see %s)" % (m, self.tmp))
                time.sleep(0.1)

    def stop(self, m):
        proc = self.procs.pop(m)
        proc.terminate()
        proc.wait(timeout=300)

    def stub(self, m):
        return adapt_pb2_grpc.AdaptationStub(grpc.insecure_channel(self.addr[m]))

    def settled(self, m):
        try:
            return self.stub(m).ClusterStatus(adapt_pb2.ClusterStatusRequest(), timeout=30)
        except grpc.RpcError:
            return None


def retrying(call, *args, **kwargs):
    while True:
        try:
            return call(*args, **kwargs)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.UNAVAILABLE:
                raise
            time.sleep(0.05)


def fill(stub, tenant, store, kind, examples):
    spec = adapt_pb2.StoreSpec(kind=kind, encoder="identity", dim=DIM)
    spec.output.kind = adapt_pb2.OutputSpec.KIND_LABELS
    retrying(stub.CreateStore, adapt_pb2.CreateStoreRequest(tenant=tenant, store=store, spec=spec),
             timeout=30)
    request = adapt_pb2.AdaptRequest(tenant=tenant, store=store)
    for i in range(examples):
        ex = request.examples.add(id=str(i), label="ab"[i % 2])
        ex.input.vector.values.extend([float((i + j) % 3) for j in range(DIM)])
    retrying(stub.Adapt, iter([request]), timeout=30)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adaptd", required=True)
    parser.add_argument("--stores", type=int, default=10000)
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--fsync", default="on")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="adaptd-handoff-bench-")
    three, four = ["a", "b", "c"], ["a", "b", "c", "d"]
    cluster = Members(args.adaptd, tmp, four, args.fsync)
    try:
        for m in three:
            cluster.start(m, three)
        while not (cluster.settled("a") and cluster.settled("a").settled):
            time.sleep(0.2)
        stubs = [cluster.stub(m) for m in three]
        kinds = [adapt_pb2.STORE_KIND_FAAST, adapt_pb2.STORE_KIND_FALCON]
        t0 = time.monotonic()
        for i in range(args.stores):
            fill(stubs[i % 3], "t%d" % (i % 50), "s%05d" % i, kinds[i % 2], args.examples)
        fill_s = time.monotonic() - t0

        def wait_settled():
            while True:
                status = cluster.settled("a")
                if status is not None and status.settled:
                    return status
                time.sleep(0.1)

        # The roll: d joins, then c, b, a restart with the four-member list.
        rolled = time.monotonic()
        cluster.start("d", four)
        for m in reversed(three):
            cluster.stop(m)
            cluster.start(m, four)
        restarted = time.monotonic()
        status = wait_settled()
        roll_s = time.monotonic() - rolled
        after_restarts_s = time.monotonic() - restarted
        moved_in_roll = sum(m.moved_out for m in status.members)
        on_d = next(m.stores for m in status.members if m.name == "d")

        # A drain of d: its stores move back, timed from the call to its answer.
        t0 = time.monotonic()
        drained = cluster.stub("b").DrainMember(
            adapt_pb2.DrainMemberRequest(member="d", wait=True), timeout=3600)
        drain_s = time.monotonic() - t0
        assert drained.status.settled, drained

        # Side by side: a client moving as many stores itself through member a (ExportStore,
        # ImportStore under another name, DeleteStore of the copy: the same reads and durable
        # writes as a hand-off), one after the other.
        a = cluster.stub("a")
        t0 = time.monotonic()
        for i in range(on_d):
            tenant, store = "t%d" % (i % 50), "s%05d" % i
            data = b"".join(c.data for c in a.ExportStore(
                adapt_pb2.ExportStoreRequest(tenant=tenant, store=store), timeout=60))
            copy = adapt_pb2.StoreChunk(tenant="copy", store=store, data=data)
            a.ImportStore(iter([copy]), timeout=60)
            a.DeleteStore(adapt_pb2.DeleteStoreRequest(tenant="copy", store=store), timeout=60)
        client_s = time.monotonic() - t0
        print(json.dumps({
            "stores": args.stores, "examples_per_store": args.examples, "fsync": args.fsync,
            "fill_s": round(fill_s, 1),
            "roll_3_to_4": {"moved": moved_in_roll, "seconds_to_settled": round(roll_s, 2),
                            "settled_after_last_restart_s": round(after_restarts_s, 2)},
            "drain": {"moved": on_d, "seconds": round(drain_s, 2),
                      "moves_per_s": round(on_d / drain_s, 1)},
            "client_export_import_delete_per_s": round(on_d / client_s, 1),
            "drain_over_client": round((on_d / drain_s) / (on_d / client_s), 2)}))
    finally:
        for m in list(cluster.procs):
            cluster.stop(m)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
