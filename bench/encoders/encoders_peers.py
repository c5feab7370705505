#!/usr/bin/env python3
"""Peers of the encoders benchmark, on the same texts (one per line), one thread:
  hashing TEXTS --dim D --batches 1,8,64   scikit-learn HashingVectorizer (word 1-2 grams plus
                                           char_wb 3-5 grams, alternate signs, L2), transform()
                                           per batch: the same kind of work as hashed_ngrams
  fasttext TEXTS --model BIN               the `fasttext print-sentence-vectors` command over the
                                           texts (repeated to 40000 lines), minus its time for one
                                           text (model loading)
  table RESULTS.jsonl                      the markdown tables of RESULTS-encoders.md
Results are JSON lines on stdout. Run with Debian's /usr/bin/python3 (python3-sklearn).
"""
import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time


def read_texts(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f if line.strip()]


def hashing(args):
    from sklearn.feature_extraction.text import HashingVectorizer
    from sklearn.pipeline import FeatureUnion
    from sklearn.preprocessing import normalize
    texts = read_texts(args.texts)
    half = args.dim // 2  # two halves of one table of `dim` features
    union = FeatureUnion([
        ("words", HashingVectorizer(n_features=half, ngram_range=(1, 2), alternate_sign=True,
                                    norm=None)),
        ("chars", HashingVectorizer(n_features=half, analyzer="char_wb", ngram_range=(3, 5),
                                    alternate_sign=True, norm=None)),
    ])
    for batch in args.batches:
        rates = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            for i in range(0, len(texts), batch):
                normalize(union.transform(texts[i:i + batch]))
            rates.append(len(texts) / (time.perf_counter() - start))
        print(json.dumps({"kind": "throughput", "impl": "sklearn HashingVectorizer",
                          "encoder": "hashed_ngrams", "batch": batch, "texts": len(texts),
                          "texts_per_s": statistics.median(rates)}))


def fasttext(args):
    texts = read_texts(args.texts)

    def run(lines):
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("\n".join(lines) + "\n")
            path = f.name
        start = time.perf_counter()
        with open(path) as stdin:
            subprocess.run(["fasttext", "print-sentence-vectors", args.model], stdin=stdin,
                           stdout=subprocess.DEVNULL, check=True)
        return time.perf_counter() - start

    # The texts repeated to at least 40000 lines, so that encoding outweighs the noise of the
    # model's loading time, which is measured apart (one line) and subtracted.
    many = texts * max(1, -(-40000 // len(texts)))
    rates = []
    for _ in range(args.rounds):
        load = run(texts[:1])
        total = run(many)
        rates.append((len(many) - 1) / max(total - load, 1e-9))
    print(json.dumps({"kind": "throughput", "impl": "fasttext print-sentence-vectors",
                      "encoder": "fasttext", "batch": "stream", "texts": len(many),
                      "texts_per_s": statistics.median(rates)}))


def table(args):
    rows = [json.loads(line) for line in open(args.results) if line.strip()]
    thr = [r for r in rows if r["kind"] == "throughput"]
    acc = [r for r in rows if r["kind"] == "accuracy"]
    out = ["| encoder | batch | adaptd texts/s | peer | peer texts/s | ratio |",
           "|---|---|---|---|---|---|"]
    for r in thr:
        if r["impl"] != "adaptd":
            continue
        peers = [p for p in thr if p["impl"] != "adaptd" and p["encoder"] == r["encoder"]
                 and p["batch"] in (r["batch"], "stream")]
        for p in peers or [None]:
            if p is None:
                out.append(f"| {r['encoder']} (d={r['dim']}) | {r['batch']} | "
                           f"{r['texts_per_s']:.0f} | - | - | - |")
            else:
                out.append(f"| {r['encoder']} (d={r['dim']}) | {r['batch']} | "
                           f"{r['texts_per_s']:.0f} | {p['impl']} | {p['texts_per_s']:.0f} | "
                           f"{r['texts_per_s'] / p['texts_per_s']:.2f}x |")
    out += ["", "| encoder | dim | train | test | FAAST accuracy | solver | adapt+compile s |",
            "|---|---|---|---|---|---|---|"]
    for r in acc:
        out.append(f"| {r['encoder']} | {r['dim']} | {r['train']} | {r['test']} | "
                   f"{r['accuracy']:.3f} | {r['solver']} | {r['adapt_compile_s']:.2f} |")
    print("\n".join(out))


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("hashing")
    h.add_argument("texts")
    h.add_argument("--dim", type=int, default=4096)
    h.add_argument("--batches", default="1,8,64")
    h.add_argument("--rounds", type=int, default=3)
    f = sub.add_parser("fasttext")
    f.add_argument("texts")
    f.add_argument("--model", required=True)
    f.add_argument("--rounds", type=int, default=3)
    t = sub.add_parser("table")
    t.add_argument("results")
    args = parser.parse_args()
    if args.cmd == "hashing":
        args.batches = [int(b) for b in args.batches.split(",")]
        hashing(args)
    elif args.cmd == "fasttext":
        fasttext(args)
    else:
        table(args)


if __name__ == "__main__":
    sys.exit(main())
