#!/bin/bash
# The cluster on etcd's figures (issue 38; bench/RESULTS.md, "Cluster on etcd"): runs
# cluster_etcd_bench.py (a 3-member etcd, SeaweedFS and 3 adaptd members on loopback, then a
# fourth) and writes its JSON.
#
# Usage: bench/cluster_etcd/run.sh [BUILD_DIR] [cluster_etcd_bench.py ARGS...]   (default: build)
# Needs adaptd and adaptctl built, the etcd and SeaweedFS binaries .ci/dev fetches into the build
# tree (BUILD_DIR/etcd/usr/bin/etcd, BUILD_DIR/seaweedfs/weed), curl, and the Python client's
# generated stubs (BUILD_DIR/client/python).
# Environment: OUT (the JSON, default bench/cluster_etcd/results.json).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="${1:-build}"
[[ "$BUILD" = /* ]] || BUILD="$ROOT/$BUILD"
shift || true
OUT="${OUT:-$ROOT/bench/cluster_etcd/results.json}"
for bin in "$BUILD/server/adaptd" "$BUILD/client/adaptctl/adaptctl" "$BUILD/etcd/usr/bin/etcd" \
  "$BUILD/seaweedfs/weed"; do
  [[ -x "$bin" ]] || { echo "missing $bin: build adaptd and adaptctl, and run .ci/dev" >&2; exit 1; }
done
# A copy of adaptd: members started again mid-run (the rolling restart, the fourth member) run
# the same binary even if the build tree is rebuilt meanwhile.
ADAPTD="$(mktemp /tmp/adaptd-cluster-etcd-bench-bin.XXXXXX)"
trap 'rm -f "$ADAPTD"' EXIT
cp "$BUILD/server/adaptd" "$ADAPTD" && chmod +x "$ADAPTD"
[[ -s "$ADAPTD" ]] || { echo "$BUILD/server/adaptd is empty (being linked?): try again" >&2; exit 1; }
export PYTHONPATH="$BUILD/client/python:$ROOT/client/python:$ROOT/bench/durable_log"
/usr/bin/python3 "$ROOT/bench/cluster_etcd/cluster_etcd_bench.py" --build "$BUILD" \
  --adaptd "$ADAPTD" --out "$OUT" "$@"
