#!/usr/bin/env python3
"""A new tenant's store with and without a base store (docs/BASE_STORES.md), through adaptd.

Data: scikit-learn's digits (1,797 8x8 images, 10 classes), pixels scaled to [0, 1] plus a bias
column, shuffled with --seed and split in two halves: the base's half (a curated store that
learned it) and the new tenant's half, of which --test examples per class are held out. For
k = 0, 1, 2, 4, 8, 16 examples per class of the tenant's half (--draws seeded draws), three
faast label stores (ridge --ridge) learn the same k·10 examples and are scored on the held-out
set: one with the base (`base=`), one without, and scikit-learn's LogisticRegression() with
its defaults fitted on the same examples (k >= 1). Every store's top-1 is also recomputed in
numpy from the documented solve S = (G + λI)⁻¹(C + λ·S_base) with the base's published
weights as Predict returns them, float32 (`numpy_agree` counts the rows where numpy and the
server pick the same label).

  python3 base_store_curve.py --address HOST:PORT [--ridge 1] [--draws 5] [--seed 3]

Needs adaptd_client (see run_base_curve.sh), numpy and scikit-learn. Prints one JSON line per
(k, method) with the mean and spread over the draws.
"""
import argparse
import json
import os

import numpy as np
from adaptd_client import Client
from sklearn.datasets import load_digits
from sklearn.linear_model import LogisticRegression

KS = [0, 1, 2, 4, 8, 16]


def features(x):
    x = x / 16.0
    return np.hstack([x, np.ones((len(x), 1))]).astype(np.float32)


def numpy_top1(keys, labels, ridge, base_s, base_names, queries):
    """S = (KᵀK + λI)⁻¹(KᵀY + λ·S_base) over the store's columns (base labels first)."""
    columns = list(base_names) + [n for n in dict.fromkeys(labels) if n not in base_names]
    d = queries.shape[1]
    prior = np.zeros((d, len(columns)))
    if base_s is not None:
        prior[:, :len(base_names)] = base_s
    k = keys.astype(np.float64)
    y = np.zeros((len(labels), len(columns)))  # zero rows when k = 0
    for r, name in enumerate(labels):
        y[r, columns.index(name)] = 1.0
    s = np.linalg.solve(k.reshape(-1, d).T @ k.reshape(-1, d) + ridge * np.eye(d),
                        k.reshape(-1, d).T @ y + ridge * prior)
    return np.array(columns)[np.argmax(queries.astype(np.float64) @ s, axis=1)]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--address", required=True)
    parser.add_argument("--ridge", type=float, default=1.0)
    parser.add_argument("--draws", type=int, default=5)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--test", type=int, default=30, help="held-out examples per class")
    args = parser.parse_args()

    digits = load_digits()
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(digits.target))
    x, y = features(digits.data[order]), digits.target[order].astype(str)
    half = len(y) // 2
    base_x, base_y, own_x, own_y = x[:half], y[:half], x[half:], y[half:]
    test_idx = np.concatenate([np.flatnonzero(own_y == c)[:args.test] for c in np.unique(own_y)])
    pool_idx = np.setdiff1d(np.arange(len(own_y)), test_idx)
    test_x, test_y = own_x[test_idx], own_y[test_idx]
    manual = dict(auto_compile_every=0, auto_compile_delay_ms=0)
    tenant, run = "bench-base", os.getpid()

    with Client(args.address) as client:
        client.wait_ready()
        curated = f"curated-{run}"
        client.create_store(tenant, curated, kind="faast", ridge=args.ridge, **manual)
        client.adapt(tenant, curated, base_x, labels=list(base_y), batch=512)
        client.compile(tenant, curated)
        base_acc = float(np.mean([row[0][0] == t for row, t in
                                  zip(client.predict(tenant, curated, test_x), test_y)]))
        print(json.dumps({"bench": "base_store_curve", "method": "the base alone",
                          "examples_in_base": half, "accuracy": base_acc}), flush=True)
        # The base's published S (d × labels, float32 as Predict answers): row i is e_iᵀS.
        eye = np.eye(x.shape[1], dtype=np.float32)
        base_names, base_s = client.predict_scores(tenant, curated, eye)

        for k in KS:
            results = {"with base": [], "without base": [], "LogisticRegression": []}
            agree = {"with base": 0, "without base": 0}
            for draw in range(args.draws):
                draw_rng = np.random.default_rng(1000 * args.seed + 17 * k + draw)
                chosen = np.concatenate([
                    draw_rng.choice(pool_idx[own_y[pool_idx] == c], size=k, replace=False)
                    for c in np.unique(own_y)]) if k > 0 else np.array([], dtype=int)
                keys, labels = own_x[chosen], list(own_y[chosen])
                for method, base in (("with base", f"{tenant}/{curated}"),
                                     ("without base", "")):
                    if not base and k == 0:
                        continue
                    name = f"s{run}-{k}-{draw}-{'b' if base else 'n'}"
                    client.create_store(tenant, name, kind="faast", ridge=args.ridge, base=base,
                                        **manual)
                    if k > 0:
                        client.adapt(tenant, name, keys, labels=labels, batch=512)
                        client.compile(tenant, name)
                    got = np.array([row[0][0] for row in client.predict(tenant, name, test_x)])
                    results[method].append(float(np.mean(got == test_y)))
                    want = numpy_top1(keys, labels, args.ridge,
                                        base_s if base else None,
                                        base_names if base else [], test_x)
                    agree[method] += int(np.sum(want == got))
                    client.delete_store(tenant, name)
                if k > 0:
                    model = LogisticRegression().fit(keys, labels)
                    results["LogisticRegression"].append(
                        float(np.mean(model.predict(test_x) == test_y)))
            for method, accs in results.items():
                if not accs:
                    continue
                row = {"bench": "base_store_curve", "k_per_class": k, "method": method,
                       "accuracy": float(np.mean(accs)), "spread": float(np.std(accs)),
                       "draws": len(accs), "test_rows": int(len(test_y))}
                if method in agree:
                    row["numpy_agree"] = agree[method]
                    row["numpy_rows"] = len(accs) * int(len(test_y))
                print(json.dumps(row), flush=True)
        client.delete_store(tenant, curated)


if __name__ == "__main__":
    main()
