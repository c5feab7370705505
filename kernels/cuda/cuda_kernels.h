// The own CUDA kernels of the backend, as launch functions on device pointers (so benchmarks can
// run them on device-resident data). Each queues its work on `stream` and returns the launch
// status; results are complete after the stream synchronizes. Compiled by nvcc (the .cu files)
// and included by host code: this header needs only the CUDA runtime.
// Layout: row-major with explicit leading dimensions, as kernels/backend.h.
// Thread safety: stateless; callers own the stream.
#ifndef ADAPTD_KERNELS_CUDA_CUDA_KERNELS_H_
#define ADAPTD_KERNELS_CUDA_CUDA_KERNELS_H_

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace adaptd::kernels::gpu {

// out[i] = (double) in[i] for i < count.
cudaError_t LaunchFloatToDouble(const float* in, double* out, size_t count, cudaStream_t stream);

// One group of the grouped GEMM on the device: C (m×n) = A (m×k) · B (k×n).
struct DeviceGemmGroup {
  int m, n, k;
  const float* a;
  int lda;
  const float* b;
  int ldb;
  float* c;
  int ldc;
};
// A block of C computed by one thread block: kGemmTileRows rows from row0, kGemmTileCols
// columns from col0, of group `group`.
struct GemmTile {
  int group, row0, col0;
};
inline constexpr int kGemmTileRows = 8;
inline constexpr int kGemmTileCols = 32;
// The tiles covering every group's C, written to `tiles` (room for GemmTileCount); returns
// how many were written.
int64_t GemmTileCount(const DeviceGemmGroup* groups, int64_t count);
int64_t PlanGemmTiles(const DeviceGemmGroup* groups, int64_t count, GemmTile* tiles);
// All groups in one launch: one thread block per tile (groups and tiles in device memory).
cudaError_t LaunchGroupedGemm(const DeviceGemmGroup* groups, const GemmTile* tiles,
                              int64_t tile_count, cudaStream_t stream);

// Per row of x (rows×n, leading dimension ldx), the k largest (best first, ties to the lower
// index, NaN below every number) into idx and val (rows×k). 1 ≤ k ≤ kCudaTopKMaxK ≤ n.
inline constexpr int kCudaTopKMaxK = 64;
cudaError_t LaunchTopK(int rows, int n, const float* x, int64_t ldx, int k, int32_t* idx,
                       float* val, cudaStream_t stream);

// dst[dst_rows[r]·n + j] += alpha·src[r·n + j] by atomicAdd (src rows×n and dst packed).
cudaError_t LaunchRowScatterAdd(int rows, int n, const int64_t* dst_rows, float alpha,
                                const float* src, float* dst, cudaStream_t stream);

// scores[(t·2 + h)·n + i] = −log(eps + ‖q_t,h − K^h_i‖²) for count queries (packed rows of
// 2·half floats) against the dimension-major tables t0, t1 (half × n). The squared distance is
// summed over coordinates in order with round-to-nearest and no FMA, as the CPU does.
cudaError_t LaunchProductKeyScores(int count, int half, int n, const float* q, const float* t0,
                                   const float* t1, float eps, float* scores, cudaStream_t stream);

}  // namespace adaptd::kernels::gpu

#endif  // ADAPTD_KERNELS_CUDA_CUDA_KERNELS_H_
