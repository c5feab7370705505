#!/usr/bin/env bash
# Runs the CUDA backend tests (ctest label `gpu`) on a machine with an NVIDIA GPU (an H200:
# sm_90). Builds only what those tests need, in build-gpu/ under the repository root, unless
# that directory already holds a configured build. ADAPTD_REQUIRE_CUDA=1 makes the tests fail,
# not skip, if the device turns out to be unusable (e.g. a driver older than the CUDA runtime).
# Usage: kernels/cuda/check_on_gpu.sh [build-dir]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build-gpu}"
export ADAPTD_REQUIRE_CUDA=1

echo "== nvidia-smi"
nvidia-smi || echo "warning: nvidia-smi failed; the tests below will say why" >&2

test_binary="$build/kernels/cuda/cuda_backend_test"
cache="$build/CMakeCache.txt"
if [[ -x "$test_binary" && -f "$cache" ]] &&
   ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$root" "$cache"; then
  # Built from a checkout at another path: cmake and ctest refuse that cache; the binary works.
  echo "== $test_binary (prebuilt elsewhere; running it directly)"
  exec "$test_binary"
fi

if [[ ! -f "$cache" ]]; then
  generator=$(command -v ninja >/dev/null && echo Ninja || echo "Unix Makefiles")
  echo "== configuring $build"
  cmake -S "$root" -B "$build" -G "$generator" -DADAPTD_ENABLE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DADAPTD_BUILD_BENCH=OFF
fi
echo "== building"
cmake --build "$build" --parallel --target adaptd_kernels_cuda cuda_backend_test kernels_test
echo "== ctest -L gpu"
ctest --test-dir "$build" -L gpu --output-on-failure
