"""The Python onnxruntime's side of bench/onnx/run.sh: the same model on the same token ids, with
the session settings adaptd's onnx encoder gives a text model (sequential execution, inter-op 1,
intra-op --threads, all graph optimisations, no memory patterns, no CPU arena). One JSON line
per batch size: rows per second after one warm-up run, over --seconds.

  ort_peer.py make-ids OUT [--rows 64] [--tokens 128] [--vocab VOCAB] [--seed 40]
      int64 [rows, tokens] ids: [CLS], random WordPiece ids (1000 up to the vocabulary's size),
      [SEP]; read by both sides.
  ort_peer.py model --model M --ids OUT [--tokens 128] [--threads 1] [--batches 1,8,64]
      [--seconds 3]

Needs numpy and the pinned onnxruntime (1.32.0), e.g. python3 -m venv --system-site-packages
/tmp/ort && /tmp/ort/bin/pip install onnxruntime==1.32.0.
"""
import argparse
import json
import time

import numpy as np


def make_ids(args):
    vocab = sum(1 for _ in open(args.vocab)) if args.vocab else 30522
    rng = np.random.default_rng(args.seed)
    ids = rng.integers(1000, vocab, size=(args.rows, args.tokens), dtype=np.int64)
    ids[:, 0] = 101   # [CLS]
    ids[:, -1] = 102  # [SEP]
    ids.tofile(args.out)


def rate(seconds, items, call):
    call()
    start = time.perf_counter()
    calls = 0
    while True:
        call()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return calls * items / elapsed


def model(args):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = args.threads
    options.inter_op_num_threads = 1
    options.enable_mem_pattern = False
    options.enable_cpu_mem_arena = False
    session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
    ids = np.fromfile(args.ids, dtype=np.int64).reshape(-1, args.tokens)
    for batch in [int(b) for b in args.batches.split(",")]:
        feeds = {"input_ids": ids[:batch], "attention_mask": np.ones_like(ids[:batch]),
                 "token_type_ids": np.zeros_like(ids[:batch])}
        r = rate(args.seconds, batch, lambda: session.run(["last_hidden_state"], feeds))
        print(json.dumps({"side": "onnxruntime-python", "case": "model", "batch": batch,
                          "threads": args.threads, "tokens": args.tokens, "rows_per_s": r,
                          "version": ort.__version__}), flush=True)


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("make-ids")
    p.add_argument("out")
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--vocab")
    p.add_argument("--seed", type=int, default=40)
    p.set_defaults(run=make_ids)
    p = sub.add_parser("model")
    p.add_argument("--model", required=True)
    p.add_argument("--ids", required=True)
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--batches", default="1,8,64")
    p.add_argument("--seconds", type=float, default=3)
    p.set_defaults(run=model)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
