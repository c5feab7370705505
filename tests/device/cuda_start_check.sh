#!/usr/bin/env bash
# adaptd built with CUDA, asked for --device cuda: on a machine without a usable device it must
# stop at once with one line naming the device and the reason; on a machine with one it must
# start (and is stopped again here). Either way the CUDA backend module was looked for.
#   cuda_start_check.sh ADAPTD DATA_DIR
set -uo pipefail
adaptd=$1
data=$2
rm -rf "$data"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$adaptd" --device cuda --listen 127.0.0.1:0 --metrics-listen off --data-dir "$data" \
  >"$log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid"
    rc=$?
    if [ "$rc" -eq 0 ]; then
      echo "FAIL: adaptd exited 0 for --device cuda without serving"; cat "$log"; exit 1
    fi
    if grep -qE '^adaptd: device cuda: unavailable: .+' "$log" && [ "$(wc -l <"$log")" -eq 1 ]; then
      echo "PASS: refused at start-up: $(cat "$log")"; exit 0
    fi
    echo "FAIL: exit $rc without the one-line device message:"; cat "$log"; exit 1
  fi
  if grep -q "^adaptd: serving gRPC" "$log"; then
    kill -TERM "$pid"; wait "$pid"
    echo "PASS: a CUDA device is present and adaptd started on it"; exit 0
  fi
  sleep 0.1
done
kill -KILL "$pid" 2>/dev/null
echo "FAIL: adaptd neither started nor stopped within 60 s"; cat "$log"; exit 1
