#!/bin/bash
# The scheduler benchmark: predict throughput over 1,000 FAAST stores (d = 256, 16 labels) at
# 1, 16 and 64 concurrent clients, batching on (the default) against off (--max-batch-size 1),
# each against the no-op Ping measured in the same run. Self-contained: starts adaptd for each
# setting, runs `adaptctl bench` for every case and writes bench/scheduler/RESULTS-scheduler.md.
#
# Usage: bench/scheduler/run.sh [BUILD_DIR]   (default: build)
# Environment: DURATION (seconds per phase, default 10), STORES (1000), DIM (256), LABELS (16),
#   TENANTS (10), INPUTS (inputs per request, 1), CLIENTS ("1 16 64"), OUT (the results file),
#   ROUNDS (1): rounds of on then off, each with a fresh server; the tables give each case's
#   median over the rounds and the on / off ratio of every round, so a burst of load on a shared
#   machine moves one round, not the figure.
#   Text inputs: TEXTS (a file of texts, one per line) with ENCODER (a text encoder of the
#   server, default "text"), and ADAPTD_FLAGS (extra adaptd flags, e.g. "--config FILE" naming
#   a sentence_bert encoder); DIM is then the encoder's.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-build}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
ADAPTD="$BUILD/server/adaptd"
ADAPTCTL="$BUILD/client/adaptctl/adaptctl"
DURATION="${DURATION:-10}"
ROUNDS="${ROUNDS:-1}"
STORES="${STORES:-1000}"
DIM="${DIM:-256}"
LABELS="${LABELS:-16}"
TENANTS="${TENANTS:-10}"
INPUTS="${INPUTS:-1}"
CLIENTS="${CLIENTS:-1 16 64}"
OUT="${OUT:-$ROOT/bench/scheduler/RESULTS-scheduler.md}"
TEXTS="${TEXTS:-}"
ENCODER="${ENCODER:-text}"
ADAPTD_FLAGS="${ADAPTD_FLAGS:-}"
if [[ -n "$TEXTS" ]]; then
  INPUT_ARGS=(--encoder "$ENCODER" --texts "$TEXTS")
  INPUT_NOTE="--encoder $ENCODER --texts $(basename "$TEXTS")"
else
  INPUT_ARGS=(--dim "$DIM")
  INPUT_NOTE="--dim $DIM"
fi
for bin in "$ADAPTD" "$ADAPTCTL"; do
  [[ -x "$bin" ]] || { echo "missing $bin: build adaptd and adaptctl first" >&2; exit 1; }
done

# shellcheck source=bench/fresh_server.sh
. "$ROOT/bench/fresh_server.sh"
# --fsync off: the setup writes thousands of stores; predicts never touch the log.
# shellcheck disable=SC2086  # ADAPTD_FLAGS is a list of flags
start_server() { start_fresh_server "$ADAPTD" --fsync off $ADAPTD_FLAGS "$@"; }
stop_server() { stop_fresh_server; }

RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
for ((round = 1; round <= ROUNDS; round++)); do
  for mode in on off; do
    if [[ "$mode" = on ]]; then start_server; else start_server --max-batch-size 1; fi
    for c in $CLIENTS; do
      echo "round $round, batching $mode, $c clients..." >&2
      line="$("$ADAPTCTL" --addr "$ADDR" --timeout 60 bench --concurrency "$c" --tenants "$TENANTS" \
        --stores "$STORES" --kind faast "${INPUT_ARGS[@]}" --labels "$LABELS" \
        --inputs-per-request "$INPUTS" --duration "$DURATION")"
      echo "$line" >&2
      /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["batching"]=sys.argv[2]; d["round"]=int(sys.argv[3]); print(json.dumps(d))' \
        "$line" "$mode" "$round" >>"$RESULTS"
    done
    stop_server
  done
done

/usr/bin/python3 - "$RESULTS" "$OUT" "$DURATION" "$STORES" "$INPUT_NOTE" "$LABELS" "$TENANTS" "$INPUTS" <<'PY'
import datetime, json, statistics, subprocess, sys
results, out, duration, stores, input_note, labels, tenants, inputs = sys.argv[1:]
rows = [json.loads(l) for l in open(results) if l.strip()]
rounds = sorted({r["round"] for r in rows})


def median_case(cases):
    # Each figure's median over the rounds; errors summed.
    if not cases:
        return None
    m = {k: statistics.median(r[k] for r in cases)
         for k in ("throughput", "p50_ms", "p99_ms", "noop_throughput", "ratio_to_noop")}
    m["errors"] = sum(r["errors"] for r in cases)
    return m


by = {(mode, c): median_case([r for r in rows if r["batching"] == mode and r["concurrency"] == c])
      for mode in ("on", "off") for c in {r["concurrency"] for r in rows}}
clients = sorted({r["concurrency"] for r in rows})
cpu = subprocess.run(["sh", "-c", "lscpu | sed -n 's/^Model name: *//p'; nproc"],
                     capture_output=True, text=True).stdout.split("\n")
load = open("/proc/loadavg").read().split()[:3]
lines = [
    "# Scheduler benchmark: batched predict throughput",
    "",
    "Made by `bench/scheduler/run.sh` on %s (%s cores), %s UTC; load average at the end: %s." % (
        cpu[0].strip() or "unknown CPU", cpu[1].strip() if len(cpu) > 1 else "?",
        datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M"), " ".join(load)),
    "Each case: `adaptctl bench --kind faast --stores %s %s --labels %s --tenants %s "
    "--inputs-per-request %s --duration %s --concurrency N` against a fresh adaptd (`--fsync off`), batching on "
    "(defaults: --max-batch-size 32, --max-queue-delay-us 200) or off (--max-batch-size 1). "
    "The load generator runs on the same machine as the server. %d round(s) of on then off; "
    "each figure is the median over the rounds." % (stores, input_note, labels, tenants, inputs,
                                                    duration, len(rounds)),
    "",
    "| clients | batching | predict/s | p50 ms | p99 ms | errors | no-op Ping/s | predict / no-op |",
    "|---:|---|---:|---:|---:|---:|---:|---:|",
]
for c in clients:
    for mode in ("on", "off"):
        r = by.get((mode, c))
        if r is None:
            continue
        lines.append("| %d | %s | %.0f | %.2f | %.2f | %d | %.0f | %.2f |" % (
            c, mode, r["throughput"], r["p50_ms"], r["p99_ms"], r["errors"],
            r["noop_throughput"], r["ratio_to_noop"]))
lines += ["", "| clients | batching on / off (medians) | each round | goal |",
          "|---:|---:|---|---|"]
for c in clients:
    on, off = by.get(("on", c)), by.get(("off", c))
    if on and off and off["throughput"] > 0:
        per_round = []
        for n in rounds:
            r_on = [r for r in rows if (r["batching"], r["concurrency"], r["round"]) == ("on", c, n)]
            r_off = [r for r in rows if (r["batching"], r["concurrency"], r["round"]) == ("off", c, n)]
            if r_on and r_off and r_off[0]["throughput"] > 0:
                per_round.append("%.2f" % (r_on[0]["throughput"] / r_off[0]["throughput"]))
        lines.append("| %d | %.2f | %s | %s |" % (c, on["throughput"] / off["throughput"],
                                                 ", ".join(per_round), "≥ 3 at 64" if c == 64 else ""))
open(out, "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
