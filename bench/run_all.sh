#!/usr/bin/env bash
# Builds the FAAST benchmarks in their own build folder (Release, CUDA off) and runs them all:
# ingest against dsyrk + dgemm, compile against LAPACKE, and the scikit-learn comparison. Prints
# the tables (markdown) and keeps the JSON results in <build>/bench-results/.
#
# Environment: ADAPTD_BENCH_BUILD (build folder, default build-bench), BENCH_THREADS (OpenBLAS
# threads on every side, default: the machine's cores), BENCH_ROUNDS (default 3). The caller's
# OPENBLAS_CORETYPE, if any, is passed on unchanged to both adaptd and numpy; each table names
# the OpenBLAS kernel that actually ran.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ADAPTD_BENCH_BUILD:-$root/build-bench}"
threads="${BENCH_THREADS:-$(nproc)}"
rounds="${BENCH_ROUNDS:-3}"
results="$build/bench-results"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DADAPTD_ENABLE_CUDA=OFF \
  -DADAPTD_BUILD_TESTS=OFF -DADAPTD_BUILD_BENCH=ON >/dev/null
ninja -C "$build" faast_ingest_bench faast_compile_bench faast_sklearn_bench
mkdir -p "$results"

export OPENBLAS_NUM_THREADS="$threads"
echo "## machine"
echo
echo "- $(lscpu | grep -m1 'Model name' | sed 's/  */ /g'), $(nproc) cores"
echo "- load before the run: $(uptime | sed 's/.*load average: //')"
echo "- OpenBLAS threads: $threads; OPENBLAS_CORETYPE: ${OPENBLAS_CORETYPE:-(unset)};" \
  "OPENBLAS_L2_SIZE: ${OPENBLAS_L2_SIZE:-(unset)}"
echo "- date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo

"$build/bench/faast_ingest_bench" --threads="$threads" --rounds="$rounds" \
  --json="$results/ingest.json"
echo
"$build/bench/faast_compile_bench" --threads="$threads" --rounds="$rounds" \
  --json="$results/compile.json"
echo
/usr/bin/python3 "$root/bench/run_sklearn_peer.py" --build-dir "$build" --threads "$threads" \
  --rounds "$rounds" --json "$results/sklearn.json"
echo
echo "- load after the run: $(uptime | sed 's/.*load average: //')"
