#!/usr/bin/python3
"""Forwarded against direct Predict in a cluster (bench/RESULTS.md, "Cluster: forwarded
against direct Predict").

Starts a cluster of two adaptd processes on loopback (members a and b), creates and fills one
faast store that member a owns (found by each member's adaptd_stores gauge), then alternates
`adaptctl bench --store` rounds against a (direct: the owner answers) and against b (every
call forwarded to a), and prints each round's JSON line and the medians side by side.

  bench/cluster/forwarding_bench.py --adaptd build/server/adaptd \\
      --adaptctl build/client/adaptctl/adaptctl [--rounds 3] [--duration 5] [--concurrency 16]
"""
import argparse
import csv
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--adaptd", required=True)
    parser.add_argument("--adaptctl", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--dim", type=int, default=256)
    parser.add_argument("--labels", type=int, default=16)
    args = parser.parse_args()

    tmp = tempfile.mkdtemp(prefix="adaptd-forwarding-bench-")
    members = ["a", "b"]
    addr = {m: "127.0.0.1:%d" % free_port() for m in members}
    metrics = {m: "127.0.0.1:%d" % free_port() for m in members}
    member_list = ",".join("%s=%s" % (m, addr[m]) for m in members)
    servers = {}
    try:
        for m in members:
            servers[m] = subprocess.Popen(
                [args.adaptd, "--listen", addr[m], "--metrics-listen", metrics[m], "--data-dir",
                 os.path.join(tmp, "data-" + m), "--cluster-self", m, "--cluster-members",
                 member_list],
                stdout=open(os.path.join(tmp, m + ".log"), "w"), stderr=subprocess.STDOUT)

        def ctl(member, *rest):
            result = subprocess.run([args.adaptctl, "--addr", addr[member], "--timeout", "120"] +
                                    list(rest), capture_output=True, text=True)
            if result.returncode != 0:
                raise RuntimeError("adaptctl %s: %s" % (" ".join(rest), result.stderr))
            return json.loads(result.stdout.splitlines()[0])

        def stores_on(member):
            body = urllib.request.urlopen("http://%s/metrics" % metrics[member],
                                          timeout=10).read().decode()
            return sum(float(line.rsplit(" ", 1)[1]) for line in body.splitlines()
                       if line.startswith("adaptd_stores{"))

        deadline = time.monotonic() + 30
        for m in members:
            while subprocess.run([args.adaptctl, "--addr", addr[m], "--timeout", "2", "encoders"],
                                 capture_output=True).returncode != 0:
                if time.monotonic() > deadline or servers[m].poll() is not None:
                    sys.exit("adaptd %s did not start" % m)
                time.sleep(0.2)

        # A store member a owns: create names until one lands there.
        store = None
        for i in range(64):
            name = "bench/fwd%d" % i
            before = stores_on("a")
            ctl("a", "store", "create", name, "--kind", "faast", "--encoder", "identity",
                "--output", "labels", "--set", "dim=%d" % args.dim)
            if stores_on("a") > before:
                store = name
                break
            ctl("a", "store", "delete", name)
        if store is None:
            sys.exit("no store landed on member a")
        rng = random.Random(1)
        train = os.path.join(tmp, "train.csv")
        with open(train, "w", newline="") as f:
            writer = csv.writer(f)
            writer.writerow(["x%d" % j for j in range(args.dim)] + ["label"])
            for i in range(64 * args.labels):
                writer.writerow([round(rng.gauss(0, 1), 4) for _ in range(args.dim)] +
                                ["label%d" % (i % args.labels)])
        ctl("b", "adapt", store, "--input", train)
        ctl("b", "compile", store)

        results = {"direct": [], "forwarded": []}
        for r in range(args.rounds):
            for setting, member in (("direct", "a"), ("forwarded", "b")):
                line = ctl(member, "bench", "--store", store, "--dim", str(args.dim),
                           "--duration", str(args.duration), "--concurrency",
                           str(args.concurrency))
                line.update({"setting": setting, "round": r})
                print(json.dumps(line), flush=True)
                results[setting].append(line)

        def median(setting, key):
            return statistics.median(line[key] for line in results[setting])

        print("| | direct (owner) | forwarded (other member) | forwarded / direct |")
        print("|---|---|---|---|")
        for key, label in (("throughput", "Predict calls/s"), ("p50_ms", "p50 ms"),
                           ("p99_ms", "p99 ms")):
            d, f = median("direct", key), median("forwarded", key)
            print("| %s | %.2f | %.2f | %.2f |" % (label, d, f, f / d if d else 0))
    finally:
        for server in servers.values():
            server.terminate()
            try:
                server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
