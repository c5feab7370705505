#!/usr/bin/python3
"""The scikit-learn side of the FAAST comparison, run with Debian's Python (python3-sklearn).

`gen` writes a seeded classification problem (class centroids plus Gaussian noise) as raw
row-major float32 / int32 files; `fit` times RidgeClassifier(alpha, fit_intercept=False) on it,
predicts the training and held-out rows, writes the predicted class ids and prints one JSON
object. bench/run_sklearn_peer.py drives both sides.
"""
import argparse
import json
import os
import sys
import time

import numpy as np


def generate(out_dir, rows, test_rows, dim, labels, seed, separation):
    """Centroids N(0, separation²) per class, rows = centroid + N(0, 1) noise, float32."""
    rng = np.random.default_rng(seed)
    centroids = (rng.standard_normal((labels, dim)) * separation).astype(np.float32)
    y = rng.integers(0, labels, rows + test_rows).astype(np.int32)
    x = centroids[y] + rng.standard_normal((rows + test_rows, dim), dtype=np.float32)
    os.makedirs(out_dir, exist_ok=True)
    x[:rows].tofile(os.path.join(out_dir, "X_train.f32"))
    y[:rows].tofile(os.path.join(out_dir, "y_train.i32"))
    x[rows:].tofile(os.path.join(out_dir, "X_test.f32"))
    y[rows:].tofile(os.path.join(out_dir, "y_test.i32"))
    meta = {"rows": rows, "test_rows": test_rows, "dim": dim, "labels": labels, "seed": seed,
            "separation": separation}
    with open(os.path.join(out_dir, "meta.json"), "w") as f:
        json.dump(meta, f)
    return meta


def load(data_dir):
    with open(os.path.join(data_dir, "meta.json")) as f:
        meta = json.load(f)
    rows, test_rows, dim = meta["rows"], meta["test_rows"], meta["dim"]

    def read(name, dtype, shape):
        return np.fromfile(os.path.join(data_dir, name), dtype=dtype).reshape(shape)

    return (read("X_train.f32", np.float32, (rows, dim)), read("y_train.i32", np.int32, rows),
            read("X_test.f32", np.float32, (test_rows, dim)), read("y_test.i32", np.int32, test_rows))


def blas_info():
    """The BLAS numpy runs (kernel, threads), as threadpoolctl reports it."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    return [{k: v for k, v in pool.items() if k in ("internal_api", "version", "architecture",
                                                    "num_threads", "filepath")}
            for pool in threadpool_info() if pool.get("user_api") == "blas"]


def fit(data_dir, alpha, out_prefix, update_rows):
    from sklearn.linear_model import RidgeClassifier

    x, y, xt, yt = load(data_dir)
    t0 = time.perf_counter()
    clf = RidgeClassifier(alpha=alpha, fit_intercept=False).fit(x, y)
    t1 = time.perf_counter()
    train = clf.predict(x)
    t2 = time.perf_counter()
    test = clf.predict(xt)
    t3 = time.perf_counter()
    # The streaming case: `update_rows` held-out rows arrive; a batch model refits on everything.
    more = np.vstack([x, xt[:update_rows]])
    more_y = np.concatenate([y, yt[:update_rows]])
    t4 = time.perf_counter()
    RidgeClassifier(alpha=alpha, fit_intercept=False).fit(more, more_y)
    t5 = time.perf_counter()
    if out_prefix:
        train.astype(np.int32).tofile(out_prefix + "train.i32")
        test.astype(np.int32).tofile(out_prefix + "test.i32")
    import sklearn
    return {"side": "sklearn", "sklearn": sklearn.__version__, "numpy": np.__version__,
            "dtype": str(clf.coef_.dtype), "fit_s": t1 - t0, "predict_train_s": t2 - t1,
            "predict_test_s": t3 - t2, "update_rows": update_rows, "update_s": t5 - t4,
            "accuracy_train": float(np.mean(train == y)),
            "accuracy_test": float(np.mean(test == yt)), "blas": blas_info(),
            "openblas_coretype_env": os.environ.get("OPENBLAS_CORETYPE", "(unset)")}


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("gen", help="write the data set")
    g.add_argument("--out", required=True)
    g.add_argument("--rows", type=int, default=16000)
    g.add_argument("--test-rows", type=int, default=4000)
    g.add_argument("--dim", type=int, default=2048)
    g.add_argument("--labels", type=int, default=26)
    g.add_argument("--seed", type=int, default=7)
    g.add_argument("--separation", type=float, default=0.08)
    f = sub.add_parser("fit", help="time RidgeClassifier on the data set")
    f.add_argument("--data", required=True)
    f.add_argument("--alpha", type=float, default=1.0)
    f.add_argument("--out", default="", help="prefix of the prediction files")
    f.add_argument("--update-rows", type=int, default=1024,
                   help="held-out rows added for the refit timing")
    args = parser.parse_args()
    if args.command == "gen":
        print(json.dumps(generate(args.out, args.rows, args.test_rows, args.dim, args.labels,
                                  args.seed, args.separation)))
    else:
        print(json.dumps(fit(args.data, args.alpha, args.out, args.update_rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
