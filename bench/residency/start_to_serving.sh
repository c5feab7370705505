#!/bin/bash
# Times one adaptd start on an existing data directory: from the exec to its "serving gRPC"
# line, then stops it with SIGTERM. Prints the time, the server's own "recovered ..." line and
# its anonymous resident memory then (RssAnon).
#   bench/residency/start_to_serving.sh ADAPTD DATA_DIR [--drop-caches] [ADAPTD ARGS...]
# --drop-caches (root) empties the page cache first, for a start from disk.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 ADAPTD DATA_DIR [--drop-caches] [ADAPTD ARGS...]" >&2
  exit 2
fi
bin=$1 data=$2
shift 2
if [ "${1:-}" = --drop-caches ]; then
  sync
  echo 3 > /proc/sys/vm/drop_caches
  shift
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s.%N)
"$bin" --listen 127.0.0.1:0 --metrics-listen off --data-dir "$data" "$@" > "$log" 2>&1 &
pid=$!
until grep -q "serving gRPC" "$log"; do
  if ! kill -0 "$pid" 2> /dev/null; then
    echo "adaptd exited before serving:" >&2
    cat "$log" >&2
    exit 1
  fi
  sleep 0.02
done
end=$(date +%s.%N)
python3 -c "print(f'start to SERVING: {$end - $start:.3f} s')"
grep "recovered" "$log" || true
grep RssAnon "/proc/$pid/status" || true
kill -TERM "$pid"
wait "$pid" || true
