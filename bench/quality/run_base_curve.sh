#!/usr/bin/env bash
# Starts adaptd with a scratch data dir, runs base_store_curve.py against it (a new tenant's
# faast store with and without a base, against LogisticRegression) and stops the server.
#
#   bash bench/quality/run_base_curve.sh [base_store_curve.py args]
#
# BUILD_DIR (default ./build): where server/adaptd and client/python are. WORK (default
# /work/bench-work/base-curve): scratch. PORT (default 50581). PYTHON (default
# /usr/bin/python3): has grpcio, protobuf, numpy and scikit-learn.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
work=${WORK:-/work/bench-work/base-curve}
port=${PORT:-50581}
python=${PYTHON:-/usr/bin/python3}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}

. "$root/bench/scratch_server.sh"
start_scratch_server "$work" "$port"

PYTHONPATH=$build_dir/client/python:$root/client/python "$python" \
  "$root/bench/quality/base_store_curve.py" --address "127.0.0.1:$port" "$@"
echo "server log: $run_dir/server.log" >&2
