#!/bin/bash
# A/B of start-up: two adaptd binaries started in alternated rounds (A, B, A, B, ...) on the
# same data directory, each timed from exec to its "serving gRPC" line
# (bench/residency/start_to_serving.sh) and stopped with SIGTERM; prints each round and the
# medians. For "no speed change" checks of start-up, e.g. on a synthetic catalog of 10^5
# entries (bench/residency/synthetic_catalog.py).
#
# Usage: bench/ab/startup.sh A_ADAPTD B_ADAPTD DATA_DIR
# Environment: ROUNDS (5), LABEL_A ("before"), LABEL_B ("after").
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
A="${1:?usage: startup.sh A_ADAPTD B_ADAPTD DATA_DIR}"
B="${2:?usage: startup.sh A_ADAPTD B_ADAPTD DATA_DIR}"
DATA="${3:?usage: startup.sh A_ADAPTD B_ADAPTD DATA_DIR}"
ROUNDS="${ROUNDS:-5}"
LABEL_A="${LABEL_A:-before}"
LABEL_B="${LABEL_B:-after}"
times_a=() times_b=()
for ((round = 1; round <= ROUNDS; round++)); do
  for side in A B; do
    bin="$A"
    [[ "$side" = B ]] && bin="$B"
    out="$("$ROOT/bench/residency/start_to_serving.sh" "$bin" "$DATA")"
    t="$(sed -n 's/^start to SERVING: \([0-9.]*\) s$/\1/p' <<<"$out")"
    echo "round $round $side: $t s; $(grep recovered <<<"$out" | sed 's/^adaptd: //')"
    if [[ "$side" = A ]]; then times_a+=("$t"); else times_b+=("$t"); fi
  done
done
python3 - "$LABEL_A" "$LABEL_B" "${times_a[*]}" "${times_b[*]}" <<'PY'
import statistics, sys
label_a, label_b, a, b = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
a, b = [float(x) for x in a], [float(x) for x in b]
ma, mb = statistics.median(a), statistics.median(b)
print(f"| start to SERVING | {label_a}: median {ma:.3f} s (range {min(a):.3f}-{max(a):.3f}) "
      f"| {label_b}: median {mb:.3f} s (range {min(b):.3f}-{max(b):.3f}) | ratio {mb / ma:.3f} |")
PY
