#!/bin/bash
# The onnx encoder's figures (bench/RESULTS.md, "ONNX encoders"), all on the fp32 ONNX graph of
# all-MiniLM-L6-v2 that server/encoders/testdata/onnx/make_minilm_onnx.py builds (the
# onnx_minilm_graph test fixture writes it to BUILD/server/encoders/onnx_minilm):
#  1. the model run alone on identical token ids ([batch, 128]) against the Python onnxruntime at
#     the same threads (1 and 2), batch 1, 8 and 64, the two sides alternated per round;
#  2. tokenizing (WordPiece) and image decoding (with and without resize and crop), apart;
#  3. the encoder in process (texts/s by Encode batch; its best is the reference for 4);
#  4. served: predicts/s at 64 clients (adaptctl bench, faast stores, one text per request) on
#     the onnx MiniLM encoder and on the native sentence_bert one, alternated per round;
#  5. resident memory: adaptd with no model, with the onnx MiniLM, with sentence_bert, and the
#     onnx server's growth over MEMORY_SECONDS of mixed shapes (texts of 1 to 200 words, 64, 8
#     and 1 clients in turn), sampled every 10 s from the first sample after 30 s;
#  6. the heap settings' cost (server/encoders/onnx/onnx_heaps.h): predicts/s at 64 clients on the
#     onnx MiniLM as in 4, one adaptd with the settings (ADAPTD_ONNX_HEAP_TOP_MIB=HEAP_TOP_MIB,
#     empty: the default) and one without (0: glibc's own thresholds), alternated per round, with
#     the server's CPU time and minor page faults per predict.
# Prints JSON lines (to OUT too) and a summary.
#
# Usage: bench/onnx/run.sh [BUILD_DIR]   (default: build)
# Environment: PEER_PYTHON (a python with numpy and onnxruntime 1.32.0; required), ROUNDS (3),
#   SECONDS_PER_CASE (3), DURATION (10, per served phase), STORES (20), MEMORY_SECONDS (150),
#   OUT (a JSON lines file; default WORK/results.jsonl, removed at exit), PARTS (the parts to
#   run, default "1 2 3 4 5 6"; the summary covers what OUT holds).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-build}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
ADAPTD="$BUILD/server/adaptd"
ADAPTCTL="$BUILD/client/adaptctl/adaptctl"
BENCH="$BUILD/bench/onnx/onnx_bench"
LIBRARY="$BUILD/onnxruntime/libonnxruntime.so"
MODEL="$BUILD/server/encoders/onnx_minilm/model.onnx"
MINILM="$(sed -n 's/^ADAPTD_MINILM_DIR:PATH=//p' "$BUILD/CMakeCache.txt")"
PEER_PYTHON="${PEER_PYTHON:?a python with onnxruntime 1.32.0 and numpy}"
ROUNDS="${ROUNDS:-3}"
SECONDS_PER_CASE="${SECONDS_PER_CASE:-3}"
DURATION="${DURATION:-10}"
STORES="${STORES:-20}"
MEMORY_SECONDS="${MEMORY_SECONDS:-150}"
PARTS=" ${PARTS:-1 2 3 4 5 6} "
part() { [[ "$PARTS" == *" $1 "* ]]; }
for f in "$ADAPTD" "$ADAPTCTL" "$BENCH" "$LIBRARY" "$MODEL" "$MINILM/model.safetensors"; do
  [[ -e "$f" ]] || { echo "missing $f (bash .ci/dev build; ctest -R onnx_minilm_graph)" >&2; exit 1; }
done

# shellcheck source=bench/fresh_server.sh
. "$ROOT/bench/fresh_server.sh"
OUT="${OUT:-$WORK/results.jsonl}"
touch "$OUT"
emit() { tee -a "$OUT"; }

/usr/bin/python3 "$ROOT/bench/encoders/make_text_dataset.py" "$WORK/texts" >/dev/null
TEXTS="$WORK/texts/texts.txt"
IDS="$WORK/ids.bin"
"$PEER_PYTHON" "$ROOT/bench/onnx/ort_peer.py" make-ids "$IDS" --vocab "$(dirname "$MODEL")/vocab.txt"

# served ENCODER FIELDS: predicts/s of one adaptctl bench at 64 clients on ENCODER (faast stores,
# one text per request), a JSON line that starts with FIELDS (a JSON object).
served() {
  "$ADAPTCTL" --addr "$ADDR" --timeout 120 bench --concurrency 64 --stores "$STORES" \
    --kind faast --encoder "$1" --texts "$TEXTS" --labels 16 --duration "$DURATION" |
    /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); r=json.loads(sys.argv[1]); r.update({"concurrency": d["concurrency"], "predicts_per_s": d["throughput"], "errors": d.get("errors")}); print(json.dumps(r))' "$2"
}

if part 1; then
echo "== 1. the model alone: adaptd (OrtModel) and the Python onnxruntime, alternated" >&2
for ((round = 1; round <= ROUNDS; round++)); do
  for threads in 1 2; do
    "$BENCH" model --library "$LIBRARY" --model "$MODEL" --ids "$IDS" --threads "$threads" \
      --seconds "$SECONDS_PER_CASE" | sed "s/^{/{\"round\":$round,/" | emit
    "$PEER_PYTHON" "$ROOT/bench/onnx/ort_peer.py" model --model "$MODEL" --ids "$IDS" \
      --threads "$threads" --seconds "$SECONDS_PER_CASE" | sed "s/^{/{\"round\": $round, /" | emit
  done
done

fi

if part 2; then
echo "== 2. tokenizing and image decoding" >&2
"$BENCH" tokenize --library "$LIBRARY" --model "$MODEL" --texts "$TEXTS" --seconds "$SECONDS_PER_CASE" | emit
# A 640×480 photo-like image (smooth gradients and noise), as PNG and as JPEG (quality 90).
/usr/bin/python3 - "$WORK" <<'PY'
import sys
import numpy as np
from PIL import Image
rng = np.random.default_rng(40)
y, x = np.mgrid[0:480, 0:640]
rgb = np.stack([x * 255 / 640, y * 255 / 480, (x + y) * 255 / 1120], axis=-1)
rgb = np.clip(rgb + rng.normal(0, 12, rgb.shape), 0, 255).astype(np.uint8)
Image.fromarray(rgb).save(sys.argv[1] + "/photo.png")
Image.fromarray(rgb).save(sys.argv[1] + "/photo.jpg", quality=90)
PY
for image in photo.png photo.jpg; do
  "$BENCH" images --images "$WORK/$image" --seconds "$SECONDS_PER_CASE" |
    sed "s/^{/{\"file\":\"$image\",/" | emit
done

fi

if part 3; then
# The server's setting (threads 0: a shared pool of its backend threads, one per worker on two
# cores), and ONNX Runtime's default pool of the session's own; one and two callers.
echo "== 3. the encoder in process" >&2
for pool in 1 2 0; do
  "$BENCH" encode --library "$LIBRARY" --model "$MODEL" --texts "$TEXTS" --threads 0 \
    --pool "$pool" --callers 1,2 --batches 1,8,32,64 --seconds "$SECONDS_PER_CASE" | emit
done
fi

if part 4; then
echo "== 4. served at 64 clients" >&2
cat >"$WORK/enc.json" <<JSON
{"encoders": [{"name": "identity", "type": "identity"},
  {"name": "minilm-onnx", "type": "onnx", "input": "text", "model_path": "$MODEL",
   "output_tensor": "last_hidden_state", "max_tokens": 256, "normalize": true},
  {"name": "minilm", "type": "sentence_bert", "model_path": "$MINILM"}]}
JSON
start_fresh_server "$ADAPTD" --fsync off --config "$WORK/enc.json" --onnxruntime-library "$LIBRARY"
for ((round = 1; round <= ROUNDS; round++)); do
  for encoder in minilm-onnx minilm; do
    served "$encoder" "{\"round\": $round, \"case\": \"served\", \"encoder\": \"$encoder\"}" | emit
  done
done
stop_fresh_server
fi

if part 5; then
echo "== 5. resident memory" >&2
rss() { awk '/^VmRSS/ {print $2 * 1024}' "/proc/$SERVER_PID/status"; }
# Where the resident bytes are, as JSON members: glibc's main heap ([heap]) and its threads' heaps
# (anonymous read-write mappings that start at a multiple of 64 MiB, glibc's heap size).
heap_rss() {
  /usr/bin/python3 - "/proc/$SERVER_PID/smaps" <<'PY'
import re, sys
main = threads = 0
kind = None
for line in open(sys.argv[1]):
    m = re.match(r"([0-9a-f]+)-[0-9a-f]+ (\S+) \S+ \S+ \S+\s*(\S*)", line)
    if m:
        start, perms, name = int(m.group(1), 16), m.group(2), m.group(3)
        kind = "main" if name == "[heap]" else (
            "threads" if not name and perms.startswith("rw") and start % (64 << 20) == 0 else None)
    elif line.startswith("Rss:") and kind:
        kb = int(line.split()[1])
        main, threads = (main + kb, threads) if kind == "main" else (main, threads + kb)
print('"main_heap_bytes": %d, "thread_heaps_bytes": %d' % (main * 1024, threads * 1024))
PY
}
mem_config() {
  echo "{\"encoders\": [{\"name\": \"identity\", \"type\": \"identity\"}$1]}" >"$WORK/mem.json"
}
mem_config ""
start_fresh_server "$ADAPTD" --fsync off --config "$WORK/mem.json"
sleep 2
echo "{\"case\": \"rss\", \"server\": \"no model\", \"bytes\": $(rss)}" | emit
stop_fresh_server
mem_config ", {\"name\": \"minilm\", \"type\": \"sentence_bert\", \"model_path\": \"$MINILM\"}"
start_fresh_server "$ADAPTD" --fsync off --config "$WORK/mem.json"
sleep 2
echo "{\"case\": \"rss\", \"server\": \"sentence_bert\", \"bytes\": $(rss)}" | emit
stop_fresh_server
mem_config ", {\"name\": \"minilm-onnx\", \"type\": \"onnx\", \"input\": \"text\", \"model_path\": \"$MODEL\", \"output_tensor\": \"last_hidden_state\", \"max_tokens\": 256, \"normalize\": true}"
start_fresh_server "$ADAPTD" --fsync off --config "$WORK/mem.json" --onnxruntime-library "$LIBRARY"
sleep 2
echo "{\"case\": \"rss\", \"server\": \"onnx\", \"bytes\": $(rss)}" | emit
# Mixed shapes: texts of 1 to 200 words drawn from the dataset's.
/usr/bin/python3 - "$TEXTS" "$WORK/mixed.txt" <<'PY'
import random, sys
words = open(sys.argv[1]).read().split()
rng = random.Random(40)
with open(sys.argv[2], "w") as f:
    for _ in range(2000):
        n = rng.choice([1, 2, 5, 10, 20, 40, 80, 120, 200])
        f.write(" ".join(rng.choice(words) for _ in range(n)) + "\n")
PY
# Cycles of 64, 8 and 1 clients (5 s each); resident memory after each cycle (the same point of
# the load: after its one-client phase) and its peak (VmHWM).
start=$SECONDS
while ((SECONDS - start < MEMORY_SECONDS)); do
  for c in 64 8 1; do
    "$ADAPTCTL" --addr "$ADDR" --timeout 120 bench --concurrency "$c" --stores 4 --kind faast \
      --encoder minilm-onnx --texts "$WORK/mixed.txt" --labels 4 --examples 16 --duration 5 \
      >/dev/null
  done
  echo "{\"case\": \"rss-after-cycle\", \"seconds\": $((SECONDS - start)), \"bytes\": $(rss), \"peak_bytes\": $(awk '/^VmHWM/ {print $2 * 1024}' "/proc/$SERVER_PID/status"), $(heap_rss)}" | emit
done
stop_fresh_server
fi

if part 6; then
echo "== 6. the heap settings against glibc's own thresholds, alternated" >&2
cat >"$WORK/heaps.json" <<JSON
{"encoders": [{"name": "minilm-onnx", "type": "onnx", "input": "text", "model_path": "$MODEL",
   "output_tensor": "last_hidden_state", "max_tokens": 256, "normalize": true}]}
JSON
# The server's minor page faults and CPU ticks: per predict they show the settings' cost apart
# from the machine's load, which moves predicts/s.
faults_and_ticks() { awk '{print $10, $14 + $15}' "/proc/$SERVER_PID/stat"; }
for ((round = 1; round <= ROUNDS; round++)); do
  for heaps in settings glibc; do
    # HEAP_TOP_MIB: the settings' side (empty: the encoder's default); the other runs glibc's own.
    top="$([[ $heaps == glibc ]] && echo 0 || echo "${HEAP_TOP_MIB:-}")"
    ADAPTD_ONNX_HEAP_TOP_MIB=$top start_fresh_server "$ADAPTD" --fsync off \
      --config "$WORK/heaps.json" --onnxruntime-library "$LIBRARY"
    read -r faults ticks < <(faults_and_ticks)
    line="$(served minilm-onnx "{\"round\": $round, \"case\": \"heaps\", \"heaps\": \"$heaps\", \"top_mib\": \"$top\"}")"
    read -r faults_after ticks_after < <(faults_and_ticks)
    /usr/bin/python3 -c 'import json,sys; r=json.loads(sys.argv[1]); n=r["predicts_per_s"]*float(sys.argv[2]); r.update({"cpu_ms_per_predict": 1000.0*int(sys.argv[3])/int(sys.argv[4])/n, "minor_faults_per_predict": int(sys.argv[5])/n}); print(json.dumps(r))' \
      "$line" "$DURATION" $((ticks_after - ticks)) "$(getconf CLK_TCK)" $((faults_after - faults)) | emit
    stop_fresh_server
  done
done
fi

/usr/bin/python3 - "$OUT" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("\n| threads | batch | adaptd rows/s | onnxruntime (Python) rows/s | ratio (median of rounds) | each round |")
print("|---:|---:|---:|---:|---:|---|")
model = [r for r in rows if r.get("case") == "model"]
for threads in sorted({r["threads"] for r in model}):
    for batch in sorted({r["batch"] for r in model}):
        def side(name):
            return {r["round"]: r["rows_per_s"] for r in model
                    if r["side"] == name and r["threads"] == threads and r["batch"] == batch}
        a, p = side("adaptd"), side("onnxruntime-python")
        ratios = [a[k] / p[k] for k in sorted(a) if k in p]
        print("| %d | %d | %.1f | %.1f | **%.2f×** | %s |" % (
            threads, batch, statistics.median(a.values()), statistics.median(p.values()),
            statistics.median(ratios), ", ".join("%.2f" % x for x in ratios)))
for r in rows:
    if r.get("case") in ("tokenize", "decode", "decode+preprocess", "encode"):
        print(json.dumps(r))
served = [r for r in rows if r.get("case") == "served"]
encode = [r for r in rows if r.get("case") == "encode"]
if served and encode:  # parts 3 and 4
    best = max(encode, key=lambda r: r["texts_per_s"])
    print("in-process best: %s" % json.dumps(best))
    best = best["texts_per_s"]
    for enc in ("minilm-onnx", "minilm"):
        v = [r["predicts_per_s"] for r in served if r["encoder"] == enc]
        print("served %s at 64 clients: %s, median %.1f predicts/s" % (enc, ["%.1f" % x for x in v], statistics.median(v)))
    onnx = {r["round"]: r["predicts_per_s"] for r in served if r["encoder"] == "minilm-onnx"}
    bert = {r["round"]: r["predicts_per_s"] for r in served if r["encoder"] == "minilm"}
    print("onnx served / in-process best (%.1f texts/s): %.2f" % (best, statistics.median(onnx.values()) / best))
    print("onnx / sentence_bert per round: %s" % ["%.2f" % (onnx[k] / bert[k]) for k in sorted(onnx)])
heaps = [r for r in rows if r.get("case") == "heaps"]
if heaps:  # part 6
    on = {r["round"]: r["predicts_per_s"] for r in heaps if r["heaps"] == "settings"}
    off = {r["round"]: r["predicts_per_s"] for r in heaps if r["heaps"] == "glibc"}
    print("served onnx at 64 clients, heap settings / glibc's thresholds per round: %s (%s against %s predicts/s)" % (
        ["%.2f" % (on[k] / off[k]) for k in sorted(on) if k in off],
        ["%.1f" % on[k] for k in sorted(on)], ["%.1f" % off[k] for k in sorted(off)]))
    for key in ("cpu_ms_per_predict", "minor_faults_per_predict"):
        print("%s, settings against glibc's: %s against %s" % (key,
            ["%.2f" % r[key] for r in heaps if r["heaps"] == "settings" and key in r],
            ["%.2f" % r[key] for r in heaps if r["heaps"] == "glibc" and key in r]))
rss = {r["server"]: r["bytes"] for r in rows if r.get("case") == "rss"}
print("rss MiB: %s" % {k: round(v / 2**20, 1) for k, v in rss.items()})
load = [r for r in rows if r.get("case") == "rss-after-cycle"]
after = [r for r in load if r["seconds"] >= 30]
if after:
    print("threads' heaps after each cycle MiB: %s; main heap: %s" % (
        [round(r.get("thread_heaps_bytes", 0) / 2**20, 1) for r in load],
        [round(r.get("main_heap_bytes", 0) / 2**20, 1) for r in load]))
    print("rss after each cycle MiB: %s (peak %.1f); growth from %d s to %d s: %.2f%%" % (
        [round(r["bytes"] / 2**20, 1) for r in load], load[-1]["peak_bytes"] / 2**20,
        after[0]["seconds"], after[-1]["seconds"],
        100.0 * (after[-1]["bytes"] - after[0]["bytes"]) / after[0]["bytes"]))
PY
