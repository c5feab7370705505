#!/usr/bin/env bash
# Builds the libFuzzer targets (and the server, for clang's thread-safety analysis) with clang in
# their own build directory and runs each for a bounded time; fails on the first crash,
# sanitizer report, leak or hang.
#   tests/fuzz/run_fuzzers.sh [SECONDS_PER_TARGET]     (default 50)
# Environment: FUZZ_BUILD_DIR (default ./build-fuzz), JOBS (default: number of cores),
# FUZZ_TARGETS (default: all six), ADAPTD_ETCD_DIR (where etcd's packages are unpacked, for the
# server's etcd client stubs; .ci/dev passes it). Crash inputs are left in
# $FUZZ_BUILD_DIR/artifacts.
# To fuzz longer, run one target by hand, e.g.
#   build-fuzz/tests/fuzz/request_fuzzer -max_total_time=3600 build-fuzz/corpus/request_fuzzer
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
seconds=${1:-50}
build_dir=${FUZZ_BUILD_DIR:-$root/build-fuzz}
jobs=${JOBS:-$(nproc)}
targets=${FUZZ_TARGETS:-"config_fuzzer wal_fuzzer snapshot_fuzzer request_fuzzer wire_fuzzer image_fuzzer"}

cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DADAPTD_BUILD_FUZZERS=ON -DADAPTD_BUILD_TESTS=OFF -DADAPTD_BUILD_BENCH=OFF \
  -DADAPTD_ENABLE_CUDA=OFF ${ADAPTD_ETCD_DIR:+-DADAPTD_ETCD_DIR="$ADAPTD_ETCD_DIR"} >/dev/null
# The server itself is built too (not run): with the fuzzers it puts every server source
# through clang's lock-annotation check (-Werror=thread-safety, the top-level CMakeLists).
# shellcheck disable=SC2086
cmake --build "$build_dir" -j "$jobs" --target $targets adaptd

mkdir -p "$build_dir/artifacts"
for target in $targets; do
  corpus="$build_dir/corpus/$target"
  mkdir -p "$corpus"
  seeds="$root/tests/fuzz/corpus/$target"
  [ -d "$seeds" ] || seeds=""
  echo "fuzz: $target for ${seconds}s"
  # shellcheck disable=SC2086
  if ! ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
      "$build_dir/tests/fuzz/$target" -max_total_time="$seconds" -timeout=20 \
      -rss_limit_mb=4096 -max_len=65536 -print_final_stats=1 \
      -artifact_prefix="$build_dir/artifacts/$target-" "$corpus" $seeds \
      >"$build_dir/$target.log" 2>&1; then
    tail -n 60 "$build_dir/$target.log"
    echo "fuzz: $target FAILED; the input is in $build_dir/artifacts/" >&2
    exit 1
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$build_dir/$target.log" |
    sed "s/^/fuzz: $target /"
done
echo "fuzz: every target ran ${seconds}s without a crash"
