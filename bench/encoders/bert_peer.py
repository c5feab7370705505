#!/usr/bin/env python3
"""The reference side of the sentence_bert benchmark: sentence-transformers (torch, CPU) encoding
the same corpus as bert_bench at one batch size with torch.set_num_threads(threads).

  bert_peer.py --model DIR --texts sentences.json --batch 8 --threads 2

Prints one JSON line like bert_bench's, with "impl": "sentence-transformers".
"""
import argparse
import json
import time

import torch
from sentence_transformers import SentenceTransformer


def corpus(path, count, max_chars):
    with open(path, encoding="utf-8") as f:
        sentences = json.load(f)["sentences"]
    # The same filter as bert_bench: UTF-8 byte length, non-empty.
    base = [s["text"] for s in sentences
            if s["text"] and len(s["text"].encode("utf-8")) <= max_chars]
    return [base[i % len(base)] for i in range(count)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--texts", required=True)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--count", type=int, default=512)
    p.add_argument("--max-chars", type=int, default=400)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    model = SentenceTransformer(a.model, device="cpu")
    texts = corpus(a.texts, a.count, a.max_chars)

    def run(n):
        with torch.inference_mode():
            for i in range(0, n, a.batch):
                model.encode(texts[i:i + a.batch], batch_size=a.batch, convert_to_numpy=True,
                             show_progress_bar=False)

    run(min(len(texts), 2 * a.batch))  # warm-up
    start = time.perf_counter()
    run(len(texts))
    seconds = time.perf_counter() - start
    print(json.dumps({"impl": "sentence-transformers", "batch": a.batch, "threads": a.threads,
                      "texts": len(texts), "seconds": seconds,
                      "texts_per_s": len(texts) / seconds,
                      "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
