"""Few-shot learning curve of faast's zero-shot prior (label embeddings, prior_examples = N0).

Data: Debian's `fortunes` package (the fortune-cookie files under /usr/share/games/fortunes,
one file per category; entries separated by lines holding a single '%'). Each chosen category
is a class and its file name is the label text that the store embeds (e.g. "food", "law").

For every k in --shots (examples per class) and every seed of the k-shot draw the script
measures test accuracy of

  faast N0=<n>   a faast label store, label_encoder = the sentence encoder, the categories
                 declared at creation, prior_examples = n (k = 0: the zero-shot answer)
  fast weights   the same store with prior_examples = 0 (fast weights alone; no answer at k = 0)
  logreg         scikit-learn LogisticRegression() (defaults) on the same sentence embeddings

Each store is created, adapted with the k-shot examples (one Adapt call), compiled (the default
faast compile: spectral / few-shot solver, cut-off N^-1, no ridge; --ridge R creates the
stores with ridge = R instead), asked for the test set
(Predict calls of --predict-batch inputs) and deleted.

Keys (--keys):
  text     the store's key encoder is --encoder itself: texts go to the server, which embeds
           them (the production path; about 25 texts/s per core here, so slow for a big grid)
  vectors  the store's key encoder is --vector-encoder (an `identity` encoder of the sentence
           encoder's width) and the keys are sentence-transformers embeddings of the texts
           (the same model); label names are still embedded by the server's --encoder

LogisticRegression always uses the sentence-transformers embeddings (--st-python runs
embed_st.py, cached under --work). The script also recomputes every faast answer in numpy from
those embeddings (S = K^+ V with the cut-off N^-1, read-out (1-r)I + rS, cosine decoding) and
reports how often the server's top-1 label agrees with it.

The server is not started here: run adaptd with a config that hosts the sentence_bert encoder
(and, for --keys vectors, an identity encoder of dim 384), e.g. (run_few_shot.sh does this)

  {"encoders": [
    {"name": "minilm", "type": "sentence_bert", "model_path": "build/models/all-MiniLM-L6-v2",
     "max_tokens": 128},
    {"name": "vec384", "type": "identity", "dim": 384}]}

  build/server/adaptd --config cfg.json --listen 127.0.0.1:50561 --data-dir /tmp/x/data

then

  PYTHONPATH=build/client/python:client/python /usr/bin/python3 bench/quality/few_shot_curve.py \
      --address 127.0.0.1:50561 --encoder minilm --st-python /path/to/venv/bin/python
"""

import argparse
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_CATEGORIES = ("art,computers,drugs,education,food,law,love,politics,science,sports")


# -- data -----------------------------------------------------------------------------------

def read_fortune_file(path):
    """The entries of one fortune file, cleaned: overstrike sequences (char, backspace) dropped,
    other control characters removed, whitespace runs collapsed to one space."""
    with open(path, "rb") as handle:
        raw = handle.read().decode("latin-1")
    entries = []
    for chunk in re.split(r"\n%\n", raw.replace("\r\n", "\n")):
        text = re.sub(r".\x08", "", chunk)
        text = re.sub(r"[\x00-\x08\x0b-\x1f\x7f]", "", text)
        text = re.sub(r"\s+", " ", text).strip()
        if text and text != "%":
            entries.append(text)
    return entries


def load_dataset(directory, categories):
    """{category: texts}; a text found in more than one category (or twice) is kept once, in
    the first category that has it only if it appears in no other."""
    per_category = {c: read_fortune_file(os.path.join(directory, c)) for c in categories}
    owners = {}
    for category, texts in per_category.items():
        for text in texts:
            owners.setdefault(text, set()).add(category)
    data = {}
    for category, texts in per_category.items():
        seen = set()
        kept = []
        for text in texts:
            if len(owners[text]) == 1 and text not in seen:
                seen.add(text)
                kept.append(text)
        data[category] = kept
    return data


def split_dataset(data, test_per_class, seed):
    """(test_texts, test_labels, pools): test_per_class texts of each class for the test set,
    the rest of the class as its pool of training candidates; seeded shuffle per class."""
    rng = np.random.default_rng(seed)
    test_texts, test_labels, pools = [], [], {}
    for category in sorted(data):
        texts = data[category]
        order = rng.permutation(len(texts))
        test = [texts[i] for i in order[:test_per_class]]
        pools[category] = [texts[i] for i in order[test_per_class:]]
        test_texts.extend(test)
        test_labels.extend([category] * len(test))
    return test_texts, test_labels, pools


def draw_orders(pools, max_k, seed):
    """{category: the first max_k pool texts in a seeded random order}. The k-shot set of a seed
    is the first k of each class, so the sets of one seed are nested in k."""
    rng = np.random.default_rng(seed)
    orders = {}
    for category in sorted(pools):
        pool = pools[category]
        if len(pool) < max_k:
            raise SystemExit("category %r has %d training texts, fewer than k = %d"
                             % (category, len(pool), max_k))
        orders[category] = [pool[i] for i in rng.permutation(len(pool))[:max_k]]
    return orders


# -- reference embeddings -------------------------------------------------------------------

def st_embeddings(texts, args):
    """sentence-transformers embeddings of texts (float32 rows, L2-normalised), cached."""
    digest = hashlib.sha256()
    digest.update(os.path.realpath(args.model).encode())
    digest.update(str(args.max_tokens).encode())
    for text in texts:
        digest.update(text.encode("utf-8") + b"\0")
    key = digest.hexdigest()[:16]
    os.makedirs(args.work, exist_ok=True)
    out = os.path.join(args.work, "st-%s.npy" % key)
    if not os.path.exists(out):
        if not args.st_python:
            raise SystemExit("no cached embeddings at %s: give --st-python" % out)
        source = os.path.join(args.work, "st-%s.json" % key)
        with open(source, "w", encoding="utf-8") as handle:
            json.dump(texts, handle)
        env = dict(os.environ, OMP_NUM_THREADS=str(args.st_threads),
                   MKL_NUM_THREADS=str(args.st_threads))
        subprocess.run([args.st_python, os.path.join(HERE, "embed_st.py"), "--model", args.model,
                        "--max-tokens", str(args.max_tokens), "--texts", source, "--out", out,
                        "--threads", str(args.st_threads)], check=True, env=env)
    vectors = np.load(out)
    if vectors.shape[0] != len(texts):
        raise SystemExit("%s: %d rows for %d texts" % (out, vectors.shape[0], len(texts)))
    return vectors


def numpy_faast(keys, label_index, label_vectors, queries, prior_examples, ridge=0.0,
                alpha=1.0):
    """faast's label-embedding answer computed in numpy (float64): S = K^+ V with the relative
    cut-off eps = min(1, N^-alpha) on K's singular values (ridge > 0: S = K^T (K K^T + ridge I)^-1
    V), read-out (1-r) I + r S with r = N / (N0 + N) when N0 > 0, top-1 label by cosine
    against label_vectors."""
    queries = queries.astype(np.float64)
    labels = label_vectors.astype(np.float64)
    labels = labels / np.linalg.norm(labels, axis=1, keepdims=True)
    n = keys.shape[0]
    if n and ridge > 0:
        k = keys.astype(np.float64)
        y = queries @ (k.T @ np.linalg.solve(k @ k.T + ridge * np.eye(n), labels[label_index]))
    elif n:
        k = keys.astype(np.float64)
        v = labels[label_index]
        u, s, vt = np.linalg.svd(k, full_matrices=False)
        eps = min(1.0, float(n) ** (-alpha))
        keep = (s >= eps * s[0]) & (s > 0)
        pinv = (vt[keep].T / s[keep]) @ u[:, keep].T
        y = queries @ (pinv @ v)
    else:
        y = np.zeros((queries.shape[0], labels.shape[1]))
    if prior_examples > 0:
        r = n / (prior_examples + n)
        y = (1.0 - r) * queries + r * y
    return np.argmax(y @ labels.T, axis=1)


# -- the server side ------------------------------------------------------------------------

def run_store(client, args, name, categories, prior_examples, train_inputs, train_labels,
              test_inputs):
    """Creates a store, adapts, compiles, predicts the test inputs; returns (predicted labels,
    compile stats, seconds). The store is deleted whatever happens."""
    encoder = args.encoder if args.keys == "text" else args.vector_encoder
    dim = 0 if args.keys == "text" else int(args.dim)
    start = time.monotonic()
    client.create_store(args.tenant, name, "faast", encoder=encoder, output="labels", dim=dim,
                        label_encoder=args.encoder, labels=categories,
                        prior_examples=float(prior_examples), ridge=float(args.ridge))
    try:
        stats = {}
        if len(train_labels):
            client.adapt(args.tenant, name, train_inputs, labels=train_labels)
            stats = client.compile(args.tenant, name)["stats"]
        else:
            stats = client.get_store(args.tenant, name)["stats"]
        predicted = []
        for begin in range(0, len(test_inputs), args.predict_batch):
            batch = test_inputs[begin:begin + args.predict_batch]
            predicted.extend(p[0][0] for p in client.predict(args.tenant, name, batch))
    finally:
        client.delete_store(args.tenant, name)
    return predicted, stats, time.monotonic() - start


def mean_std(values):
    values = np.asarray(values, dtype=np.float64)
    return float(values.mean()), float(values.std(ddof=1)) if len(values) > 1 else 0.0


def lscpu_model():
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def package_version(name):
    try:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True,
                             text=True)
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog=__doc__.split("\n\n", 1)[1])
    parser.add_argument("--address", required=True, help="HOST:PORT of a running adaptd")
    parser.add_argument("--encoder", default="minilm",
                        help="the server's sentence_bert encoder (label encoder; keys with "
                             "--keys text)")
    parser.add_argument("--keys", choices=("vectors", "text"), default="vectors")
    parser.add_argument("--vector-encoder", default="vec384",
                        help="the server's identity encoder for --keys vectors")
    parser.add_argument("--dim", type=int, default=384, help="key width for --keys vectors")
    parser.add_argument("--tenant", default="fewshot")
    parser.add_argument("--fortunes-dir", default="/usr/share/games/fortunes")
    parser.add_argument("--categories", default=DEFAULT_CATEGORIES,
                        help="comma-separated fortune files; each is a class and its label text")
    parser.add_argument("--test-per-class", type=int, default=60)
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--shots", default="0,1,2,4,8,16")
    parser.add_argument("--seeds", type=int, default=5, help="k-shot draws per k")
    parser.add_argument("--prior", default="4,16,64", help="N0 values (prior_examples)")
    parser.add_argument("--ridge", type=float, default=0.0,
                        help="faast ridge (0: the default spectral / few-shot cut-off solver)")
    parser.add_argument("--predict-batch", type=int, default=256)
    parser.add_argument("--model", default=os.path.join(ROOT, "build/models/all-MiniLM-L6-v2"))
    parser.add_argument("--max-tokens", type=int, default=128,
                        help="sentence-transformers max_seq_length; must equal the server "
                             "encoder's max_tokens")
    parser.add_argument("--st-python", default=os.environ.get("ST_PYTHON", ""),
                        help="a Python with sentence-transformers (runs embed_st.py)")
    parser.add_argument("--st-threads", type=int, default=1)
    parser.add_argument("--work", default="/work/bench-work/fewshot/cache")
    parser.add_argument("--json", default="", help="write every run's results here")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args()

    from adaptd_client import Client
    import sklearn
    from sklearn.linear_model import LogisticRegression

    categories = sorted(c.strip() for c in args.categories.split(",") if c.strip())
    shots = [int(k) for k in args.shots.split(",")]
    priors = [float(n) for n in args.prior.split(",") if n.strip()]
    max_k = max(shots)

    data = load_dataset(args.fortunes_dir, categories)
    test_texts, test_labels, pools = split_dataset(data, args.test_per_class, args.split_seed)
    orders = [draw_orders(pools, max_k, 1000 + seed) for seed in range(args.seeds)]

    # Every text that any run uses, embedded once by sentence-transformers.
    needed = list(test_texts) + list(categories)
    for order in orders:
        for category in categories:
            needed.extend(order[category])
    unique = list(dict.fromkeys(needed))
    vectors = st_embeddings(unique, args)
    row = {text: i for i, text in enumerate(unique)}
    test_x = vectors[[row[t] for t in test_texts]]
    label_x = vectors[[row[c] for c in categories]]
    test_y = np.array([categories.index(c) for c in test_labels])

    client = Client(args.address, timeout=args.timeout)
    client.wait_ready()
    encoders = {e["name"]: e for e in client.encoders()}
    if args.encoder not in encoders:
        raise SystemExit("the server hosts no encoder %r (it has %s)"
                         % (args.encoder, ", ".join(encoders)))

    def inputs_for(texts):
        if args.keys == "text":
            return list(texts)
        return vectors[[row[t] for t in texts]]

    test_inputs = inputs_for(test_texts)
    runs = []
    methods = ["faast N0=%g" % n for n in priors] + ["fast weights", "logreg"]
    print("data: %d classes, test %d (%d per class), pools %s" % (
        len(categories), len(test_texts), args.test_per_class,
        {c: len(p) for c, p in pools.items()}), file=sys.stderr)
    zero_shot_numpy = float(np.mean(np.argmax(test_x @ label_x.T, axis=1) == test_y))

    for k in shots:
        seeds = range(1) if k == 0 else range(args.seeds)
        for seed in seeds:
            train_texts, train_labels = [], []
            for category in categories:
                train_texts.extend(orders[seed][category][:k])
                train_labels.extend([category] * k)
            train_x = vectors[[row[t] for t in train_texts]] if train_texts else np.zeros((0, 384))
            train_idx = np.array([categories.index(c) for c in train_labels], dtype=int)
            for n0 in priors + [0.0]:
                method = "fast weights" if n0 == 0 else "faast N0=%g" % n0
                if k == 0 and n0 == 0:
                    continue
                name = "k%d-s%d-n%g" % (k, seed, n0)
                predicted, stats, seconds = run_store(
                    client, args, name, categories, n0, inputs_for(train_texts), train_labels,
                    test_inputs)
                predicted_idx = np.array([categories.index(p) for p in predicted])
                reference = numpy_faast(train_x, train_idx, label_x, test_x, n0, args.ridge)
                runs.append({
                    "k": k, "seed": seed, "method": method,
                    "accuracy": float(np.mean(predicted_idx == test_y)),
                    "numpy_accuracy": float(np.mean(reference == test_y)),
                    "agreement_with_numpy": float(np.mean(reference == predicted_idx)),
                    "solver": stats.get("solver"), "rank": stats.get("effective_rank"),
                    "fast_weight_share": stats.get("fast_weight_share"),
                    "seconds": round(seconds, 2)})
                print(json.dumps(runs[-1]), file=sys.stderr)
            if k >= 1:
                start = time.monotonic()
                model = LogisticRegression().fit(train_x, train_idx)
                predicted_idx = model.predict(test_x)
                runs.append({"k": k, "seed": seed, "method": "logreg",
                             "accuracy": float(np.mean(predicted_idx == test_y)),
                             "seconds": round(time.monotonic() - start, 2)})
                print(json.dumps(runs[-1]), file=sys.stderr)

    # -- the report -----------------------------------------------------------------------
    lines = []
    lines.append("Data: Debian package fortunes %s (%s), classes (= label texts): %s"
                 % (package_version("fortunes"), args.fortunes_dir, ", ".join(categories)))
    lines.append("Test: %d texts (%d per class, split seed %d); training pools per class: %s"
                 % (len(test_texts), args.test_per_class, args.split_seed,
                    ", ".join("%s %d" % (c, len(pools[c])) for c in categories)))
    lines.append("k-shot draws: %d seeds (nested in k); keys: %s; faast compile: %s; "
                 "encoder %s (%s); scikit-learn %s; machine: %s"
                 % (args.seeds, args.keys,
                    ("ridge %g" % args.ridge if args.ridge > 0
                     else "default (cut-off N^-1, no ridge)"),
                    args.encoder,
                    encoders[args.encoder].get("fingerprint", ""), sklearn.__version__,
                    lscpu_model()))
    lines.append("Zero-shot accuracy computed in numpy from sentence-transformers embeddings: "
                 "%.4f" % zero_shot_numpy)
    lines.append("")
    lines.append("Test accuracy, mean ± std over the k-shot draws (k = 0: one deterministic run)")
    lines.append("")
    lines.append("| k | " + " | ".join(methods) + " |")
    lines.append("|---:|" + "---:|" * len(methods))
    for k in shots:
        cells = []
        for method in methods:
            values = [r["accuracy"] for r in runs if r["k"] == k and r["method"] == method]
            if not values:
                cells.append("n/a")
            elif len(values) == 1:
                cells.append("%.3f" % values[0])
            else:
                mean, std = mean_std(values)
                cells.append("%.3f ± %.3f" % (mean, std))
        lines.append("| %d | %s |" % (k, " | ".join(cells)))
    faast_runs = [r for r in runs if "agreement_with_numpy" in r]
    agreement = np.mean([r["agreement_with_numpy"] for r in faast_runs]) if faast_runs else 1.0
    worst = min(faast_runs, key=lambda r: r["agreement_with_numpy"]) if faast_runs else None
    lines.append("")
    lines.append("Server top-1 vs the numpy recomputation: mean agreement %.4f over %d stores"
                 "%s" % (agreement, len(faast_runs),
                         "" if worst is None else ", lowest %.4f (%s, k=%d, seed %d)"
                         % (worst["agreement_with_numpy"], worst["method"], worst["k"],
                            worst["seed"])))
    share = {}
    for r in faast_runs:
        if r["method"].startswith("faast") and r["k"] > 0:
            share.setdefault((r["method"], r["k"]), r["fast_weight_share"])
    if share:
        lines.append("fast_weight_share r at each k: " + "; ".join(
            "%s k=%d r=%.3f" % (m, k, s) for (m, k), s in sorted(share.items())))
    report = "\n".join(lines)
    print(report)
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"args": vars(args), "runs": runs, "report": report}, handle, indent=1)


if __name__ == "__main__":
    main()
