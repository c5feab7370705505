// Grouped GEMM: every group's C = A·B in one launch. One thread block (one warp) per tile of
// kGemmTileRows × kGemmTileCols outputs; each thread owns one column of the tile and
// accumulates its rows in registers while the tile's rows of A pass through shared memory,
// kGemmTileK coordinates at a time. A group with few rows (the common case: a few inputs per
// store) is one tile row, so its weights B are read from memory once.
#include "kernels/cuda/cuda_kernels.h"

namespace adaptd::kernels::gpu {
namespace {

constexpr int kGemmTileK = 64;

__global__ void GroupedGemmKernel(const DeviceGemmGroup* groups, const GemmTile* tiles) {
  const GemmTile tile = tiles[blockIdx.x];
  const DeviceGemmGroup g = groups[tile.group];
  const int col = tile.col0 + static_cast<int>(threadIdx.x);
  const int rows = min(kGemmTileRows, g.m - tile.row0);
  __shared__ float a_tile[kGemmTileRows][kGemmTileK];
  float acc[kGemmTileRows];
#pragma unroll
  for (int r = 0; r < kGemmTileRows; ++r) acc[r] = 0.0f;
  for (int l0 = 0; l0 < g.k; l0 += kGemmTileK) {
    const int lk = min(kGemmTileK, g.k - l0);
    for (int e = threadIdx.x; e < kGemmTileRows * kGemmTileK; e += blockDim.x) {
      const int r = e / kGemmTileK, l = e % kGemmTileK;
      a_tile[r][l] =
          (r < rows && l < lk) ? g.a[static_cast<size_t>(tile.row0 + r) * g.lda + l0 + l] : 0.0f;
    }
    __syncthreads();
    if (col < g.n) {
      const float* b = g.b + static_cast<size_t>(l0) * g.ldb + col;
      for (int l = 0; l < lk; ++l) {
        const float bv = __ldg(b + static_cast<size_t>(l) * g.ldb);
#pragma unroll
        for (int r = 0; r < kGemmTileRows; ++r) acc[r] = fmaf(a_tile[r][l], bv, acc[r]);
      }
    }
    __syncthreads();
  }
  if (col < g.n) {
    for (int r = 0; r < rows; ++r) g.c[static_cast<size_t>(tile.row0 + r) * g.ldc + col] = acc[r];
  }
}

}  // namespace

int64_t GemmTileCount(const DeviceGemmGroup* groups, int64_t count) {
  int64_t tiles = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (groups[i].m <= 0 || groups[i].n <= 0) continue;
    tiles += static_cast<int64_t>((groups[i].m + kGemmTileRows - 1) / kGemmTileRows) *
             ((groups[i].n + kGemmTileCols - 1) / kGemmTileCols);
  }
  return tiles;
}

int64_t PlanGemmTiles(const DeviceGemmGroup* groups, int64_t count, GemmTile* tiles) {
  int64_t written = 0;
  for (int64_t i = 0; i < count; ++i) {
    for (int row0 = 0; row0 < groups[i].m; row0 += kGemmTileRows) {
      for (int col0 = 0; col0 < groups[i].n; col0 += kGemmTileCols) {
        tiles[written++] = GemmTile{static_cast<int>(i), row0, col0};
      }
    }
  }
  return written;
}

cudaError_t LaunchGroupedGemm(const DeviceGemmGroup* groups, const GemmTile* tiles,
                              int64_t tile_count, cudaStream_t stream) {
  if (tile_count == 0) return cudaSuccess;
  if (tile_count > 0x7fffffff) return cudaErrorInvalidValue;
  GroupedGemmKernel<<<static_cast<unsigned>(tile_count), kGemmTileCols, 0, stream>>>(groups, tiles);
  return cudaGetLastError();
}

}  // namespace adaptd::kernels::gpu
