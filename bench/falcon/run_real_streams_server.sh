#!/usr/bin/env bash
# Starts adaptd with a scratch data dir, runs `real_streams_peers.py server` against it (every
# stream of DATA through a falcon label store with the server's defaults, or --set=...), and
# stops the server.
#
#   bash bench/falcon/run_real_streams_server.sh DATA [--set=variant=1] [--only=a,b]
#
# DATA: the streams of `real_streams_peers.py data` (bench/falcon/RESULTS-real-streams.md).
# BUILD_DIR (default ./build): where server/adaptd and client/python are. WORK (default
# /work/bench-work/falcon-server): scratch. PORT (default 50571). PYTHON (default
# /usr/bin/python3): has grpcio, protobuf and numpy.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${BUILD_DIR:-$root/build}
work=${WORK:-/work/bench-work/falcon-server}
port=${PORT:-50571}
python=${PYTHON:-/usr/bin/python3}
[ $# -ge 1 ] || { sed -n 2,12p "$0" >&2; exit 2; }
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}

. "$root/bench/scratch_server.sh"
start_scratch_server "$work" "$port"

PYTHONPATH=$build_dir/client/python:$root/client/python "$python" \
  "$root/bench/falcon/real_streams_peers.py" server "$@" --address="127.0.0.1:$port"
echo "server log: $run_dir/server.log" >&2
