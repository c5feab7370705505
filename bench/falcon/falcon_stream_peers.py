#!/usr/bin/env python3
"""Peers for bench/falcon/falcon_stream_bench.cc on the same labelled stream.

`gen DIR`   writes one seeded stream: class centroids plus Gaussian noise, half the centroids
            redrawn at drift_at (concept drift), as DIR/meta.txt ("n d classes drift_at"),
            DIR/x.f32 (n x d float32, row-major) and DIR/y.i32 (n int32).
`sklearn DIR`  test-then-train with scikit-learn's partial_fit, one example at a time (and one
            batched row for reference): prequential accuracy is the accuracy of predict()
            before each update; the first example, seen before any fit, counts as a miss.
`river DIR` the same with River's learn_one/predict_one (predict_one answers None before the
            first example, counted as a miss).

Prints one JSON line per method. Single-threaded: run with OMP/OPENBLAS thread counts of 1.
Needs numpy; `sklearn` needs scikit-learn, `river` needs river (a virtual environment).
"""
import json
import os
import sys
import time

import numpy as np


def gen(out, n, d, classes, seed, noise):
    rng = np.random.default_rng(seed)
    drift_at = n // 2
    centroids = rng.standard_normal((classes, d))
    y = rng.integers(0, classes, size=n).astype(np.int32)
    x = np.empty((n, d), dtype=np.float32)
    x[:drift_at] = centroids[y[:drift_at]] + noise * rng.standard_normal((drift_at, d))
    old = centroids.copy()
    centroids[::2] = rng.standard_normal(centroids[::2].shape)
    x[drift_at:] = centroids[y[drift_at:]] + noise * rng.standard_normal((n - drift_at, d))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "meta.txt"), "w") as f:
        f.write(f"{n} {d} {classes} {drift_at}\n")
    x.tofile(os.path.join(out, "x.f32"))
    y.tofile(os.path.join(out, "y.i32"))
    # Reference: the nearest true centroid (the generator's own, switched at drift_at).
    hits = np.empty(n, dtype=bool)
    for lo, hi, c in ((0, drift_at, old), (drift_at, n, centroids)):
        dist = ((x[lo:hi, None, :] - c[None, :, :]) ** 2).sum(axis=2)
        hits[lo:hi] = dist.argmin(axis=1) == y[lo:hi]
    print(json.dumps({"bench": "falcon_stream_data", "method": "nearest true centroid (oracle)",
                      "n": n, "d": d, "classes": classes, "drift_at": drift_at, "noise": noise,
                      "seed": seed, "prequential_accuracy": float(hits.mean()),
                      "accuracy_after_drift": float(hits[drift_at:].mean())}), flush=True)


def load(path):
    with open(os.path.join(path, "meta.txt")) as f:
        n, d, classes, drift_at = (int(v) for v in f.read().split())
    x = np.fromfile(os.path.join(path, "x.f32"), dtype=np.float32).reshape(n, d)
    y = np.fromfile(os.path.join(path, "y.i32"), dtype=np.int32)
    assert y.shape == (n,)
    return x, y, classes, drift_at


def report(method, batch, x, hits, drift_at, seconds, **extra):
    n, d = x.shape
    row = {"bench": "falcon_stream_peer", "method": method, "batch": batch, "n": n, "d": d,
           "examples_per_s": n / seconds,
           "prequential_accuracy": float(np.mean(hits)),
           "accuracy_after_drift": float(np.mean(hits[drift_at:]))}
    row.update(extra)
    print(json.dumps(row), flush=True)


def run_sklearn(path, chunk):
    import sklearn
    from sklearn.linear_model import PassiveAggressiveClassifier, SGDClassifier
    import warnings
    warnings.filterwarnings("ignore")  # PassiveAggressiveClassifier's deprecation in new releases
    x, y, classes, drift_at = load(path)
    x = x.astype(np.float64)  # what sklearn converts to anyway; keep the copy out of the loop
    labels = np.arange(classes, dtype=np.int32)
    makers = [
        ("sklearn SGDClassifier(hinge)", lambda: SGDClassifier(loss="hinge", random_state=0)),
        ("sklearn SGDClassifier(log_loss)", lambda: SGDClassifier(loss="log_loss", random_state=0)),
        ("sklearn PassiveAggressiveClassifier", lambda: PassiveAggressiveClassifier(random_state=0)),
    ]
    for name, make in makers:
        model = make()
        hits = np.zeros(len(y), dtype=bool)
        start = time.perf_counter()
        model.partial_fit(x[0:1], y[0:1], classes=labels)
        for i in range(1, len(y)):
            xi = x[i:i + 1]
            yi = y[i:i + 1]
            hits[i] = model.predict(xi)[0] == yi[0]
            model.partial_fit(xi, yi)
        report(name, 1, x, hits, drift_at, time.perf_counter() - start,
               version=sklearn.__version__)
    # Batched reference: each batch predicted from the state before it, then fitted.
    model = SGDClassifier(loss="hinge", random_state=0)
    hits = np.zeros(len(y), dtype=bool)
    start = time.perf_counter()
    for i in range(0, len(y), chunk):
        end = min(i + chunk, len(y), drift_at if i < drift_at else len(y))
        if i > 0:
            hits[i:end] = model.predict(x[i:end]) == y[i:end]
        model.partial_fit(x[i:end], y[i:end], classes=labels)
    report("sklearn SGDClassifier(hinge)", chunk, x, hits, drift_at, time.perf_counter() - start,
           version=sklearn.__version__)


def run_river(path):
    import river
    from river import linear_model, multiclass
    x, y, classes, drift_at = load(path)
    names = [f"f{k}" for k in range(x.shape[1])]
    rows = [dict(zip(names, map(float, r))) for r in x]  # River's input type, built untimed
    labels = [int(v) for v in y]
    makers = [
        ("river SoftmaxRegression", linear_model.SoftmaxRegression),
        ("river OneVsRest(LogisticRegression)",
         lambda: multiclass.OneVsRestClassifier(linear_model.LogisticRegression())),
        ("river OneVsRest(PAClassifier)",
         lambda: multiclass.OneVsRestClassifier(linear_model.PAClassifier())),
    ]
    for name, make in makers:
        model = make()
        hits = np.zeros(len(labels), dtype=bool)
        start = time.perf_counter()
        for i, (xi, yi) in enumerate(zip(rows, labels)):
            hits[i] = model.predict_one(xi) == yi
            model.learn_one(xi, yi)
        report(name, 1, x, hits, drift_at, time.perf_counter() - start,
               version=river.__version__)


def main(argv):
    if len(argv) < 3 or argv[1] not in ("gen", "sklearn", "river"):
        sys.stderr.write(__doc__)
        return 2
    opts = dict(a[2:].split("=", 1) for a in argv[3:] if a.startswith("--") and "=" in a)
    if argv[1] == "gen":
        gen(argv[2], int(opts.get("n", 20000)), int(opts.get("d", 64)),
            int(opts.get("classes", 10)), int(opts.get("seed", 1)), float(opts.get("noise", 2.5)))
    elif argv[1] == "sklearn":
        run_sklearn(argv[2], int(opts.get("chunk", 64)))
    else:
        run_river(argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
