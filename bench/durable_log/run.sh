#!/bin/bash
# The durable log in etcd against the local log (issue 37's figures): runs
# durable_log_bench.py (a 3-member etcd and SeaweedFS on loopback, adaptd with either
# durability, side by side in one run) and renders its JSON as the markdown tables of
# bench/RESULTS.md's section "The durable log in etcd against the local log".
#
# Usage: bench/durable_log/run.sh [BUILD_DIR] [durable_log_bench.py ARGS...]   (default: build)
# Needs adaptd and adaptctl built, and the etcd and SeaweedFS binaries .ci/dev fetches into the
# build tree (BUILD_DIR/etcd/usr/bin/etcd, BUILD_DIR/seaweedfs/weed), curl, and the Python
# client's generated stubs (BUILD_DIR/client/python).
# Environment: OUT (the JSON, default bench/durable_log/results.json), TABLES (the markdown,
#   default bench/durable_log/results.md).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-build}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
shift || true
OUT="${OUT:-$ROOT/bench/durable_log/results.json}"
TABLES="${TABLES:-$ROOT/bench/durable_log/results.md}"
for bin in "$BUILD/server/adaptd" "$BUILD/client/adaptctl/adaptctl" "$BUILD/etcd/usr/bin/etcd" \
  "$BUILD/seaweedfs/weed"; do
  [[ -x "$bin" ]] || { echo "missing $bin: build adaptd and adaptctl, and run .ci/dev" >&2; exit 1; }
done
export PYTHONPATH="$BUILD/client/python:$ROOT/client/python:$ROOT/bench/durable_log"
/usr/bin/python3 "$ROOT/bench/durable_log/durable_log_bench.py" --build "$BUILD" --out "$OUT" "$@"
/usr/bin/python3 "$ROOT/bench/durable_log/render.py" "$OUT" >"$TABLES"
cat "$TABLES"
