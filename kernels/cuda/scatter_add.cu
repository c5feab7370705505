// Row scatter-add: one thread per source entry, atomicAdd into its destination row (rows may
// repeat, so the order of the sums is unspecified).
#include "kernels/cuda/cuda_kernels.h"

namespace adaptd::kernels::gpu {
namespace {

__global__ void RowScatterAddKernel(int rows, int n, const int64_t* dst_rows, float alpha,
                                    const float* src, float* dst) {
  const size_t total = static_cast<size_t>(rows) * n;
  for (size_t e = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<size_t>(gridDim.x) * blockDim.x) {
    const size_t r = e / n, j = e % n;
    atomicAdd(dst + static_cast<size_t>(dst_rows[r]) * n + j, alpha * src[e]);
  }
}

}  // namespace

cudaError_t LaunchRowScatterAdd(int rows, int n, const int64_t* dst_rows, float alpha,
                                const float* src, float* dst, cudaStream_t stream) {
  const size_t total = static_cast<size_t>(rows) * n;
  if (total == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const size_t blocks = (total + kThreads - 1) / kThreads;
  RowScatterAddKernel<<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kThreads, 0,
                        stream>>>(rows, n, dst_rows, alpha, src, dst);
  return cudaGetLastError();
}

}  // namespace adaptd::kernels::gpu
