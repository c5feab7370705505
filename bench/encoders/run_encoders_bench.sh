#!/usr/bin/env bash
# Text encoders: texts per second at batch sizes 1, 8, 64 beside their peers (scikit-learn's
# HashingVectorizer for hashed_ngrams, the fasttext command for fasttext), and FAAST accuracy
# with each text encoder on the generated intent set (make_text_dataset.py). Prints the
# markdown tables of RESULTS-encoders.md.
#
# Usage: bench/encoders/run_encoders_bench.sh [BUILD_DIR] (default build-bench).
# Environment: BERT_MODEL_DIR (a sentence_bert model directory with model.safetensors and
# vocab.txt; when set, sentence_bert joins both tables), ROUNDS (3), SEED (1), DIM (4096).
# Everything runs on one thread.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-$root/build-bench}"
ROUNDS="${ROUNDS:-3}" SEED="${SEED:-1}" DIM="${DIM:-4096}"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DADAPTD_ENABLE_CUDA=OFF >&2
fi
ninja -C "$build" -j2 encoders_bench >&2
bench="$build/bench/encoders/encoders_bench"
data="$build/encoders-bench-data"
out="$build/encoders-bench-results.jsonl"
: >"$out"

/usr/bin/python3 "$here/make_text_dataset.py" "$data" --seed "$SEED"
# An unsupervised fastText model trained on unlabelled training-side texts: a frozen encoder
# that never saw a label.
fasttext skipgram -input "$data/unlabelled.txt" -output "$data/skipgram" -dim 100 -epoch 10 \
  -minCount 2 -minn 3 -maxn 5 -thread 1 -seed "$SEED" -verbose 0 >&2

"$bench" throughput --type hashed_ngrams --dim "$DIM" --texts "$data/texts.txt" \
  --rounds "$ROUNDS" | tee -a "$out" >&2
/usr/bin/python3 "$here/encoders_peers.py" hashing "$data/texts.txt" --dim "$DIM" \
  --rounds "$ROUNDS" | tee -a "$out" >&2
"$bench" throughput --type fasttext --model "$data/skipgram.bin" --texts "$data/texts.txt" \
  --rounds "$ROUNDS" | tee -a "$out" >&2
/usr/bin/python3 "$here/encoders_peers.py" fasttext "$data/texts.txt" \
  --model "$data/skipgram.bin" --rounds "$ROUNDS" | tee -a "$out" >&2
if [[ -n "${BERT_MODEL_DIR:-}" ]]; then
  "$bench" throughput --type sentence_bert --model "$BERT_MODEL_DIR" --texts "$data/texts.txt" \
    --rounds 1 | tee -a "$out" >&2
fi

for dim in 1024 "$DIM"; do
  "$bench" accuracy --type hashed_ngrams --dim "$dim" --train "$data/train.tsv" \
    --test "$data/test.tsv" | tee -a "$out" >&2
done
"$bench" accuracy --type fasttext --model "$data/skipgram.bin" --train "$data/train.tsv" \
  --test "$data/test.tsv" | tee -a "$out" >&2
if [[ -n "${BERT_MODEL_DIR:-}" ]]; then
  "$bench" accuracy --type sentence_bert --model "$BERT_MODEL_DIR" --train "$data/train.tsv" \
    --test "$data/test.tsv" | tee -a "$out" >&2
fi

/usr/bin/python3 "$here/encoders_peers.py" table "$out"
