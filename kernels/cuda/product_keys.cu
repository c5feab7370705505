// Product-key scoring: the IDW score of every sub-key for every query half; the per-half top-k
// then runs as LaunchTopK over the score rows. The squared distance is summed coordinate by
// coordinate in order with round-to-nearest and no FMA, as the CPU's exact loop does, so only
// logf's last-place rounding can differ from the CPU.
#include "kernels/cuda/cuda_kernels.h"

namespace adaptd::kernels::gpu {
namespace {

constexpr int kThreads = 128;

// blockIdx.x: the score row (query t, half h) = t·2 + h; blockIdx.y: a slice of sub-keys.
__global__ void ProductKeyScoresKernel(int half, int n, const float* q, const float* t0,
                                       const float* t1, float eps, float* scores) {
  const int row = blockIdx.x;
  const float* table = (row & 1) ? t1 : t0;
  const float* qh = q + static_cast<size_t>(row >> 1) * 2 * half + (row & 1) * half;
  const int i = blockIdx.y * kThreads + threadIdx.x;
  if (i >= n) return;
  float s = 0.0f;
  for (int c = 0; c < half; ++c) {
    const float diff = __fsub_rn(qh[c], table[static_cast<size_t>(c) * n + i]);
    s = __fadd_rn(s, __fmul_rn(diff, diff));
  }
  scores[static_cast<size_t>(row) * n + i] = -logf(__fadd_rn(eps, s));
}

}  // namespace

cudaError_t LaunchProductKeyScores(int count, int half, int n, const float* q, const float* t0,
                                   const float* t1, float eps, float* scores, cudaStream_t stream) {
  if (count == 0 || n == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>(count) * 2, (n + kThreads - 1) / kThreads);
  ProductKeyScoresKernel<<<grid, kThreads, 0, stream>>>(half, n, q, t0, t1, eps, scores);
  return cudaGetLastError();
}

}  // namespace adaptd::kernels::gpu
