#!/usr/bin/env bash
# Falcon label stores against scikit-learn and River on one seeded labelled stream: builds
# falcon_stream_bench, generates the stream, runs the C++ bench and the Python peers, and prints
# one markdown table (examples/s, ratio to falcon-1 one example per commit, prequential accuracy).
#
# Usage: bench/falcon/run_stream_peers.sh [BUILD_DIR] (default build-bench under the repository).
# Environment: N (examples, default 6000), D (dimension, 64), CLASSES (10), SEED (1),
# NOISE (2.5), ROUNDS (C++ repeats, median; 3), SKIP_RIVER=1 to leave River out.
# scikit-learn runs on Debian's /usr/bin/python3; River in a virtual environment made under
# BUILD_DIR with the PATH's python3 (`pip install river`); if that fails the table says so.
# Everything runs on one thread.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="${1:-$root/build-bench}"
N="${N:-6000}" D="${D:-64}" CLASSES="${CLASSES:-10}" SEED="${SEED:-1}" NOISE="${NOISE:-2.5}"
ROUNDS="${ROUNDS:-3}"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1

if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DADAPTD_ENABLE_CUDA=OFF >&2
fi
ninja -C "$build" falcon_stream_bench >&2

data="$build/falcon-stream-data"
out="$build/falcon-stream-results.jsonl"
: >"$out"
/usr/bin/python3 "$here/falcon_stream_peers.py" gen "$data" --n="$N" --d="$D" \
  --classes="$CLASSES" --seed="$SEED" --noise="$NOISE" | tee -a "$out" >&2
"$build/bench/falcon/falcon_stream_bench" --data="$data" --rounds="$ROUNDS" | tee -a "$out" >&2
/usr/bin/python3 "$here/falcon_stream_peers.py" sklearn "$data" | tee -a "$out" >&2

river_note=""
if [[ "${SKIP_RIVER:-0}" != 1 ]]; then
  venv="$build/peers-venv"
  if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c 'import river' 2>/dev/null; then
    if ! { python3 -m venv "$venv" && "$venv/bin/pip" install -q river numpy; } >&2; then
      river_note="River did not install (python3 -m venv + pip install river failed)."
    fi
  fi
  if [[ -z "$river_note" ]]; then
    "$venv/bin/python" "$here/falcon_stream_peers.py" river "$data" | tee -a "$out" >&2
  fi
else
  river_note="River left out (SKIP_RIVER=1)."
fi

/usr/bin/python3 - "$out" "$river_note" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
data = next(r for r in rows if r["bench"] == "falcon_stream_data")
base = next(r for r in rows if r["method"] == "falcon-1" and r["batch"] == 1)["examples_per_s"]
print(f"Stream: n = {data['n']}, d = {data['d']}, {data['classes']} classes, centroids + "
      f"N(0, {data['noise']}²) noise, half the centroids redrawn at example {data['drift_at']}, "
      f"seed {data['seed']}.\n")
print("| method | examples per commit / call | examples/s | ratio to falcon-1 per-example | "
      "prequential accuracy | accuracy after drift |")
print("|---|---|---|---|---|---|")
for r in rows:
    if r["bench"] == "falcon_stream_data":
        print(f"| {r['method']} | – | – | – | {r['prequential_accuracy']:.3f} | "
              f"{r['accuracy_after_drift']:.3f} |")
        continue
    name = r["method"]
    if r["bench"] == "falcon_stream":
        extra = f"β={r['beta']:g}, λ={r['lambda']:g}" + (f", B={r['window']}" if r["window"] else "")
        name = f"adaptd {name} ({extra}, l2 keys)"
    else:
        name = f"{name} {r['version']}"
    print(f"| {name} | {r['batch']} | {r['examples_per_s']:.4g} | "
          f"{r['examples_per_s'] / base:.3g} | {r['prequential_accuracy']:.3f} | "
          f"{r['accuracy_after_drift']:.3f} |")
if sys.argv[2]:
    print(f"\n{sys.argv[2]}")
EOF
