"""Embeds texts with sentence-transformers, for few_shot_curve.py's reference side.

Run with a Python that has sentence-transformers (CPU torch is enough):

  python embed_st.py --model DIR --max-tokens 128 --texts in.json --out out.npy

in.json: a JSON list of strings. out.npy: float32 rows x dim, L2-normalised (as adaptd's
sentence_bert encoder answers), in the order of the input list.
"""

import argparse
import json
import os
import sys
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="sentence-transformers model directory")
    parser.add_argument("--max-tokens", type=int, default=128,
                        help="max_seq_length, the same as adaptd's max_tokens")
    parser.add_argument("--texts", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()

    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer
    import sentence_transformers

    torch.set_num_threads(args.threads)
    model = SentenceTransformer(args.model, device="cpu")
    model.max_seq_length = args.max_tokens
    with open(args.texts, encoding="utf-8") as handle:
        texts = json.load(handle)
    start = time.monotonic()
    with torch.inference_mode():
        vectors = model.encode(texts, batch_size=args.batch, normalize_embeddings=True,
                               convert_to_numpy=True, show_progress_bar=False)
    seconds = time.monotonic() - start
    vectors = np.asarray(vectors, dtype=np.float32)
    tmp = args.out + ".tmp.npy"
    np.save(tmp, vectors)
    os.replace(tmp, args.out)
    print(json.dumps({"texts": len(texts), "dim": int(vectors.shape[1]), "seconds": round(seconds, 1),
                      "sentence_transformers": sentence_transformers.__version__,
                      "torch": torch.__version__}), file=sys.stderr)


if __name__ == "__main__":
    main()
