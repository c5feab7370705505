// The own CUDA kernels of the Falcon chunk step (falcon_chunk.cu): the per-column-group work
// that kernels/cpu/falcon_chunk.cc does on the host, on device-resident data, with the same
// arithmetic (float64 solve whatever T is, the same summation orders; only exp's last place
// and fused multiply-adds differ). The dense products (X S₀, XXᵀ, Xᵀ Z) are cuBLAS's, run by
// falcon_chunk_ops.cc. Compiled by nvcc and included by host code: needs only the CUDA runtime.
// Layout: every matrix row-major and packed (leading dimension = its column count).
// Thread safety: stateless; callers own the stream.
#ifndef ADAPTD_KERNELS_CUDA_FALCON_CHUNK_KERNELS_H_
#define ADAPTD_KERNELS_CUDA_FALCON_CHUNK_KERNELS_H_

#include <cuda_runtime_api.h>

namespace adaptd::kernels::gpu {

// The kernels keep per-step factors (c doubles) in shared memory: longer chunks run on the host.
inline constexpr int kFalconMaxSteps = 4096;
// Columns per thread block (one thread per column of a group).
inline constexpr int kFalconTileColumns = 64;

// One chunk on the device: e = h + c pairs (the h history pairs, then the chunk's c); the
// window pairs of every step listed step by step (n = Σ window entries, step t's from
// offset[t], its own pair last); the column groups. All pointers are device memory.
template <typename T>
struct DeviceFalconChunk {
  int m = 0, h = 0, c = 0, e = 0, n = 0, groups = 0;
  const int* window = nullptr;       // c
  const int* offset = nullptr;       // c + 1
  const int* step_of = nullptr;      // n: the step of each window pair
  const int* pair_of = nullptr;      // n: its index among the e pairs
  const int* group_start = nullptr;  // groups + 1: where each group's columns begin in `columns`
  const int* columns = nullptr;      // m: group 0's columns, then group 1's, ...
  const int* tiles = nullptr;        // tile_count pairs (group, first column within the group)
  int tile_count = 0;
  const double* g = nullptr;       // groups × c: G_t = Σ_{s≤t} log γ_s
  const double* g_prev = nullptr;  // groups × c: G_{t−1} (0 for t = 0)
  const double* rate = nullptr;    // groups × c: η_t / B_t
  const T* targets = nullptr;      // e × m: V
  const T* xs0 = nullptr;          // e × m: X S₀
  const T* gram = nullptr;         // e × e: X Xᵀ
  T* z = nullptr;                  // e × m, written: the weights of Xᵀ in the update of S
  T* predictions = nullptr;        // c × m, written; may be null
};

// Variants 1, 2, 3: the window residuals by forward substitution, one thread per column, into
// `rho` (n × m float64 scratch; group g's block n × q_g starts at n · group_start[g]), then the
// predictions and Z.
template <typename T>
cudaError_t LaunchFalconResiduals(const DeviceFalconChunk<T>& k, double* rho, cudaStream_t stream);

// Variants 1A, 2A, 3A, first pass: per group the masked coefficients A = (decay mask) ⊙ XXᵀ of
// the chunk's own pairs (groups × c × e, in T as the host forms them) and the final weight of
// every pair (groups × e, float64).
template <typename T>
cudaError_t LaunchFalconMaskWeights(const DeviceFalconChunk<T>& k, T* a, double* final_weight,
                                    cudaStream_t stream);

// Second pass: predictions e^{G_{t−1}} X S₀ + A V and Z = final weight ⊙ V. With `product`
// (c × m, non-null only for a single group) A V is read from it (a cuBLAS product) instead of
// being summed per column.
template <typename T>
cudaError_t LaunchFalconMaskedPredictions(const DeviceFalconChunk<T>& k, const T* a,
                                          const double* final_weight, const T* product,
                                          cudaStream_t stream);

// s[i·m + j] *= (T) factor[j] for i < rows, j < m.
template <typename T>
cudaError_t LaunchScaleColumns(int rows, int m, const double* factor, T* s, cudaStream_t stream);

}  // namespace adaptd::kernels::gpu

#endif  // ADAPTD_KERNELS_CUDA_FALCON_CHUNK_KERNELS_H_
