#!/usr/bin/env python3
"""The cluster on etcd's figures (docs/CLUSTER_ETCD.md; issue 38, "Figures").

Starts a 3-member etcd and SeaweedFS on loopback (bench/durable_log/services.py) and three
adaptd members registered in etcd (--cluster-self, --advertise-address, the default
--etcd-lease-ttl of 5 s, --cluster-settle and --restart-grace), then, in one run:

  setup     --stores faast stores (dim 4) over --tenants tenants, each created, fed one
            Adapt call of 4 examples (with ids) and compiled, through the members in turn (so
            about two thirds of the calls are forwarded), from --setup-threads client threads.
  forward   Adapt (one example, a fresh id) and Predict through the member that holds the
            stores (direct) against through another member (each call forwarded to the
            holder): --forward-stores stores of one shard holder, --forward-threads client
            threads, rounds alternating direct, forwarded, direct, ... of --forward-seconds
            each; p50 latency and calls/s. Also `adaptctl bench --store` (Predict only, C++
            client) against the same stores both ways, and routing clients
            (docs/CLUSTER_OPERATIONS.md, "Clients route to holders"): `adaptctl bench
            --via-client --adapt-examples 1` (Predict, then Adapt, through adaptd::Client)
            given another member, routing each call to the holder ("routed"), against the
            holder itself with --no-route ("direct"); goal: routed at least 0.95x direct.
            The same for the Python client (adaptd_client.Client, predict and adapt of one
            example, from --forward-threads threads): given another member, routing, against
            given the holder with route_to_holders=False.
  failover  One member SIGKILLed and its data directory deleted. From the kill, every store
            of a shard it held (by the claims in etcd just before) is called by client
            threads through the two members left, Adapt then Predict, each store tried again
            every --retry-ms while UNAVAILABLE (or past a call's deadline): the seconds from the
            kill to each store's first successful Adapt and to its first successful Predict
            after it. Also when etcd held every shard's claim again.
  restart   The killed member started again on an empty data directory (it wins its shards
            back once its settle time passed), then a rolling restart: each member in turn
            stopped with SIGTERM and started again within the grace: the shards whose holder
            differs between before and after (goal 0).
  join      A fourth member starts: the shards that changed holder once every shard is held
            by its desired owner of four (goal about 1/4, all to the new member).

Prints progress on stderr and writes every figure as JSON to --out.

Usage: bench/cluster_etcd/run.sh [BUILD_DIR] [cluster_etcd_bench.py ARGS...]
"""

import argparse
import base64
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

import grpc

from adaptd_client._stubs import pb, pb_grpc
import services as S

DIM = 4
SHARDS = 4096
PREFIX = "/cluster/"
LABELS = ["label0", "label1", "label2"]


def log(*parts):
    print(time.strftime("%H:%M:%S"), *parts, file=sys.stderr, flush=True)


def load_average():
    return [float(x) for x in open("/proc/loadavg").read().split()[:3]]


def shard_of(tenant, store):
    """fnv1a64("tenant/store") mod 4096, as server/cluster/shard_claims.cc's ShardOf."""
    h = 0xcbf29ce484222325
    for b in ("%s/%s" % (tenant, store)).encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h % SHARDS


def percentile(values, q):
    if not values:
        return None
    s = sorted(values)
    return s[min(len(s) - 1, int(round(q * (len(s) - 1))))]


def summary(values):
    if not values:
        return {"n": 0}
    return {"n": len(values), "median": statistics.median(values), "p90": percentile(values, 0.9),
            "max": max(values), "min": min(values)}


class Member:
    """One adaptd registered in the cluster under `name`; started again on the same port."""

    def __init__(self, binary, work, name, etcd, s3, extra):
        self.binary, self.work, self.name, self.etcd, self.s3 = binary, work, name, etcd, s3
        self.extra = extra
        self.address = "127.0.0.1:%d" % S.free_ports(1)[0]
        self.data_dir = os.path.join(work, name)
        self.log_path = os.path.join(work, name + ".log")
        self.process = None
        self.channel = grpc.insecure_channel(self.address)
        self.stub = pb_grpc.AdaptationStub(self.channel)

    def start(self):
        args = [self.binary, "--listen", self.address, "--metrics-listen", "off",
                "--data-dir", self.data_dir,
                "--etcd-endpoints", ",".join(self.etcd.client_urls), "--etcd-prefix", PREFIX,
                "--snapshot-store", "s3://%s/c" % S.BUCKET, "--s3-endpoint", self.s3.endpoint,
                "--cluster-self", self.name, "--advertise-address", self.address] + self.extra
        env = dict(os.environ, AWS_ACCESS_KEY_ID=S.ACCESS_KEY,
                   AWS_SECRET_ACCESS_KEY=S.SECRET_KEY)
        self.process = subprocess.Popen(args, env=env, stdout=open(self.log_path, "ab"),
                                        stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                sys.exit("%s exited: %s" % (self.name,
                                            open(self.log_path, errors="replace").read()[-3000:]))
            try:
                self.stub.ListStores(pb.ListStoresRequest(tenant="probe"), timeout=2)
                return
            except grpc.RpcError:
                time.sleep(0.1)
        sys.exit("%s did not answer within 120 s (log: %s)" % (self.name, self.log_path))

    def kill(self):
        S.kill(self.process)

    def stop(self):
        return S.stop(self.process, grace=120)


def claims(etcd):
    """Each shard's holder ({"0000": "m0", ...}) by the claims in etcd (JSON gateway range;
    a ShardClaim's field 1 is the member's name)."""
    key = (PREFIX + "claims/").encode()
    end = key[:-1] + bytes([key[-1] + 1])
    answer = etcd.post(etcd.client_urls[0], "/v3/kv/range", {
        "key": base64.b64encode(key).decode(), "range_end": base64.b64encode(end).decode()})
    holders = {}
    for kv in answer.get("kvs", []):
        k = base64.b64decode(kv["key"]).decode()
        v = base64.b64decode(kv.get("value", ""))
        assert v[0] == 0x0A, "unexpected ShardClaim encoding"
        holders[k.rsplit("/", 1)[1]] = v[2:2 + v[1]].decode()
    return holders


def wait_held_by(etcd, names, limit=180.0):
    """Waits until every shard is claimed and the holders are exactly `names`; the holders
    and the seconds the wait took."""
    begin = time.monotonic()
    while True:
        held = claims(etcd)
        if len(held) == SHARDS and set(held.values()) == set(names):
            return held, time.monotonic() - begin
        if time.monotonic() - begin > limit:
            counts = {}
            for m in held.values():
                counts[m] = counts.get(m, 0) + 1
            sys.exit("claims did not settle on %s within %.0f s: %s" % (names, limit, counts))
        time.sleep(0.2)


def wait_settled(member, limit=180.0):
    begin = time.monotonic()
    while time.monotonic() - begin < limit:
        try:
            status = member.stub.ClusterStatus(pb.ClusterStatusRequest(), timeout=20)
            if status.settled and all(m.state == "READY" for m in status.members):
                return time.monotonic() - begin
        except grpc.RpcError:
            pass
        time.sleep(0.5)
    sys.exit("the cluster did not settle within %.0f s" % limit)


def moved(before, after):
    out = {}
    for shard, holder in before.items():
        to = after.get(shard, "nobody")
        if to != holder:
            out["%s -> %s" % (holder, to)] = out.get("%s -> %s" % (holder, to), 0) + 1
    return out


def examples(rng, n, tag):
    return [pb.Example(input=pb.Input(vector=pb.FloatVector(
        values=[rng.choice((-1.0, -0.5, 0.5, 1.0)) for _ in range(DIM)])),
        label=LABELS[i % len(LABELS)], id="%s-%d" % (tag, i)) for i in range(n)]


def query(rng):
    return pb.Input(vector=pb.FloatVector(values=[rng.uniform(-1, 1) for _ in range(DIM)]))


def retrying(call, limit=120.0):
    """call() until it answers, retrying UNAVAILABLE and DEADLINE_EXCEEDED every 100 ms."""
    deadline = time.monotonic() + limit
    while True:
        try:
            return call()
        except grpc.RpcError as e:
            if (e.code() not in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
                    or time.monotonic() > deadline):
                raise
            time.sleep(0.1)


def run_threads(n, target):
    threads = [threading.Thread(target=target, args=(t,)) for t in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def setup(members, names, threads):
    rng_lock = threading.Lock()
    errors = []

    def work(t):
        rng = random.Random(t)
        for i in range(t, len(names), threads):
            tenant, store = names[i]
            stub = members[i % len(members)].stub
            try:
                try:
                    retrying(lambda: stub.CreateStore(pb.CreateStoreRequest(
                        tenant=tenant, store=store,
                        spec=pb.StoreSpec(kind=pb.STORE_KIND_FAAST, dim=DIM)), timeout=30))
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.ALREADY_EXISTS:
                        raise
                request = pb.AdaptRequest(tenant=tenant, store=store,
                                          examples=examples(rng, 4, "setup"))
                retrying(lambda: stub.Adapt(iter([request]), timeout=30))
                # A published version now, not at the auto-compile's next turn: a Predict
                # after the failover then waits for nothing but the failover.
                retrying(lambda: stub.Compile(pb.CompileRequest(tenant=tenant, store=store),
                                              timeout=30))
            except grpc.RpcError as e:
                with rng_lock:
                    errors.append("%s/%s: %s %s" % (tenant, store, e.code(), e.details()))
            if i % 1000 == 0:
                log("setup: %d of %d stores" % (i, len(names)))

    begin = time.monotonic()
    run_threads(threads, work)
    if errors:
        sys.exit("setup failed for %d stores, first: %s" % (len(errors), errors[0]))
    # One Predict to check the stores answer (a faast store predicts from its statistics).
    tenant, store = names[0]
    members[0].stub.Predict(pb.PredictRequest(tenant=tenant, store=store,
                                              inputs=[query(random.Random(0))]), timeout=30)
    return time.monotonic() - begin


def client_bench(adaptctl, via, stores, a, extra):
    """adaptctl bench --via-client on `stores` through member `via`: its JSON line, or None."""
    out = subprocess.run(
        [adaptctl, "--addr", via.address, "--timeout", "60"] + extra +
        ["bench", "--via-client", "--adapt-examples", "1", "--dim", str(DIM), "--duration",
         str(a.forward_seconds), "--concurrency", str(a.forward_threads)] +
        sum((["--store", "%s/%s" % n] for n in stores), []),
        capture_output=True, text=True)
    if out.returncode != 0:
        log("adaptctl bench --via-client failed: " + out.stderr[-500:])
        return None
    return json.loads(out.stdout.splitlines()[0])


def routed_rounds(members, stores, a, adaptctl, r, results):
    """Round r of routing clients: given m1 (routed to the holder m0) and m0 with --no-route."""
    for setting, via, extra in (("direct", members[0], ["--no-route"]),
                                ("routed", members[1], [])):
        line = client_bench(adaptctl, via, stores, a, extra)
        if line is None:
            continue
        for op, prefix in (("Predict (C++ client)", ""), ("Adapt (C++ client)", "adapt_")):
            row = {"round": r, "setting": setting, "op": op,
                   "calls_per_s": line[prefix + "throughput"], "p50_ms": line[prefix + "p50_ms"],
                   "p99_ms": line.get(prefix + "p99_ms"),
                   "errors": line[prefix + "errors"], "routing": line.get("via_client_routing"),
                   "load": load_average()}
            log("forward round %d %s %s: %.0f/s, p50 %.2f ms" % (
                r, setting, op, row["calls_per_s"], row["p50_ms"]))
            results[setting].append(row)


def python_client_round(via, route, stores, a, r):
    """predict, then adapt of one example (a fresh id), through one adaptd_client.Client
    shared by --forward-threads threads, given `via`: the two rows of round r."""
    from adaptd_client import AdaptdError, Client

    rows = []
    with Client(via.address, timeout=30.0, route_to_holders=route) as client:
        for op in ("Predict (Python client)", "Adapt (Python client)"):
            lat, errors, lock = [], [0], threading.Lock()
            stop_at = time.monotonic() + a.forward_seconds

            def work(t):
                rng = random.Random(2000 * r + t)
                mine, k, n = [], t, 0
                while time.monotonic() < stop_at:
                    tenant, store = stores[k % len(stores)]
                    k += a.forward_threads
                    x = [[rng.uniform(-1, 1) for _ in range(DIM)]]
                    begin = time.monotonic()
                    try:
                        if op.startswith("Adapt"):
                            n += 1
                            client.adapt(tenant, store, x, labels=[LABELS[n % len(LABELS)]],
                                         ids=["py-%d-%d-%d-%d" % (route, r, t, n)])
                        else:
                            client.predict(tenant, store, x)
                        mine.append(time.monotonic() - begin)
                    except AdaptdError:
                        with lock:
                            errors[0] += 1
                with lock:
                    lat.extend(mine)

            begin = time.monotonic()
            run_threads(a.forward_threads, work)
            elapsed = time.monotonic() - begin
            rows.append({"round": r, "op": op, "calls": len(lat), "errors": errors[0],
                         "calls_per_s": len(lat) / elapsed,
                         "p50_ms": 1000 * statistics.median(lat) if lat else None,
                         "p99_ms": 1000 * percentile(lat, 0.99) if lat else None,
                         "routing": client.routing(), "load": load_average()})
    return rows


def python_routed_rounds(members, stores, a, r, results):
    """Round r of the Python client: given m1 routing to the holder m0, and given m0 with
    routing off."""
    for setting, via, route in (("direct", members[0], False), ("routed", members[1], True)):
        for row in python_client_round(via, route, stores, a, r):
            row["setting"] = setting
            log("forward round %d %s %s: %.0f/s, p50 %.2f ms" % (
                r, setting, row["op"], row["calls_per_s"], row["p50_ms"] or 0))
            results[setting].append(row)


def ratio_rows(results, ops, other):
    """Per op, the medians of the direct rounds and of `other`'s, and other/direct."""
    table = []
    for op in ops:
        d = [x for x in results["direct"] if x["op"] == op]
        f = [x for x in results[other] if x["op"] == op]
        if not d or not f:
            continue
        row = {"op": op}
        for key in ("p50_ms", "calls_per_s"):
            row["direct_" + key] = statistics.median(x[key] for x in d)
            row[other + "_" + key] = statistics.median(x[key] for x in f)
            row["ratio_" + key] = row[other + "_" + key] / row["direct_" + key]
        table.append(row)
    return table


def forward(members, holders, names, a, adaptctl):
    """Direct (through the holder m0) against forwarded (through m1) on stores m0 holds, and
    routing clients given m1 against m0 directly."""
    mine = [n for n in names if holders["%04x" % shard_of(*n)] == "m0"]
    stores = mine[:a.forward_stores]
    results = {"direct": [], "forwarded": [], "routed": []}
    seq = [0]
    seq_lock = threading.Lock()
    for r in range(a.forward_rounds):
        for setting, via in (("direct", members[0]), ("forwarded", members[1])):
            for op in ("Adapt", "Predict"):
                lat, errors = [], [0]
                lock = threading.Lock()
                stop_at = time.monotonic() + a.forward_seconds

                def work(t):
                    rng = random.Random(1000 * r + t)
                    mine_lat = []
                    k = t
                    while time.monotonic() < stop_at:
                        tenant, store = stores[k % len(stores)]
                        k += a.forward_threads
                        begin = time.monotonic()
                        try:
                            if op == "Adapt":
                                with seq_lock:
                                    seq[0] += 1
                                    tag = "fwd-%d" % seq[0]
                                via.stub.Adapt(iter([pb.AdaptRequest(
                                    tenant=tenant, store=store,
                                    examples=examples(rng, 1, tag))]), timeout=30)
                            else:
                                via.stub.Predict(pb.PredictRequest(
                                    tenant=tenant, store=store, inputs=[query(rng)]), timeout=30)
                            mine_lat.append(time.monotonic() - begin)
                        except grpc.RpcError:
                            with lock:
                                errors[0] += 1
                    with lock:
                        lat.extend(mine_lat)

                begin = time.monotonic()
                run_threads(a.forward_threads, work)
                elapsed = time.monotonic() - begin
                row = {"round": r, "setting": setting, "op": op, "calls": len(lat),
                       "errors": errors[0], "calls_per_s": len(lat) / elapsed,
                       "p50_ms": 1000 * statistics.median(lat) if lat else None,
                       "p99_ms": 1000 * percentile(lat, 0.99) if lat else None,
                       "load": load_average()}
                log("forward round %d %s %s: %d calls, %.0f/s, p50 %.2f ms" % (
                    r, setting, op, len(lat), row["calls_per_s"], row["p50_ms"] or 0))
                results[setting].append(row)
            if adaptctl:
                out = subprocess.run(
                    [adaptctl, "--addr", via.address, "--timeout", "60", "bench", "--dim",
                     str(DIM), "--duration", str(a.forward_seconds), "--concurrency",
                     str(a.forward_threads)] +
                    sum((["--store", "%s/%s" % n] for n in stores), []),
                    capture_output=True, text=True)
                if out.returncode == 0:
                    line = json.loads(out.stdout.splitlines()[0])
                    row = {"round": r, "setting": setting, "op": "Predict (adaptctl bench)",
                           "calls_per_s": line["throughput"], "p50_ms": line["p50_ms"],
                           "p99_ms": line.get("p99_ms"), "load": load_average()}
                    log("forward round %d %s adaptctl bench Predict: %.0f/s, p50 %.2f ms" % (
                        r, setting, row["calls_per_s"], row["p50_ms"]))
                    results[setting].append(row)
                else:
                    log("adaptctl bench failed: " + out.stderr[-500:])
        if adaptctl:
            routed_rounds(members, stores, a, adaptctl, r, results)
        python_routed_rounds(members, stores, a, r, results)
    table = (ratio_rows(results, ("Adapt", "Predict", "Predict (adaptctl bench)"), "forwarded") +
             ratio_rows(results, ("Predict (C++ client)", "Adapt (C++ client)",
                                  "Predict (Python client)", "Adapt (Python client)"), "routed"))
    return {"stores": len(stores), "threads": a.forward_threads, "seconds": a.forward_seconds,
            "rounds": results, "table": table}


def failover(members, etcd, names, a):
    killed = members[-1]
    before = claims(etcd)
    affected = [n for n in names if before["%04x" % shard_of(*n)] == killed.name]
    survivors = members[:-1]
    log("failover: SIGKILL %s, which holds %d shards and %d of %d stores" % (
        killed.name, sum(1 for h in before.values() if h == killed.name), len(affected),
        len(names)))
    load_before = load_average()
    kill_time = time.monotonic()
    killed.kill()
    shutil.rmtree(killed.data_dir, ignore_errors=True)
    adapt_s, predict_s, codes = {}, {}, {}
    lock = threading.Lock()
    retry = a.retry_ms / 1000.0

    claims_back = [None]
    timeline = []  # (seconds since the kill, shards of the killed member's claimed again)
    lost = {s for s, h in before.items() if h == killed.name}

    def watch_claims():
        while time.monotonic() - kill_time < a.failover_limit:
            held = claims(etcd)
            t = time.monotonic() - kill_time
            timeline.append((round(t, 2), sum(1 for s in lost if held.get(s, killed.name)
                                                 != killed.name)))
            if len(held) == SHARDS and killed.name not in held.values():
                claims_back[0] = t
                return
            time.sleep(0.5)

    watcher = threading.Thread(target=watch_claims)
    watcher.start()

    def work(t):
        rng = random.Random(7 + t)
        pending = {n: 0.0 for n in affected[t::a.failover_threads]}  # store: next try
        adapted = set()
        while pending and time.monotonic() - kill_time < a.failover_limit:
            now = time.monotonic()
            due = [n for n, at in pending.items() if at <= now]
            if not due:
                time.sleep(max(0.0, min(pending.values()) - now))
                continue
            for n in due:
                tenant, store = n
                stub = survivors[hash(n) % len(survivors)].stub
                try:
                    if n not in adapted:
                        stub.Adapt(iter([pb.AdaptRequest(
                            tenant=tenant, store=store,
                            examples=examples(rng, 1, "failover"))]), timeout=a.call_timeout)
                        adapted.add(n)
                        with lock:
                            adapt_s[n] = time.monotonic() - kill_time
                    stub.Predict(pb.PredictRequest(tenant=tenant, store=store,
                                                   inputs=[query(rng)]), timeout=a.call_timeout)
                    with lock:
                        predict_s[n] = time.monotonic() - kill_time
                    del pending[n]
                except grpc.RpcError as e:
                    with lock:
                        codes[e.code().name] = codes.get(e.code().name, 0) + 1
                    if e.code() not in (grpc.StatusCode.UNAVAILABLE,
                                        grpc.StatusCode.DEADLINE_EXCEEDED):
                        log("failover: %s/%s: %s %s" % (tenant, store, e.code(), e.details()))
                    pending[n] = time.monotonic() + retry

    run_threads(a.failover_threads, work)
    watcher.join()
    done = len(predict_s)
    result = {"killed": killed.name, "stores": len(names), "affected": len(affected),
              "answered": done, "ttl_s": 5, "goal_median_s": 10,
              "adapt_s": summary(list(adapt_s.values())),
              "adapt_and_predict_s": summary(list(predict_s.values())),
              "claims_back_s": claims_back[0], "claims_timeline": timeline,
              "retry_codes": codes,
              "client_threads": a.failover_threads, "retry_ms": a.retry_ms,
              "load_before": load_before, "load_after": load_average()}
    log("failover: %d of %d stores answered Adapt and Predict; median %.2f s, p90 %.2f s, "
        "max %.2f s; every claim back at %s s" % (
            done, len(affected), result["adapt_and_predict_s"].get("median", -1),
            result["adapt_and_predict_s"].get("p90", -1),
            result["adapt_and_predict_s"].get("max", -1), claims_back[0]))
    return result


def rolling_restart(members, etcd):
    before = claims(etcd)
    stops = []
    begin = time.monotonic()
    for m in members:
        stops.append(m.stop())
        m.start()
    wait_settled(members[0])
    after = claims(etcd)
    moves = moved(before, after)
    result = {"members": len(members), "shards": len(before), "moved": sum(moves.values()),
              "moves": moves, "stop_s": stops, "seconds": time.monotonic() - begin}
    log("rolling restart of %d members moved %d of %d shards" % (
        len(members), result["moved"], len(before)))
    return result


def join(members, etcd, new):
    before = claims(etcd)
    begin = time.monotonic()
    new.start()
    after, _ = wait_held_by(etcd, [m.name for m in members] + [new.name])
    wait_settled(members[0])
    after = claims(etcd)
    moves = moved(before, after)
    n = sum(moves.values())
    result = {"from": len(members), "to": len(members) + 1, "shards": len(before), "moved": n,
              "fraction": n / len(before), "to_new_member": sum(
                  v for k, v in moves.items() if k.endswith("-> " + new.name)),
              "moves": moves, "seconds": time.monotonic() - begin}
    log("3 -> 4 members moved %d of %d shards (%.3f)" % (n, len(before), result["fraction"]))
    return result


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--build", default="build")
    p.add_argument("--out", required=True)
    p.add_argument("--adaptd", default="",
                   help="the adaptd binary (default BUILD/server/adaptd; give a copy when the "
                        "build tree may be rebuilt while the run restarts members)")
    p.add_argument("--stores", type=int, default=10000)
    p.add_argument("--tenants", type=int, default=10)
    p.add_argument("--setup-threads", type=int, default=32)
    p.add_argument("--forward-stores", type=int, default=16)
    p.add_argument("--forward-threads", type=int, default=8)
    p.add_argument("--forward-seconds", type=float, default=5.0)
    p.add_argument("--forward-rounds", type=int, default=3)
    p.add_argument("--failover-threads", type=int, default=64)
    p.add_argument("--retry-ms", type=float, default=75.0)
    p.add_argument("--call-timeout", type=float, default=10.0)
    p.add_argument("--failover-limit", type=float, default=300.0)
    p.add_argument("--skip", default="",
                   help="comma-separated: forward,failover,restart,join (restart needs "
                        "failover)")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    a = p.parse_args()
    skip = set(filter(None, a.skip.split(",")))

    build = os.path.abspath(a.build)
    work = tempfile.mkdtemp(prefix="adaptd-cluster-etcd-bench-")
    log("work directory", work)
    etcd = s3 = None
    members = []
    out = {"conditions": {"cpus": os.cpu_count(), "stores": a.stores, "tenants": a.tenants,
                          "dim": DIM, "members": 3, "etcd_members": 3, "etcd_lease_ttl_s": 5,
                          "load_at_start": load_average()}}
    try:
        etcd = S.Etcd(os.path.join(build, "etcd/usr/bin/etcd"), work)
        s3 = S.SeaweedFs(os.path.join(build, "seaweedfs/weed"), work)
        adaptd = a.adaptd or os.path.join(build, "server/adaptd")
        members = [Member(adaptd, work, "m%d" % i, etcd, s3, []) for i in range(3)]
        begin = time.monotonic()
        for m in members:
            m.start()
        holders, _ = wait_held_by(etcd, ["m0", "m1", "m2"])
        wait_settled(members[0])
        out["start_s"] = time.monotonic() - begin
        log("3 members hold every shard after %.1f s" % out["start_s"])

        names = [("t%d" % (i % a.tenants), "s%05d" % i) for i in range(a.stores)]
        out["setup_s"] = setup(members, names, a.setup_threads)
        log("setup: %d stores created and adapted in %.1f s" % (a.stores, out["setup_s"]))

        if "forward" not in skip:
            out["forward"] = forward(members, claims(etcd), names, a,
                                     os.path.join(build, "client/adaptctl/adaptctl"))
        if "failover" not in skip:
            out["failover"] = failover(members, etcd, names, a)
        if "restart" not in skip and "failover" not in skip:
            members[-1].start()  # an empty data directory: it reads its shards' stores back
            _, back_s = wait_held_by(etcd, ["m0", "m1", "m2"])
            wait_settled(members[0])
            out["killed_member_back_s"] = back_s
            out["rolling_restart"] = rolling_restart(members, etcd)
        if "join" not in skip and "restart" not in skip:
            fourth = Member(adaptd, work, "m3", etcd, s3, [])
            members.append(fourth)
            out["join"] = join(members[:-1], etcd, fourth)
        out["conditions"]["load_at_end"] = load_average()
    finally:
        with open(a.out, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
        for m in members:
            if m.process is not None:
                S.kill(m.process)
        if s3:
            s3.close()
        if etcd:
            etcd.close()
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)
    log("wrote", a.out)


if __name__ == "__main__":
    main()
