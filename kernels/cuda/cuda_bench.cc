// cuda_bench: device figures for bench/RESULTS.md (H200 section), all measured in one run with
// CUDA events on device-resident data:
//   copy:    device-to-device cudaMemcpy bandwidth (bytes read + written per second), the
//            memory-bandwidth yardstick.
//   grouped: the grouped-GEMM kernel (one launch over S stores, d × m weights, b rows each):
//            bytes moved (A, B read, C written) per second, as a fraction of the copy bandwidth.
//   syrk:    cuBLAS DSYRK's rate (n²k flops/s) on float64 rows, the best over the sizes run
//            ("peak"), and the FAAST ingest path (float rows converted on the device, then
//            DSYRK) as a fraction of it; plus the whole host-to-host SyrkUpperAccumulate call.
//   topk:    the top-k kernel's rows per second.
//   falcon:  one Falcon chunk step through the whole backend call, CUDA against CPU.
// Usage: cuda_bench [--quick]. Prints one JSON line per point; exits 1 without a device.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cuda/cuda_kernels.h"

namespace adaptd::kernels::gpu {
namespace {

#define BENCH_CHECK(expr)                                         \
  do {                                                            \
    const auto bench_status_ = (expr);                            \
    if (static_cast<int>(bench_status_) != 0) {                   \
      std::fprintf(stderr, "cuda_bench: %s failed (%d)\n", #expr, \
                   static_cast<int>(bench_status_));              \
      std::exit(1);                                               \
    }                                                             \
  } while (0)

// Median milliseconds of `rounds` timed runs of fn (after one warm-up run).
template <typename Fn>
double MedianMs(cudaStream_t stream, int rounds, Fn fn) {
  cudaEvent_t start, stop;
  BENCH_CHECK(cudaEventCreate(&start));
  BENCH_CHECK(cudaEventCreate(&stop));
  fn();
  std::vector<double> ms;
  for (int r = 0; r < rounds; ++r) {
    BENCH_CHECK(cudaEventRecord(start, stream));
    fn();
    BENCH_CHECK(cudaEventRecord(stop, stream));
    BENCH_CHECK(cudaEventSynchronize(stop));
    float t = 0;
    BENCH_CHECK(cudaEventElapsedTime(&t, start, stop));
    ms.push_back(t);
  }
  BENCH_CHECK(cudaEventDestroy(start));
  BENCH_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

template <typename T>
T* DeviceAlloc(size_t count) {
  void* p = nullptr;
  BENCH_CHECK(cudaMalloc(&p, std::max<size_t>(count, 1) * sizeof(T)));
  BENCH_CHECK(cudaMemset(p, 0, std::max<size_t>(count, 1) * sizeof(T)));
  return static_cast<T*>(p);
}

double CopyBandwidth(cudaStream_t stream, size_t bytes, int rounds) {
  char* a = DeviceAlloc<char>(bytes);
  char* b = DeviceAlloc<char>(bytes);
  const double ms = MedianMs(stream, rounds, [&] {
    BENCH_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream));
  });
  BENCH_CHECK(cudaFree(a));
  BENCH_CHECK(cudaFree(b));
  const double bw = 2.0 * bytes / (ms * 1e-3);
  std::printf("{\"bench\":\"d2d_copy\",\"bytes\":%zu,\"ms\":%.4f,\"bandwidth_gbs\":%.1f}\n", bytes,
              ms, bw / 1e9);
  return bw;
}

void Grouped(cudaStream_t stream, int stores, int d, int m, int b, double copy_bw, int rounds) {
  float* w = DeviceAlloc<float>(size_t(stores) * d * m);
  float* x = DeviceAlloc<float>(size_t(stores) * b * d);
  float* c = DeviceAlloc<float>(size_t(stores) * b * m);
  std::vector<DeviceGemmGroup> groups(stores);
  for (int s = 0; s < stores; ++s) {
    groups[s] = {b, m, d, x + size_t(s) * b * d, d, w + size_t(s) * d * m, m, c + size_t(s) * b * m,
                 m};
  }
  std::vector<GemmTile> tiles(GemmTileCount(groups.data(), stores));
  PlanGemmTiles(groups.data(), stores, tiles.data());
  DeviceGemmGroup* d_groups = DeviceAlloc<DeviceGemmGroup>(groups.size());
  GemmTile* d_tiles = DeviceAlloc<GemmTile>(tiles.size());
  BENCH_CHECK(cudaMemcpy(d_groups, groups.data(), groups.size() * sizeof(DeviceGemmGroup),
                         cudaMemcpyHostToDevice));
  BENCH_CHECK(
      cudaMemcpy(d_tiles, tiles.data(), tiles.size() * sizeof(GemmTile), cudaMemcpyHostToDevice));
  const double ms = MedianMs(stream, rounds, [&] {
    BENCH_CHECK(LaunchGroupedGemm(d_groups, d_tiles, static_cast<int64_t>(tiles.size()), stream));
  });
  const double bytes = 4.0 * stores * (double(d) * m + double(b) * d + double(b) * m);
  const double bw = bytes / (ms * 1e-3);
  std::printf(
      "{\"bench\":\"grouped_gemm\",\"stores\":%d,\"d\":%d,\"m\":%d,\"rows_per_store\":%d,"
      "\"ms\":%.4f,\"bytes\":%.0f,\"bandwidth_gbs\":%.1f,\"fraction_of_copy_bandwidth\":%.3f}\n",
      stores, d, m, b, ms, bytes, bw / 1e9, bw / copy_bw);
  for (void* p : {static_cast<void*>(w), static_cast<void*>(x), static_cast<void*>(c),
                  static_cast<void*>(d_groups), static_cast<void*>(d_tiles)}) {
    BENCH_CHECK(cudaFree(p));
  }
}

// Returns DSYRK's flop rate (n²k per second) on these sizes; prints the accumulate path's too.
double Syrk(cudaStream_t stream, cublasHandle_t blas, int n, int k, double peak, int rounds) {
  float* af = DeviceAlloc<float>(size_t(k) * n);
  double* ad = DeviceAlloc<double>(size_t(k) * n);
  double* c = DeviceAlloc<double>(size_t(n) * n);
  const double one = 1.0;
  const double dsyrk_ms = MedianMs(stream, rounds, [&] {
    BENCH_CHECK(
        cublasDsyrk(blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k, &one, ad, n, &one, c, n));
  });
  const double accumulate_ms = MedianMs(stream, rounds, [&] {
    BENCH_CHECK(LaunchFloatToDouble(af, ad, size_t(k) * n, stream));
    BENCH_CHECK(
        cublasDsyrk(blas, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k, &one, ad, n, &one, c, n));
  });
  const double flops = double(n) * n * k;
  const double rate = flops / (dsyrk_ms * 1e-3), acc_rate = flops / (accumulate_ms * 1e-3);
  std::printf(
      "{\"bench\":\"syrk\",\"n\":%d,\"k\":%d,\"dsyrk_ms\":%.4f,\"dsyrk_gflops\":%.1f,"
      "\"accumulate_ms\":%.4f,\"accumulate_gflops\":%.1f,\"accumulate_vs_dsyrk_same_size\":%.3f,"
      "\"accumulate_vs_dsyrk_peak_so_far\":%.3f}\n",
      n, k, dsyrk_ms, rate / 1e9, accumulate_ms, acc_rate / 1e9, acc_rate / rate,
      acc_rate / std::max(peak, rate));
  BENCH_CHECK(cudaFree(af));
  BENCH_CHECK(cudaFree(ad));
  BENCH_CHECK(cudaFree(c));
  return rate;
}

// The whole backend call: host float rows in, host float64 C out (PCIe included).
void SyrkHostToHost(Backend& cuda, int n, int k, double peak) {
  std::vector<float> a(size_t(k) * n, 0.5f);
  std::vector<double> c(size_t(n) * n, 0.0);
  // The call is synchronous (it returns when C is back on the host): host time is its time.
  std::vector<double> ms;
  for (int r = 0; r < 4; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!cuda.SyrkUpperAccumulate(n, k, 1.0, a.data(), n, 1.0, c.data(), n).ok()) std::exit(1);
    const std::chrono::duration<double, std::milli> t = std::chrono::steady_clock::now() - t0;
    if (r > 0) ms.push_back(t.count());
  }
  std::sort(ms.begin(), ms.end());
  const double rate = double(n) * n * k / (ms[ms.size() / 2] * 1e-3);
  std::printf(
      "{\"bench\":\"syrk_accumulate_host_to_host\",\"n\":%d,\"k\":%d,\"ms\":%.3f,\"gflops\":%.1f,"
      "\"fraction_of_dsyrk_peak\":%.3f}\n",
      n, k, ms[ms.size() / 2], rate / 1e9, rate / peak);
}

void TopK(cudaStream_t stream, int rows, int n, int k, int rounds) {
  float* x = DeviceAlloc<float>(size_t(rows) * n);
  int32_t* idx = DeviceAlloc<int32_t>(size_t(rows) * k);
  float* val = DeviceAlloc<float>(size_t(rows) * k);
  const double ms = MedianMs(stream, rounds,
                             [&] { BENCH_CHECK(LaunchTopK(rows, n, x, n, k, idx, val, stream)); });
  std::printf(
      "{\"bench\":\"topk\",\"rows\":%d,\"n\":%d,\"k\":%d,\"ms\":%.4f,\"rows_per_s\":%.3g,"
      "\"input_gbs\":%.1f}\n",
      rows, n, k, ms, rows / (ms * 1e-3), 4.0 * rows * n / (ms * 1e-3) / 1e9);
  BENCH_CHECK(cudaFree(x));
  BENCH_CHECK(cudaFree(idx));
  BENCH_CHECK(cudaFree(val));
}

// One Falcon chunk step through the whole backend call (host data in and out), the CUDA
// backend against the CPU backend on the same chunk: d × m state, h history pairs, c steps with
// windows of `window` pairs, `groups` column groups.
void FalconStep(Backend& cuda, int d, int m, int h, int c, int window, int groups, bool residual,
                int rounds) {
  const int e = h + c;
  std::vector<double> keys(size_t(e) * d), targets(size_t(e) * m), s0(size_t(d) * m, 0.01);
  for (size_t i = 0; i < keys.size(); ++i) keys[i] = ((i * 2654435761u) % 1000) / 1000.0 - 0.5;
  for (size_t i = 0; i < targets.size(); ++i) targets[i] = ((i * 40503u) % 1000) / 1000.0 - 0.5;
  std::vector<int64_t> windows(c);
  for (int t = 0; t < c; ++t) windows[t] = std::min(window, h + t + 1);
  std::vector<std::vector<int64_t>> cols(groups);
  for (int j = 0; j < m; ++j) cols[j % groups].push_back(j);
  const std::vector<double> log_gamma(c, -0.01), rate(c, 0.05 / window);
  std::vector<FalconColumnGroup> spec;
  for (const auto& g : cols) spec.push_back({g, log_gamma, rate});
  std::vector<double> s(s0), pred(size_t(c) * m);
  FalconChunk<double> chunk;
  chunk.d = d;
  chunk.m = m;
  chunk.h = h;
  chunk.c = c;
  chunk.keys = keys.data();
  chunk.targets = targets.data();
  chunk.window = windows;
  chunk.residual = residual;
  chunk.groups = spec;
  chunk.s = s.data();
  chunk.predictions = pred.data();
  auto cpu = MakeCpuBackend();
  auto median_ms = [&](Backend& backend) {
    std::vector<double> ms;
    for (int r = 0; r <= rounds; ++r) {
      std::copy(s0.begin(), s0.end(), s.begin());
      const auto t0 = std::chrono::steady_clock::now();
      if (!backend.FalconChunkStep(chunk).ok()) std::exit(1);
      const std::chrono::duration<double, std::milli> t = std::chrono::steady_clock::now() - t0;
      if (r > 0) ms.push_back(t.count());  // the first call warms up
    }
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
  };
  const double cuda_ms = median_ms(cuda), cpu_ms = median_ms(*cpu);
  std::printf(
      "{\"bench\":\"falcon_chunk_host_to_host\",\"d\":%d,\"m\":%d,\"h\":%d,\"c\":%d,\"window\":%d,"
      "\"groups\":%d,\"residual\":%s,\"cuda_ms\":%.3f,\"cpu_ms\":%.3f,\"cpu_over_cuda\":%.2f}\n",
      d, m, h, c, window, groups, residual ? "true" : "false", cuda_ms, cpu_ms, cpu_ms / cuda_ms);
}

int Main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  auto backend = MakeCudaBackend(0);
  if (!backend.ok()) {
    std::fprintf(stderr, "cuda_bench: %s\n", std::string(backend.status().message()).c_str());
    return 1;
  }
  cudaDeviceProp prop;
  BENCH_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("{\"device\":\"%s\",\"sm\":\"%d.%d\",\"memory_gib\":%.1f}\n", prop.name, prop.major,
              prop.minor, prop.totalGlobalMem / double(1 << 30));
  cudaStream_t stream;
  BENCH_CHECK(cudaStreamCreate(&stream));
  cublasHandle_t blas;
  BENCH_CHECK(cublasCreate(&blas));
  BENCH_CHECK(cublasSetStream(blas, stream));
  const int rounds = quick ? 3 : 11;
  const double copy_bw = CopyBandwidth(stream, quick ? (64u << 20) : (size_t(2) << 30), rounds);
  if (quick) {
    Grouped(stream, 64, 64, 16, 4, copy_bw, rounds);
    Syrk(stream, blas, 128, 256, 0, rounds);
    FalconStep(**backend, 64, 64, 2, 16, 3, 2, true, rounds);
    TopK(stream, 64, 1024, 16, rounds);
    return 0;
  }
  Grouped(stream, 1000, 256, 16, 4, copy_bw, rounds);   // fits in L2: an upper bound
  Grouped(stream, 8192, 1024, 16, 4, copy_bw, rounds);  // 512 MiB of weights: memory-bound
  Grouped(stream, 8192, 1024, 64, 1, copy_bw, rounds);
  Grouped(stream, 2048, 1024, 64, 16, copy_bw, rounds);
  double peak = 0;
  for (int n : {1024, 2048, 4096, 8192})
    peak = std::max(peak, Syrk(stream, blas, n, 8192, peak, rounds));
  for (int n : {256, 1024, 4096}) Syrk(stream, blas, n, 8192, peak, rounds);
  SyrkHostToHost(**backend, 1024, 8192, peak);
  SyrkHostToHost(**backend, 4096, 8192, peak);
  for (int k : {1, 16, 64}) TopK(stream, 10000, 1024, k, rounds);
  for (bool residual : {true, false}) {
    FalconStep(**backend, 256, 256, 0, 64, 1, 1, residual, rounds);
    FalconStep(**backend, 256, 256, 2, 64, 3, 1, residual, rounds);
    FalconStep(**backend, 1024, 1024, 7, 64, 8, 4, residual, rounds);
  }
  TopK(stream, 1000, 65536, 64, rounds);
  BENCH_CHECK(cublasDestroy(blas));
  BENCH_CHECK(cudaStreamDestroy(stream));
  return 0;
}

}  // namespace
}  // namespace adaptd::kernels::gpu

int main(int argc, char** argv) { return adaptd::kernels::gpu::Main(argc, argv); }
