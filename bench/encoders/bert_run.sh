#!/usr/bin/env bash
# sentence_bert against sentence-transformers, side by side: for each round and batch size,
# bert_bench and bert_peer.py encode the same texts with the same thread count, one after the
# other, so load on the machine hits both. Prints each run as JSON and a summary table
# (median texts/s per side, ratio adaptd / reference).
#
#   PEER_PYTHON=/tmp/st/bin/python bash bench/encoders/bert_run.sh [BUILD_DIR] [THREADS] [ROUNDS]
#
# PEER_PYTHON: a Python with sentence-transformers and torch (CPU) installed, e.g.
#   python3 -m venv /tmp/st && /tmp/st/bin/pip install sentence-transformers
# MODEL: the model directory (default BUILD_DIR/models/all-MiniLM-L6-v2, as .ci/dev fetches it).
# BATCHES (default "1 8 64"), COUNT (texts per run, default 512), COUNT_B1 (at batch 1, 64).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${1:-$root/build}
threads=${2:-2}
rounds=${3:-3}
model=${MODEL:-$build_dir/models/all-MiniLM-L6-v2}
peer_python=${PEER_PYTHON:?set PEER_PYTHON to a python with sentence-transformers}
texts=$root/tests/fixtures/minilm/sentences.json
batches=(${BATCHES:-1 8 64})
# Texts per timed run: COUNT_B1 at batch size 1, COUNT otherwise.
count_for() { [ "$1" -eq 1 ] && echo "${COUNT_B1:-64}" || echo "${COUNT:-512}"; }

log=$(mktemp)
for ((r = 1; r <= rounds; r++)); do
  for b in "${batches[@]}"; do
    n=$(count_for "$b")
    "$build_dir/server/encoders/bert/bert_bench" --model "$model" --texts "$texts" \
      --batch "$b" --threads "$threads" --count "$n" | tee -a "$log"
    OMP_NUM_THREADS=$threads "$peer_python" "$root/bench/encoders/bert_peer.py" --model "$model" \
      --texts "$texts" --batch "$b" --threads "$threads" --count "$n" 2>/dev/null | tee -a "$log"
  done
done
python3 - "$log" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print("\n| batch | threads | adaptd texts/s | sentence-transformers texts/s | ratio |")
print("|---:|---:|---:|---:|---:|")
for b in sorted({r["batch"] for r in runs}):
    med = {impl: statistics.median(r["texts_per_s"] for r in runs
                                   if r["batch"] == b and r["impl"] == impl)
           for impl in ("adaptd", "sentence-transformers")}
    t = runs[0]["threads"]
    print(f"| {b} | {t} | {med['adaptd']:.1f} | {med['sentence-transformers']:.1f} | "
          f"{med['adaptd'] / med['sentence-transformers']:.2f}x |")
PY
rm -f "$log"
