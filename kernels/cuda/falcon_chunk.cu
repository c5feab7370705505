// The Falcon chunk step's per-group kernels (falcon_chunk_kernels.h). Each mirrors a loop of
// kernels/cpu/falcon_chunk.cc: one thread owns one column of a group and runs the host's
// per-column arithmetic in the host's order; what every column of a group shares (the decay
// factors of a step, a tile of solve coefficients) is formed once per block in shared memory.
// Global memory holds the residuals, so the only size limit is the c step factors in shared
// memory (kFalconMaxSteps).
#include <cstddef>

#include "kernels/cuda/falcon_chunk_kernels.h"

namespace adaptd::kernels::gpu {
namespace {

// Solve coefficients staged per round: 2 KiB of float64.
constexpr int kCoefTile = 256;
constexpr int kWeightThreads = 128;

template <typename T>
__device__ __forceinline__ int FirstPair(const DeviceFalconChunk<T>& k, int t) {
  return k.h + t - k.window[t] + 1;
}

// Variants 1, 2, 3. For step t and window pair u (pair i), as the host's SolveResiduals:
//   ρ_u = v_i − e^{G_{t−1}} (X S₀)_i − Σ_{v < offset[t]} D_{t,s_v} w_{s_v} (XXᵀ)_{i,pair_v} ρ_v
// with D_{t,s} = e^{G_{t−1}−G_s} and s_v the step of earlier window pair v.
// Every term but ρ is shared by the block's columns: the step factors e^{G_{t−1}−G_s} w_s go to
// shared memory once per step, the coefficients a tile of kCoefTile earlier pairs at a time.
// Loop bounds depend only on the chunk, so every thread reaches every barrier.
template <typename T>
__global__ void __launch_bounds__(kFalconTileColumns)
    ResidualsKernel(const DeviceFalconChunk<T> k, double* rho) {
  extern __shared__ double shared[];
  double* factor = shared;      // c
  double* coef = shared + k.c;  // kCoefTile
  const int group = k.tiles[2 * blockIdx.x];
  const int jj = k.tiles[2 * blockIdx.x + 1] + static_cast<int>(threadIdx.x);
  const int col_begin = k.group_start[group];
  const int q = k.group_start[group + 1] - col_begin;
  const bool live = jj < q;
  const size_t m = static_cast<size_t>(k.m);
  const size_t col = live ? static_cast<size_t>(k.columns[col_begin + jj]) : 0;
  const double* g = k.g + static_cast<size_t>(group) * k.c;
  const double* g_prev = k.g_prev + static_cast<size_t>(group) * k.c;
  const double* rate = k.rate + static_cast<size_t>(group) * k.c;
  double* r = rho + static_cast<size_t>(k.n) * col_begin;  // the group's n × q block

  for (int t = 0; t < k.c; ++t) {
    __syncthreads();  // the previous step's factors are no longer read
    for (int s = threadIdx.x; s < t; s += blockDim.x) factor[s] = exp(g_prev[t] - g[s]) * rate[s];
    const double start = exp(g_prev[t]);
    const int begin = k.offset[t], end = k.offset[t + 1];
    for (int u = begin; u < end; ++u) {
      const size_t i = static_cast<size_t>(k.pair_of[u]);
      double acc = 0;
      if (live) {
        acc = static_cast<double>(k.targets[i * m + col]) -
              start * static_cast<double>(k.xs0[i * m + col]);
      }
      for (int v0 = 0; v0 < begin; v0 += kCoefTile) {
        const int count = min(kCoefTile, begin - v0);
        __syncthreads();  // factors written; the previous tile is no longer read
        for (int x = threadIdx.x; x < count; x += blockDim.x) {
          const int v = v0 + x;
          coef[x] = factor[k.step_of[v]] *
                    static_cast<double>(k.gram[i * k.e + static_cast<size_t>(k.pair_of[v])]);
        }
        __syncthreads();
        if (live) {
          const double* prev = r + static_cast<size_t>(v0) * q + jj;
          for (int x = 0; x < count; ++x) {
            const double cf = coef[x];
            if (cf != 0) acc -= cf * prev[static_cast<size_t>(x) * q];
          }
        }
      }
      if (live) r[static_cast<size_t>(u) * q + jj] = acc;
    }
    if (live && k.predictions != nullptr) {
      // The step's own pair is last in its window.
      const size_t own = static_cast<size_t>(k.h + t);
      k.predictions[static_cast<size_t>(t) * m + col] = static_cast<T>(
          static_cast<double>(k.targets[own * m + col]) - r[static_cast<size_t>(end - 1) * q + jj]);
    }
  }

  // Z_i = Σ over the window pairs that are pair i, in step order: e^{G_C−G_t} w_t ρ.
  __syncthreads();
  const double g_end = g[k.c - 1];
  for (int s = threadIdx.x; s < k.c; s += blockDim.x) factor[s] = exp(g_end - g[s]) * rate[s];
  __syncthreads();
  if (!live) return;
  for (int i = 0; i < k.e; ++i) {
    double sum = 0;
    for (int t = max(0, i - k.h); t < k.c; ++t) {  // pair i is in step t's window only if i ≤ h + t
      const int first = FirstPair(k, t);
      if (i < first) continue;
      sum += factor[t] * r[static_cast<size_t>(k.offset[t] + i - first) * q + jj];
    }
    k.z[static_cast<size_t>(i) * m + col] = static_cast<T>(sum);
  }
}

// Variants 1A, 2A, 3A, per group: block (group, t < c) writes row t of A, formed in T as the
// host's MaskedPredictions does (the step factors summed over the windows that hold pair i,
// then times (XXᵀ)_{h+t,i}); block (group, c) the final weights Σ_t e^{G_C−G_t} w_t over the
// windows that hold pair i.
template <typename T>
__global__ void __launch_bounds__(kWeightThreads)
    MaskWeightsKernel(const DeviceFalconChunk<T> k, T* a, double* final_weight) {
  extern __shared__ double factor[];  // c
  const int group = blockIdx.x;
  const int t = blockIdx.y;
  const double* g = k.g + static_cast<size_t>(group) * k.c;
  const double* g_prev = k.g_prev + static_cast<size_t>(group) * k.c;
  const double* rate = k.rate + static_cast<size_t>(group) * k.c;
  if (t < k.c) {
    for (int s = threadIdx.x; s < t; s += blockDim.x) factor[s] = exp(g_prev[t] - g[s]) * rate[s];
    __syncthreads();
    T* row = a + (static_cast<size_t>(group) * k.c + t) * k.e;
    const T* gram_row = k.gram + static_cast<size_t>(k.h + t) * k.e;
    for (int i = threadIdx.x; i < k.e; i += blockDim.x) {
      T sum = T(0);
      for (int s = 0; s < t; ++s) {
        if (FirstPair(k, s) <= i && i <= k.h + s) sum += static_cast<T>(factor[s]);
      }
      row[i] = sum * gram_row[i];
    }
    return;
  }
  const double g_end = g[k.c - 1];
  for (int s = threadIdx.x; s < k.c; s += blockDim.x) factor[s] = exp(g_end - g[s]) * rate[s];
  __syncthreads();
  for (int i = threadIdx.x; i < k.e; i += blockDim.x) {
    double w = 0;
    for (int s = 0; s < k.c; ++s) {
      if (FirstPair(k, s) <= i && i <= k.h + s) w += factor[s];
    }
    final_weight[static_cast<size_t>(group) * k.e + i] = w;
  }
}

// One thread per column: e^{G_{t−1}} (X S₀)_{h+t} + Σ_i A_{t,i} v_i (or the product row), and
// Z = final weight ⊙ V. No shared memory and no barriers.
template <typename T>
__global__ void __launch_bounds__(kFalconTileColumns)
    MaskedPredictionsKernel(const DeviceFalconChunk<T> k, const T* a, const double* final_weight,
                            const T* product) {
  const int group = k.tiles[2 * blockIdx.x];
  const int jj = k.tiles[2 * blockIdx.x + 1] + static_cast<int>(threadIdx.x);
  const int col_begin = k.group_start[group];
  if (jj >= k.group_start[group + 1] - col_begin) return;
  const size_t m = static_cast<size_t>(k.m);
  const size_t col = static_cast<size_t>(k.columns[col_begin + jj]);
  const double* g_prev = k.g_prev + static_cast<size_t>(group) * k.c;
  const T* ag = a + static_cast<size_t>(group) * k.c * k.e;
  for (int t = 0; t < k.c; ++t) {
    const size_t own = static_cast<size_t>(k.h + t);
    double p = exp(g_prev[t]) * static_cast<double>(k.xs0[own * m + col]);
    if (product != nullptr) {
      p += static_cast<double>(product[static_cast<size_t>(t) * m + col]);
    } else {
      const T* row = ag + static_cast<size_t>(t) * k.e;
      for (int i = 0; i < k.e; ++i) {
        const double coef = static_cast<double>(row[i]);
        if (coef == 0) continue;
        p += coef * static_cast<double>(k.targets[static_cast<size_t>(i) * m + col]);
      }
    }
    if (k.predictions != nullptr)
      k.predictions[static_cast<size_t>(t) * m + col] = static_cast<T>(p);
  }
  const double* fw = final_weight + static_cast<size_t>(group) * k.e;
  for (int i = 0; i < k.e; ++i) {
    const size_t at = static_cast<size_t>(i) * m + col;
    k.z[at] = static_cast<T>(fw[i] * static_cast<double>(k.targets[at]));
  }
}

template <typename T>
__global__ void ScaleColumnsKernel(size_t count, int m, const double* factor, T* s) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    s[i] *= static_cast<T>(factor[i % static_cast<size_t>(m)]);
  }
}

template <typename T>
bool Launchable(const DeviceFalconChunk<T>& k) {
  return k.c >= 1 && k.c <= kFalconMaxSteps && k.m >= 1 && k.groups >= 1 && k.e == k.h + k.c;
}

}  // namespace

template <typename T>
cudaError_t LaunchFalconResiduals(const DeviceFalconChunk<T>& k, double* rho, cudaStream_t stream) {
  if (!Launchable(k)) return cudaErrorInvalidValue;
  if (k.tile_count == 0) return cudaSuccess;
  const size_t shared = (static_cast<size_t>(k.c) + kCoefTile) * sizeof(double);
  ResidualsKernel<T><<<k.tile_count, kFalconTileColumns, shared, stream>>>(k, rho);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchFalconMaskWeights(const DeviceFalconChunk<T>& k, T* a, double* final_weight,
                                    cudaStream_t stream) {
  if (!Launchable(k)) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(k.groups), static_cast<unsigned>(k.c) + 1);
  const size_t shared = static_cast<size_t>(k.c) * sizeof(double);
  MaskWeightsKernel<T><<<grid, kWeightThreads, shared, stream>>>(k, a, final_weight);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchFalconMaskedPredictions(const DeviceFalconChunk<T>& k, const T* a,
                                          const double* final_weight, const T* product,
                                          cudaStream_t stream) {
  if (!Launchable(k)) return cudaErrorInvalidValue;
  if (k.tile_count == 0) return cudaSuccess;
  MaskedPredictionsKernel<T>
      <<<k.tile_count, kFalconTileColumns, 0, stream>>>(k, a, final_weight, product);
  return cudaGetLastError();
}

template <typename T>
cudaError_t LaunchScaleColumns(int rows, int m, const double* factor, T* s, cudaStream_t stream) {
  const size_t count = static_cast<size_t>(rows) * static_cast<size_t>(m);
  if (count == 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const size_t blocks = (count + kThreads - 1) / kThreads;
  ScaleColumnsKernel<T>
      <<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kThreads, 0, stream>>>(count, m,
                                                                                        factor, s);
  return cudaGetLastError();
}

template cudaError_t LaunchFalconResiduals<float>(const DeviceFalconChunk<float>&, double*,
                                                  cudaStream_t);
template cudaError_t LaunchFalconResiduals<double>(const DeviceFalconChunk<double>&, double*,
                                                   cudaStream_t);
template cudaError_t LaunchFalconMaskWeights<float>(const DeviceFalconChunk<float>&, float*,
                                                    double*, cudaStream_t);
template cudaError_t LaunchFalconMaskWeights<double>(const DeviceFalconChunk<double>&, double*,
                                                     double*, cudaStream_t);
template cudaError_t LaunchFalconMaskedPredictions<float>(const DeviceFalconChunk<float>&,
                                                          const float*, const double*, const float*,
                                                          cudaStream_t);
template cudaError_t LaunchFalconMaskedPredictions<double>(const DeviceFalconChunk<double>&,
                                                           const double*, const double*,
                                                           const double*, cudaStream_t);
template cudaError_t LaunchScaleColumns<float>(int, int, const double*, float*, cudaStream_t);
template cudaError_t LaunchScaleColumns<double>(int, int, const double*, double*, cudaStream_t);

}  // namespace adaptd::kernels::gpu
