#!/usr/bin/env bash
# Runs the CUDA checks on a machine with an NVIDIA GPU (an H200: sm_90): builds, in build-gpu/
# under the repository root unless that directory already holds a configured build, the `gpu`
# tests (the CUDA backend test and the backend consistency suite) and the device benchmark;
# runs the tests with ADAPTD_REQUIRE_CUDA=1 (they fail, not skip, if the device turns out to be
# unusable, e.g. a driver older than the CUDA runtime); then runs cuda_bench, whose JSON lines
# feed the H200 section of bench/RESULTS.md. Results are copied to $OUT when it is set.
# Usage: kernels/cuda/check_on_gpu.sh [build-dir]   (ADAPTD_GPU_SKIP_BENCH=1: tests only)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build-gpu}"
out="${OUT:-$build/gpu-results}"
mkdir -p "$out"
export ADAPTD_REQUIRE_CUDA=1

echo "== nvidia-smi"
nvidia-smi | tee "$out/nvidia-smi.txt" || echo "warning: nvidia-smi failed; the tests below will say why" >&2

binaries=(kernels/cuda/cuda_backend_test kernels/cuda_consistency_test)
cache="$build/CMakeCache.txt"
if [[ -x "$build/${binaries[0]}" && -f "$cache" ]] &&
   ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$root" "$cache"; then
  # Built from a checkout at another path: cmake and ctest refuse that cache; the binaries work.
  status=0
  for b in "${binaries[@]}"; do
    echo "== $build/$b (prebuilt elsewhere; running it directly)"
    "$build/$b" 2>&1 | tee -a "$out/gpu-tests.txt" || status=1
  done
  exit "$status"
fi

echo "== configuring $build"
if [[ ! -f "$cache" ]]; then
  generator=$(command -v ninja >/dev/null && echo Ninja || echo "Unix Makefiles")
  cmake -S "$root" -B "$build" -G "$generator" -DCMAKE_BUILD_TYPE=Release \
    -DADAPTD_ENABLE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DADAPTD_BUILD_BENCH=ON
else
  # An existing build (possibly configured without benchmarks) gets the options it needs.
  cmake -S "$root" -B "$build" -DADAPTD_ENABLE_CUDA=ON -DADAPTD_BUILD_BENCH=ON
fi
echo "== building"
cmake --build "$build" --parallel --target cuda_backend_test cuda_consistency_test \
  kernels_consistency_test cuda_bench onnx_cuda_test
# onnx_cuda_test (the onnx encoder on ONNX Runtime's CUDA provider) runs where
# ADAPTD_ONNXRUNTIME_GPU_LIBRARY names the onnxruntime-gpu wheel's libonnxruntime.so; it skips
# otherwise.
echo "ADAPTD_ONNXRUNTIME_GPU_LIBRARY=${ADAPTD_ONNXRUNTIME_GPU_LIBRARY:-(unset: onnx_cuda_test skips)}"

echo "== ctest -L gpu"
test_status=0
ctest --test-dir "$build" -L gpu --output-on-failure 2>&1 | tee "$out/gpu-tests.txt" ||
  test_status=1
echo "== ctest (CPU consistency suite)"
ctest --test-dir "$build" -R '^cpu\.' --output-on-failure 2>&1 | tail -5 | tee -a "$out/gpu-tests.txt" ||
  test_status=1

if [[ "${ADAPTD_GPU_SKIP_BENCH:-0}" != 1 ]]; then
  echo "== cuda_bench"
  "$build/kernels/cuda/cuda_bench" | tee "$out/cuda_bench.jsonl" || test_status=1
fi
exit "$test_status"
