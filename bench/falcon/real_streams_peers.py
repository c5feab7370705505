#!/usr/bin/env python3
"""Falcon label stores against scikit-learn and River on real labelled streams.

The streams come from bench/falcon/real_streams_data.py (DIR/NAME.npz: x n x (d+1) float32 with
the bias column last, y label strings; DIR/manifest.json). Every method goes through each stream
once, in order, test-then-train one example at a time; prequential accuracy is the top-1
accuracy of the prediction made before the example's update.

`data DIR [--seed=7] [--only=...]`  writes the streams (runs real_streams_data.py).
`sklearn DIR [--only=a,b]`  SGDClassifier, Perceptron and PassiveAggressiveClassifier with
            their defaults (random_state=0, which one-row partial_fit does not use): predict(),
            then partial_fit() on the row, the classes given at the first call; the first
            example, seen before any fit, is a miss.
`river DIR [--only=a,b]`  OneVsRestClassifier(LogisticRegression()) and SoftmaxRegression() with
            their defaults: predict_one() (None before the first example: a miss), learn_one().
`sim DIR --variant=1 [--beta=1] [--lambda=0] [--key_norm=none] [--window=4] [--eps=1e-6]
            [--eps_gamma=1e-3] [--scale_coupled=0] [--schedule=none] [--count=store]`
            a float64 simulation of a falcon label store (server/stores/falcon_store.cc and
            falcon_rules.cc, docs/ALGORITHMS.md section 2). --beta and --lambda take
            comma-separated lists: every combination runs in one batched pass. --schedule (not a
            server parameter; a candidate): none; inv:TAU[:FLOOR] for
            β_t = max(FLOOR, β/(1 + (c−1)/TAU)) (FLOOR 0 if not given); rsqrt[:B0] for
            β_t = max(β, B0/√c) (B0 = 1 if not given); c the count of pairs so far including this
            one, of the store (--count=store) or of the example's label (--count=label).
`sweep DIR [--only=...]`  the grid of the default study (variants 1, 3, 1A, 3A; β; key_norm
            none/l2; window 4..32; λ 0, 1e-3, 1e-2), one JSON line per (set, configuration).
`check`     the batched simulation against a direct one-pair-at-a-time transcription of
            server/stores/falcon_reference.h (growing label columns, a deque window, the B x B
            Gram's top eigenvalue) on small streams; prints the largest differences.
`ceiling DIR [--lambda=0.01]`  recursive least squares (exact online ridge) and the in-sample
            accuracy of the ridge fit on the whole set: the ceiling of linear regression onto
            one-hot targets, which every falcon variant is.
`summary PEERS.jsonl SIM.jsonl`  ranks the configurations by their worst margin over the peers.
`server DIR --address=HOST:PORT [--set=KEY=VALUE;KEY=VALUE] [--only=...] [--per_call=5000]`
            each stream through a running adaptd: a falcon label store created with the
            server's defaults (plus --set: FalconParams fields, e.g. variant=1;beta=0.5), the
            stream adapted in order (--per_call examples per Adapt call), the prequential
            accuracy the server counted (AdaptResponse.evaluated/correct; each example is
            predicted before its own write). Needs adaptd_client on PYTHONPATH (see
            run_real_streams_server.sh).

Prints one JSON line per (data set, method). Single-threaded: run with OMP/OPENBLAS thread
counts of 1. Needs numpy; `sklearn` needs scikit-learn, `river` needs river (a virtual
environment: python3 -m venv V && V/bin/pip install river scikit-learn numpy).
"""
import itertools
import json
import os
import sys
import time

import numpy as np

EPS = 1e-6
EPS_GAMMA = 1e-3


def names_in(path, opts):
    manifest = json.load(open(os.path.join(path, "manifest.json")))
    if "only" in opts:
        return [n for n in opts["only"].split(",")], manifest
    return list(manifest), manifest


def load(path, name):
    z = np.load(os.path.join(path, f"{name}.npz"))
    return z["x"], z["y"]


def report(bench, name, method, hits, seconds, n_classes, **extra):
    row = {"bench": bench, "data": name, "method": method, "n": int(len(hits)),
           "classes": int(n_classes), "prequential_accuracy": float(np.mean(hits)),
           "examples_per_s": len(hits) / seconds if seconds > 0 else None}
    row.update(extra)
    print(json.dumps(row), flush=True)


# ---------------------------------------------------------------------------------------------
# Peers.


def run_sklearn(path, opts):
    import warnings

    import sklearn
    from sklearn.linear_model import PassiveAggressiveClassifier, Perceptron, SGDClassifier
    warnings.filterwarnings("ignore")  # PassiveAggressiveClassifier's deprecation notice
    makers = [
        ("sklearn SGDClassifier", lambda: SGDClassifier(random_state=0)),
        ("sklearn Perceptron", lambda: Perceptron(random_state=0)),
        ("sklearn PassiveAggressiveClassifier",
         lambda: PassiveAggressiveClassifier(random_state=0)),
    ]
    names, _ = names_in(path, opts)
    for name in names:
        x, y = load(path, name)
        x = x.astype(np.float64)
        classes = np.unique(y)
        for method, make in makers:
            model = make()
            hits = np.zeros(len(y), dtype=bool)
            start = time.perf_counter()
            model.partial_fit(x[0:1], y[0:1], classes=classes)
            for i in range(1, len(y)):
                hits[i] = model.predict(x[i:i + 1])[0] == y[i]
                model.partial_fit(x[i:i + 1], y[i:i + 1])
            report("falcon_real_peer", name, method, hits, time.perf_counter() - start,
                   len(classes), version=f"scikit-learn {sklearn.__version__}")


def run_river(path, opts):
    import river
    from river import linear_model, multiclass
    makers = [
        ("river OneVsRest(LogisticRegression)",
         lambda: multiclass.OneVsRestClassifier(linear_model.LogisticRegression())),
        ("river SoftmaxRegression", linear_model.SoftmaxRegression),
    ]
    names, _ = names_in(path, opts)
    for name in names:
        x, y = load(path, name)
        keys = [f"f{k}" for k in range(x.shape[1])]
        rows = [dict(zip(keys, map(float, r))) for r in x]  # River's input type
        labels = [str(v) for v in y]
        for method, make in makers:
            model = make()
            hits = np.zeros(len(labels), dtype=bool)
            start = time.perf_counter()
            for i, (xi, yi) in enumerate(zip(rows, labels)):
                hits[i] = model.predict_one(xi) == yi
                model.learn_one(xi, yi)
            report("falcon_real_peer", name, method, hits, time.perf_counter() - start,
                   len(set(labels)), version=f"river {river.__version__}")


# ---------------------------------------------------------------------------------------------
# The falcon label store, simulated in float64.


def phi(norm, x):
    """Key normalisation (falcon_params.cc NormalizeKeys); a zero key stays zero."""
    x = np.asarray(x, dtype=np.float64)
    if norm == "none":
        return x.copy()
    sq = np.einsum("nd,nd->n", x, x)
    if norm == "rms":
        sq = sq / x.shape[1]
    scale = np.where(sq > 0, 1.0 / np.sqrt(np.where(sq > 0, sq, 1.0)), 1.0)
    return x * scale[:, None]


def label_columns(y):
    """Columns in order of first appearance (the store's), each row's column, and how many
    columns existed before each row (the labels a prediction may pick)."""
    index = {}
    column = np.empty(len(y), dtype=np.int64)
    visible = np.empty(len(y), dtype=np.int64)
    for t, label in enumerate(y):
        visible[t] = len(index)
        column[t] = index.setdefault(label, len(index))
    return column, visible, len(index)


def energies(variant, x, window):
    """E_t and B_t of every step (falcon_rules.cc FalconSchedule)."""
    n = x.shape[0]
    sq = np.einsum("nd,nd->n", x, x)
    b = np.minimum(np.arange(1, n + 1), window) if variant in ("3", "3A") else np.ones(n, int)
    if variant in ("1", "1A"):
        return sq, b
    if variant == "3A":
        csum = np.concatenate([[0.0], np.cumsum(sq)])
        t = np.arange(n)
        return (csum[t + 1] - csum[t + 1 - b]) / b, b
    # Variant 3: λ_max(X_W X_Wᵀ) / B_t, the window's B_t × B_t Gram.
    e = np.empty(n)
    for t in range(min(window - 1, n)):
        w = x[:t + 1]
        e[t] = np.linalg.eigvalsh(w @ w.T)[-1] / (t + 1)
    step = 2048
    for lo in range(window - 1, n, step):
        hi = min(lo + step, n)
        idx = np.arange(lo, hi)[:, None] + np.arange(-window + 1, 1)[None, :]
        w = x[idx]  # (rows, B, d)
        e[lo:hi] = np.linalg.eigvalsh(w @ w.transpose(0, 2, 1))[:, -1] / window
    return e, b


def step_counts(column, count):
    """c_t: pairs so far including this one, of the store or of the example's label."""
    if count == "store":
        return np.arange(1, len(column) + 1, dtype=np.float64)
    seen = {}
    c = np.empty(len(column))
    for t, j in enumerate(column):
        seen[j] = seen.get(j, 0) + 1
        c[t] = seen[j]
    return c


def beta_schedule(beta, schedule, c):
    """β_t (K × n) for base values `beta` (K,)."""
    beta = np.asarray(beta, dtype=np.float64)[:, None]
    if schedule == "none":
        return np.broadcast_to(beta, (beta.shape[0], len(c))).copy()
    if schedule.startswith("inv:"):
        tau, _, floor = schedule[4:].partition(":")
        decayed = beta / (1.0 + (c[None, :] - 1.0) / float(tau))
        return np.maximum(decayed, float(floor)) if floor else decayed
    if schedule == "rsqrt" or schedule.startswith("rsqrt:"):
        start = float(schedule[6:]) if ":" in schedule else 1.0
        return np.maximum(beta, start / np.sqrt(c[None, :]))
    raise SystemExit(f"unknown schedule {schedule}")


def simulate(x_raw, y, variant, betas, lambdas, key_norm="none", window=4, eps=EPS,
             eps_gamma=EPS_GAMMA, scale_coupled=False, schedule="none", count="store"):
    """Prequential hits (K × n) of falcon label stores, one per (β, λ) pair given in `betas`,
    `lambdas` (equal lengths), that see the stream one pair at a time.

    Every label's column exists from the start here: until the label's first example its
    targets are 0 and its column of S stays exactly 0 (residual 0 − 0, or target 0), which is
    what a column added at that example holds, so the store's growing columns change nothing.
    Predictions only pick among the labels seen before the example (ties: the earlier one)."""
    variant = variant.upper()
    x = phi(key_norm, x_raw)
    n, d = x.shape
    column, visible, m = label_columns(y)
    targets = np.zeros((n, m))
    targets[np.arange(n), column] = 1.0
    win = int(window) if variant in ("3", "3A") else 1
    energy, b = energies(variant, x, win)
    lam = np.asarray(lambdas, dtype=np.float64)[:, None]
    lam_t = lam * energy[None, :] if scale_coupled else np.broadcast_to(lam, (len(lam), n))
    beta_t = beta_schedule(betas, schedule, step_counts(column, count))
    denom = energy[None, :] + lam_t + eps
    eta = np.where(denom > 0, beta_t / np.where(denom > 0, denom, 1.0), 0.0)
    gamma = 1.0 - np.minimum(eta * lam_t, 1.0 - eps_gamma)
    rate = eta / b[None, :]
    k = len(lambdas)
    s = np.zeros((k, d, m))
    hits = np.zeros((k, n), dtype=bool)
    residual = variant in ("1", "3")
    for t in range(n):
        pred = x[t] @ s  # (K, m): S_{t−1}ᵀ x_t
        if visible[t] > 0:
            hits[:, t] = np.argmax(pred[:, :visible[t]], axis=1) == column[t]
        lo = t - b[t] + 1
        xw, yw = x[lo:t + 1], targets[lo:t + 1]
        if residual:
            if b[t] == 1:
                r = yw[0][None, :] - pred  # (K, m)
                delta = x[t][None, :, None] * r[:, None, :]
            else:
                r = yw[None, :, :] - xw @ s  # (K, B, m), against S_{t−1}
                delta = xw.T @ r
        else:
            delta = (xw.T @ yw)[None, :, :]
        s *= gamma[:, t][:, None, None]
        s += rate[:, t][:, None, None] * delta
    return hits, m, s


def parse_list(text):
    return [float(v) for v in str(text).split(",")]


def config_name(variant, beta, lam, key_norm, window, scale_coupled, schedule, count):
    parts = [f"falcon-{variant}", f"beta={beta:g}", f"lambda={lam:g}", f"key_norm={key_norm}"]
    if variant.upper() in ("3", "3A"):
        parts.append(f"window={window}")
    if scale_coupled:
        parts.append("scale_coupled")
    if schedule != "none":
        parts.append(f"schedule={schedule}/{count}")
    return " ".join(parts)


def run_sim_configs(path, name, x, y, variant, betas, lambdas, key_norm, window, scale_coupled,
                    schedule, count, eps=EPS, eps_gamma=EPS_GAMMA):
    pairs = list(itertools.product(betas, lambdas))
    start = time.perf_counter()
    hits, m, _ = simulate(x, y, variant, [p[0] for p in pairs], [p[1] for p in pairs], key_norm,
                       window, eps, eps_gamma, scale_coupled, schedule, count)
    seconds = (time.perf_counter() - start) / len(pairs)
    for (beta, lam), h in zip(pairs, hits):
        report("falcon_real_sim", name,
               config_name(variant, beta, lam, key_norm, window, scale_coupled, schedule, count),
               h, seconds, m, variant=variant.upper(), beta=beta, **{"lambda": lam},
               key_norm=key_norm, window=window if variant.upper() in ("3", "3A") else 1,
               scale_coupled=bool(scale_coupled), schedule=schedule, count=count, eps=eps,
               eps_gamma=eps_gamma)


def run_sim(path, opts):
    names, _ = names_in(path, opts)
    for name in names:
        x, y = load(path, name)
        run_sim_configs(path, name, x, y, opts.get("variant", "1"),
                        parse_list(opts.get("beta", "1")), parse_list(opts.get("lambda", "0")),
                        opts.get("key_norm", "none"), int(opts.get("window", 4)),
                        opts.get("scale_coupled", "0") in ("1", "true"),
                        opts.get("schedule", "none"), opts.get("count", "store"),
                        float(opts.get("eps", EPS)), float(opts.get("eps_gamma", EPS_GAMMA)))


SWEEP_BETAS = [0.05, 0.1, 0.2, 0.3, 0.5, 1.0]
SWEEP_LAMBDAS = [0.0, 1e-3, 1e-2]
SWEEP_WINDOWS = [4, 8, 16, 32]


def run_sweep(path, opts):
    names, _ = names_in(path, opts)
    variants = opts.get("variants", "1,1A,3,3A").split(",")
    norms = opts.get("key_norms", "none,l2").split(",")
    betas = parse_list(opts["beta"]) if "beta" in opts else SWEEP_BETAS
    lambdas = parse_list(opts["lambda"]) if "lambda" in opts else SWEEP_LAMBDAS
    windows = [int(w) for w in opts["windows"].split(",")] if "windows" in opts else SWEEP_WINDOWS
    schedule, count = opts.get("schedule", "none"), opts.get("count", "store")
    scale_coupled = opts.get("scale_coupled", "0") in ("1", "true")
    for name in names:
        x, y = load(path, name)
        for variant in variants:
            for norm in norms:
                for window in (windows if variant.upper() in ("3", "3A") else [1]):
                    run_sim_configs(path, name, x, y, variant, betas, lambdas, norm, window,
                                    scale_coupled, schedule, count)


# ---------------------------------------------------------------------------------------------
# The check: a direct transcription of falcon_reference.h, one pair at a time.


class ReferenceModel:
    """falcon_reference.h's Model: S d × m, columns added as labels arrive, a deque window."""

    def __init__(self, variant, beta, lam, eps, eps_gamma, window, scale_coupled, norm, d):
        self.variant, self.beta, self.lam = variant, beta, lam
        self.eps, self.eps_gamma, self.scale_coupled, self.norm = eps, eps_gamma, scale_coupled, norm
        self.b = window if variant in ("3", "3A") else 1
        self.s = np.zeros((d, 0))
        self.window = []  # [x, y] pairs, ≤ B − 1 between steps

    def add_column(self):
        self.s = np.concatenate([self.s, np.zeros((self.s.shape[0], 1))], axis=1)
        for pair in self.window:
            pair[1] = np.append(pair[1], 0.0)

    def step(self, key, y):
        x = phi(self.norm, key[None, :])[0]
        before = x @ self.s
        self.window.append([x, y])
        while len(self.window) > self.b:
            self.window.pop(0)
        bt = len(self.window)
        if self.variant == "3":
            w = np.array([p[0] for p in self.window])
            energy = np.linalg.eigvalsh(w @ w.T)[-1] / bt
        elif self.variant == "3A":
            energy = sum(float(p[0] @ p[0]) for p in self.window) / bt
        else:
            energy = float(x @ x)
        lam_t = self.lam * energy if self.scale_coupled else self.lam
        eta = self.beta / (energy + lam_t + self.eps)
        gamma = 1.0 - min(eta * lam_t, 1.0 - self.eps_gamma)
        delta = np.zeros_like(self.s)
        for xj, yj in self.window:
            r = yj - xj @ self.s if self.variant in ("1", "3") else yj
            delta += np.outer(xj, r) / bt
        self.s = gamma * self.s + eta * delta
        if len(self.window) == self.b:
            self.window.pop(0)
        return before


def reference_hits(x, y, variant, beta, lam, key_norm, window, scale_coupled):
    model = ReferenceModel(variant, beta, lam, EPS, EPS_GAMMA, window, scale_coupled, key_norm,
                           x.shape[1])
    index, hits, scores = {}, [], []
    for key, label in zip(x.astype(np.float64), y):
        visible = len(index)
        if label not in index:
            index[label] = len(index)
            model.add_column()
        target = np.zeros(len(index))
        target[index[label]] = 1.0
        before = model.step(key, target)
        best = int(np.argmax(before[:visible])) if visible else -1
        hits.append(best == index[label])
        scores.append(before)
    return np.array(hits), model.s


def run_check(opts):
    rng = np.random.default_rng(3)
    worst = 0
    for trial in range(int(opts.get("trials", 24))):
        n, d, classes = 120, int(rng.integers(2, 9)), int(rng.integers(2, 7))
        scale = 10.0 ** rng.uniform(-3, 3)
        centers = rng.standard_normal((classes, d))
        labels = rng.integers(0, classes, n)
        x = scale * (centers[labels] + 0.7 * rng.standard_normal((n, d)))
        x[rng.integers(0, n, 3)] = 0.0  # zero keys
        y = np.array([f"c{v}" for v in labels])
        variant = ["1", "1A", "3", "3A"][trial % 4]
        norm = ["none", "l2", "rms"][trial % 3]
        window = int(rng.choice([2, 4, 7]))
        lam = float(rng.choice([0.0, 1e-3, 0.3]))
        beta = float(rng.choice([0.1, 0.5, 1.0, 1.9]))
        coupled = bool(trial % 5 == 0)
        ref_hits, ref_s = reference_hits(x, y, variant, beta, lam, norm, window, coupled)
        # Batched: the configuration next to two others, which must not disturb it.
        sim_hits, _, s_all = simulate(x, y, variant, [beta, 0.3, beta], [lam, lam, 0.01], norm,
                                      window, scale_coupled=coupled)
        same = bool((ref_hits == sim_hits[0]).all())
        s_sim = s_all[0]
        diff = float(np.abs(s_sim - ref_s).max() / max(np.abs(ref_s).max(), 1e-300))
        worst = max(worst, diff)
        print(json.dumps({"check": "sim vs falcon_reference.h transcription", "variant": variant,
                          "key_norm": norm, "window": window, "beta": beta, "lambda": lam,
                          "scale_coupled": coupled, "key_scale": scale, "same_hits": same,
                          "relative_state_diff": diff}), flush=True)
        if not same:
            raise SystemExit("prequential hits differ")
    print(json.dumps({"check": "done", "worst_relative_state_diff": worst}))


# ---------------------------------------------------------------------------------------------
# The least-squares ceiling: what any store that regresses one-hot targets linearly can reach.


def run_ceiling(path, opts):
    """Recursive least squares (exact online ridge, S_0 = 0, P_0 = I/λ) prequential accuracy, and
    the in-sample accuracy of the ridge fit on the WHOLE set (x as the store sees it, key_norm
    none): no falcon variant regressing one-hot targets does much better than either."""
    lam = float(opts.get("lambda", 1e-2))
    names, _ = names_in(path, opts)
    for name in names:
        x, y = load(path, name)
        x = x.astype(np.float64)
        column, visible, m = label_columns(y)
        n, d = x.shape
        targets = np.zeros((n, m))
        targets[np.arange(n), column] = 1.0
        p = np.eye(d) / lam
        w = np.zeros((d, m))
        hits = np.zeros(n, dtype=bool)
        start = time.perf_counter()
        for t in range(n):
            pred = x[t] @ w
            if visible[t] > 0:
                hits[t] = np.argmax(pred[:visible[t]]) == column[t]
            k = p @ x[t]
            g = k / (1.0 + x[t] @ k)
            w += np.outer(g, targets[t] - pred)
            p -= np.outer(g, k)
        report("falcon_real_ceiling", name, f"recursive least squares (lambda={lam:g})", hits,
               time.perf_counter() - start, m)
        fit = np.linalg.solve(x.T @ x + lam * np.eye(d), x.T @ targets)
        inside = np.argmax(x @ fit, axis=1) == column
        report("falcon_real_ceiling", name, f"offline ridge, in-sample (lambda={lam:g})", inside,
               0.0, m)


# ---------------------------------------------------------------------------------------------
# Summary.


PEER_KEYS = ("sklearn SGDClassifier", "river OneVsRest(LogisticRegression)")


def run_summary(peers_path, sim_paths, opts):
    peers = [json.loads(l) for l in open(peers_path) if l.startswith("{")]
    acc = {}
    for r in peers:
        acc.setdefault(r["data"], {})[r["method"]] = r["prequential_accuracy"]
    sims = {}
    for p in sim_paths:
        for line in open(p):
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            sims.setdefault(r["method"], {})[r["data"]] = r["prequential_accuracy"]
    sets = [s for s in acc]
    rows = []
    for method, by_set in sims.items():
        if not all(s in by_set for s in sets):
            continue
        margins = {s: by_set[s] - max(acc[s][k] for k in PEER_KEYS) for s in sets}
        worst_set = min(margins, key=margins.get)
        rows.append((margins[worst_set], sum(v >= 0 for v in margins.values()),
                     float(np.mean([by_set[s] for s in sets])), method, worst_set, margins))
    rows.sort(key=lambda r: (-r[1], -r[0]))
    top = int(opts.get("top", 25))
    print(f"sets: {', '.join(sets)}")
    for worst, wins, mean, method, worst_set, margins in rows[:top]:
        print(json.dumps({"method": method, "sets_at_or_above_both_peers": wins,
                          "worst_margin": round(worst, 4), "worst_set": worst_set,
                          "mean_accuracy": round(mean, 4)}))
    rows.sort(key=lambda r: -r[0])
    print("by worst margin:")
    for worst, wins, mean, method, worst_set, margins in rows[:top]:
        print(json.dumps({"method": method, "sets_at_or_above_both_peers": wins,
                          "worst_margin": round(worst, 4), "worst_set": worst_set,
                          "mean_accuracy": round(mean, 4)}))


# ---------------------------------------------------------------------------------------------
# The server itself.


def run_server(path, opts):
    from adaptd_client import Client

    params = {}
    for item in filter(None, opts.get("set", "").split(";")):
        key, value = item.split("=", 1)
        params[key] = value if key in ("variant", "key_norm") else float(value)
    per_call = int(opts.get("per_call", 5000))
    names, _ = names_in(path, opts)
    with Client(opts["address"]) as client:
        client.wait_ready()
        for name in names:
            x, y = load(path, name)
            store = f"{name}-{os.getpid()}"
            info = client.create_store("bench", store, kind="falcon", output="labels", **params)
            falcon = info["spec"]["params"]
            evaluated = correct = 0
            start = time.perf_counter()
            for first in range(0, len(y), per_call):
                done = client.adapt("bench", store, x[first:first + per_call],
                                    labels=[str(v) for v in y[first:first + per_call]], batch=512)
                evaluated += done["evaluated"]
                correct += done["correct"]
            seconds = time.perf_counter() - start
            client.delete_store("bench", store)
            print(json.dumps({
                "bench": "real_streams", "data": name,
                "method": "adaptd falcon " + (opts.get("set") or "defaults"), "n": int(len(y)),
                "classes": len(set(y.tolist())), "prequential_accuracy": correct / len(y),
                "evaluated": evaluated, "correct": correct,
                "examples_per_s": len(y) / seconds, "spec": falcon}), flush=True)


def main(argv):
    commands = ("data", "sklearn", "river", "sim", "sweep", "check", "ceiling", "summary",
                "server")
    if len(argv) < 2 or argv[1] not in commands or (argv[1] != "check" and len(argv) < 3):
        sys.stderr.write(__doc__)
        return 2
    opts = dict(a[2:].split("=", 1) for a in argv[2:] if a.startswith("--") and "=" in a)
    args = [a for a in argv[2:] if not a.startswith("--")]
    if argv[1] == "data":
        here = os.path.dirname(os.path.abspath(__file__))
        sys.path.insert(0, here)
        import real_streams_data
        return real_streams_data.main([argv[0]] + argv[2:])
    if argv[1] == "sklearn":
        run_sklearn(args[0], opts)
    elif argv[1] == "river":
        run_river(args[0], opts)
    elif argv[1] == "sim":
        run_sim(args[0], opts)
    elif argv[1] == "sweep":
        run_sweep(args[0], opts)
    elif argv[1] == "check":
        run_check(opts)
    elif argv[1] == "ceiling":
        run_ceiling(args[0], opts)
    elif argv[1] == "server":
        run_server(args[0], opts)
    else:
        run_summary(args[0], args[1:], opts)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
