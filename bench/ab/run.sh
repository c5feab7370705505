#!/bin/bash
# A/B of two builds of adaptd on this machine: vector Predict throughput and p99 at 64 clients,
# and Adapt throughput, in alternated rounds (A, B, A, B, ...), each against a fresh server, all
# driven by one adaptctl (B's). For "no speed change" checks of a refactoring: build the old
# commit into one directory and the new into another, then compare.
#
# Usage: bench/ab/run.sh A_BUILD_DIR B_BUILD_DIR
# Environment: ROUNDS (5), DURATION (seconds per phase, 10), CLIENTS (64), STORES (100),
#   DIM (64), LABELS (16), ADAPT_EXAMPLES (examples per Adapt call, 32), LABEL_A ("before"),
#   LABEL_B ("after"), OUT (a markdown file for the table; stdout only when unset).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
A="$(cd "${1:?usage: run.sh A_BUILD_DIR B_BUILD_DIR}" && pwd)"
B="$(cd "${2:?usage: run.sh A_BUILD_DIR B_BUILD_DIR}" && pwd)"
ROUNDS="${ROUNDS:-5}"
DURATION="${DURATION:-10}"
CLIENTS="${CLIENTS:-64}"
STORES="${STORES:-100}"
DIM="${DIM:-64}"
LABELS="${LABELS:-16}"
ADAPT_EXAMPLES="${ADAPT_EXAMPLES:-32}"
LABEL_A="${LABEL_A:-before}"
LABEL_B="${LABEL_B:-after}"
OUT="${OUT:-}"
ADAPTCTL="$B/client/adaptctl/adaptctl"
for bin in "$A/server/adaptd" "$B/server/adaptd" "$ADAPTCTL"; do
  [[ -x "$bin" ]] || { echo "missing $bin: build both first" >&2; exit 1; }
done

# shellcheck source=bench/fresh_server.sh
. "$ROOT/bench/fresh_server.sh"

RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
for ((round = 1; round <= ROUNDS; round++)); do
  for side in A B; do
    if [[ "$side" = A ]]; then dir="$A"; else dir="$B"; fi
    # --fsync off: the figures are the server's own costs, not the disk's.
    start_fresh_server "$dir/server/adaptd" --fsync off
    echo "round $round, $side ($dir)..." >&2
    line="$("$ADAPTCTL" --addr "$ADDR" --timeout 60 bench --concurrency "$CLIENTS" \
      --stores "$STORES" --kind faast --dim "$DIM" --labels "$LABELS" \
      --adapt-examples "$ADAPT_EXAMPLES" --duration "$DURATION")"
    echo "$line" >&2
    /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["side"]=sys.argv[2]; d["round"]=int(sys.argv[3]); print(json.dumps(d))' \
      "$line" "$side" "$round" >>"$RESULTS"
    stop_fresh_server
  done
done

/usr/bin/python3 - "$RESULTS" "$OUT" "$LABEL_A" "$LABEL_B" "$ROUNDS" "$DURATION" "$CLIENTS" \
  "$STORES" "$DIM" "$LABELS" "$ADAPT_EXAMPLES" <<'PY'
import datetime, json, statistics, subprocess, sys
results, out, label_a, label_b, rounds, duration, clients, stores, dim, labels, adapt_n = sys.argv[1:]
rows = [json.loads(l) for l in open(results) if l.strip()]
metrics = [("predict/s", "throughput"), ("predict p99 ms", "p99_ms"),
           ("adapt calls/s", "adapt_throughput"), ("adapt p99 ms", "adapt_p99_ms"),
           ("no-op Ping/s", "noop_throughput")]
cpu = subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'; nproc"],
                     capture_output=True, text=True).stdout.split("\n")
lines = [
    "A/B made by `bench/ab/run.sh` on %s (%s cores), %s UTC: %s rounds of %s then %s, each a "
    "fresh adaptd; `adaptctl bench --kind faast --stores %s --dim %s --labels %s --concurrency %s "
    "--adapt-examples %s --duration %s`; client and server on the same machine." % (
        cpu[0].strip() or "unknown CPU", cpu[1].strip() if len(cpu) > 1 else "?",
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), rounds, label_a, label_b,
        stores, dim, labels, clients, adapt_n, duration),
    "",
    "| figure | %s median | %s median | %s / %s | %s rounds (min-max) | %s rounds (min-max) |" % (
        label_a, label_b, label_b, label_a, label_a, label_b),
    "|---|---:|---:|---:|---|---|",
]
for name, key in metrics:
    a = [r[key] for r in rows if r["side"] == "A" and key in r]
    b = [r[key] for r in rows if r["side"] == "B" and key in r]
    if not a or not b:
        continue
    ma, mb = statistics.median(a), statistics.median(b)
    f = "%.2f" if key.endswith("_ms") else "%.0f"
    row = "| %s | " + f + " | " + f + " | %.3f | " + f + "-" + f + " | " + f + "-" + f + " |"
    lines.append(row % (name, ma, mb, mb / ma if ma else 0, min(a), max(a), min(b), max(b)))
errors = sum(r.get("errors", 0) + r.get("adapt_errors", 0) for r in rows)
lines += ["", "Errors over every round: %d." % errors]
text = "\n".join(lines) + "\n"
if out:
    open(out, "w").write(text)
print(text)
PY
