#!/usr/bin/env python3
"""adaptd under two choices of OpenBLAS kernels, side by side in one run: the same faast work
(adapt N × d examples, compile, predict) through the Python client against a server started
with --blas-core A and one with --blas-core B (default: SkylakeX, the AVX-512 kernels, against
Prescott, what OpenBLAS 0.3.21 alone picks on a CPU model it does not know). Prints one JSON
line per core and the ratios.

    build/python-client-venv/bin/python bench/blas/core_bench.py \
        --adaptd build/server/adaptd
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time

import numpy as np

from adaptd_client import Client


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(adaptd, core, x, labels, rounds):
    data = tempfile.mkdtemp(prefix="blas-bench-")
    address = "127.0.0.1:%d" % free_port()
    proc = subprocess.Popen([adaptd, "--listen", address, "--metrics-listen", "off",
                             "--data-dir", data, "--blas-core", core, "--fsync", "off"],
                            stderr=subprocess.PIPE, text=True)
    blas = proc.stderr.readline().strip()
    try:
        client = Client(address, timeout=600.0)
        client.wait_ready()
        best = {"adapt": float("inf"), "compile": float("inf"), "predict": float("inf")}
        for r in range(rounds):
            name = "s%d" % r
            client.create_store("bench", name, kind="faast", ridge=1.0, auto_compile_every=0,
                                auto_compile_delay_ms=0)
            t0 = time.perf_counter()
            client.adapt("bench", name, x, labels=labels, batch=1024)
            t1 = time.perf_counter()
            client.compile("bench", name)
            t2 = time.perf_counter()
            for start in range(0, len(x), 4096):
                client.predict("bench", name, x[start:start + 4096])
            t3 = time.perf_counter()
            for key, seconds in (("adapt", t1 - t0), ("compile", t2 - t1), ("predict", t3 - t2)):
                best[key] = min(best[key], seconds)
            client.delete_store("bench", name)
        client.close()
        return {"core": core, "log": blas, **best}
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(data, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--adaptd", required=True)
    parser.add_argument("--cores", default="SkylakeX,Prescott")
    parser.add_argument("--rows", type=int, default=16000)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--labels", type=int, default=26)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(args.rows, args.dim)).astype(np.float32)
    labels = [str(v) for v in rng.integers(0, args.labels, size=args.rows)]
    results = [run(args.adaptd, core, x, labels, args.rounds) for core in args.cores.split(",")]
    for r in results:
        print(json.dumps(r))
    a, b = results[0], results[-1]
    print(json.dumps({"ratio": "%s over %s" % (b["core"], a["core"]),
                      **{k: round(b[k] / a[k], 2) for k in ("adapt", "compile", "predict")}}))


if __name__ == "__main__":
    main()
