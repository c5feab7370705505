// Per-row top-k (k ≤ kCudaTopKMaxK): one block of kThreads threads per row. Each thread keeps
// a sorted list of the best k of its strided share of the row in shared memory; then k rounds
// of a block-wide reduction over the threads' list heads pick the results in order. Every
// comparison is exact, so the result equals the CPU's element for element.
#include <climits>

#include "kernels/cuda/cuda_kernels.h"

namespace adaptd::kernels::gpu {
namespace {

constexpr int kThreads = 64;

// a before b: larger value, then smaller index; NaN after every number.
__device__ __forceinline__ bool Better(float va, int ia, float vb, int ib) {
  const bool na = isnan(va), nb = isnan(vb);
  if (na || nb) return na == nb ? ia < ib : nb;
  return va > vb || (va == vb && ia < ib);
}

__global__ void TopKKernel(int n, const float* x, int64_t ldx, int k, int32_t* idx, float* val) {
  // Entry r of thread t's list at [r·kThreads + t] (consecutive threads, consecutive banks).
  __shared__ float list_val[kCudaTopKMaxK * kThreads];
  __shared__ int list_idx[kCudaTopKMaxK * kThreads];
  __shared__ float red_val[kThreads];
  __shared__ int red_idx[kThreads];
  __shared__ int red_src[kThreads];
  const int t = threadIdx.x;
  const float* row = x + static_cast<size_t>(blockIdx.x) * ldx;
  int size = 0;
  for (int i = t; i < n; i += kThreads) {
    const float v = row[i];
    if (size == k &&
        !Better(v, i, list_val[(k - 1) * kThreads + t], list_idx[(k - 1) * kThreads + t])) {
      continue;
    }
    int pos = size < k ? size++ : k - 1;
    while (pos > 0 &&
           Better(v, i, list_val[(pos - 1) * kThreads + t], list_idx[(pos - 1) * kThreads + t])) {
      list_val[pos * kThreads + t] = list_val[(pos - 1) * kThreads + t];
      list_idx[pos * kThreads + t] = list_idx[(pos - 1) * kThreads + t];
      --pos;
    }
    list_val[pos * kThreads + t] = v;
    list_idx[pos * kThreads + t] = i;
  }
  int head = 0;
  for (int out = 0; out < k; ++out) {
    // An exhausted list offers index -1, which loses to every real entry.
    red_val[t] = head < size ? list_val[head * kThreads + t] : 0.0f;
    red_idx[t] = head < size ? list_idx[head * kThreads + t] : -1;
    red_src[t] = t;
    __syncthreads();
    for (int stride = kThreads / 2; stride > 0; stride /= 2) {
      if (t < stride) {
        const int o = t + stride;
        const bool take = red_idx[o] >= 0 && (red_idx[t] < 0 || Better(red_val[o], red_idx[o],
                                                                       red_val[t], red_idx[t]));
        if (take) {
          red_val[t] = red_val[o];
          red_idx[t] = red_idx[o];
          red_src[t] = red_src[o];
        }
      }
      __syncthreads();
    }
    if (t == 0) {
      idx[static_cast<size_t>(blockIdx.x) * k + out] = red_idx[0];
      val[static_cast<size_t>(blockIdx.x) * k + out] = red_val[0];
    }
    if (t == red_src[0]) ++head;
    __syncthreads();
  }
}

}  // namespace

cudaError_t LaunchTopK(int rows, int n, const float* x, int64_t ldx, int k, int32_t* idx,
                       float* val, cudaStream_t stream) {
  if (rows == 0 || k == 0) return cudaSuccess;
  if (k < 0 || k > kCudaTopKMaxK || k > n) return cudaErrorInvalidValue;
  TopKKernel<<<rows, kThreads, 0, stream>>>(n, x, ldx, k, idx, val);
  return cudaGetLastError();
}

}  // namespace adaptd::kernels::gpu
