// The Falcon chunk step on the device (cuda_ops.h): stage the keys, targets and state, form
// X S₀ and XXᵀ with cuBLAS, run the per-group kernels (falcon_chunk_kernels.h), then
// S ← e^{G_C} S₀ + Xᵀ Z with a column-scaling kernel and cuBLAS, and queue S and the
// predictions back. The chunk's bookkeeping (window pair lists, rates, column tiles) is formed
// on the host exactly as kernels/cpu/falcon_chunk.cc forms it. See cuda_ops.h for the
// row-major ↔ column-major mapping.
#include <cublas_v2.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/cuda/cublas_gemm.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/cuda_staging.h"
#include "kernels/cuda/falcon_chunk_kernels.h"

namespace adaptd::kernels::gpu {
namespace {

// Row-major C (m×n, packed) = alpha·op(A)·op(B) + beta·C on packed device matrices whose
// stored column counts are a_cols and b_cols: the column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, with the
// transposition flags carried over (cuda_ops.h).
template <typename T>
absl::Status RowMajorGemm(CudaResources& r, Trans ta, Trans tb, int m, int n, int k, T alpha,
                          const T* a, int a_cols, const T* b, int b_cols, T beta, T* c)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu()) {
  CUBLAS_RETURN_IF_ERROR(CublasGemm(r.cublas(), ToCublas(tb), ToCublas(ta), n, m, k, &alpha, b,
                                    std::max(b_cols, 1), a, std::max(a_cols, 1), &beta, c, n));
  return absl::OkStatus();
}

// The host-side description of one chunk: what DeviceFalconChunk points at, before upload.
struct ChunkPlan {
  int n = 0;
  std::vector<int> ints;        // window, offset, step_of, pair_of, group_start, columns, tiles
  std::vector<double> doubles;  // g, g_prev, rate (groups × c each), end decay (m)
  size_t offset_at = 0, step_of_at = 0, pair_of_at = 0, group_start_at = 0, columns_at = 0,
         tiles_at = 0;
  int tile_count = 0;
};

template <typename T>
ChunkPlan PlanChunk(const FalconChunk<T>& k) {
  ChunkPlan p;
  const int c = static_cast<int>(k.c), h = static_cast<int>(k.h);
  const int groups = static_cast<int>(k.groups.size());
  std::vector<int> offset(c + 1, 0), step_of, pair_of;
  for (int t = 0; t < c; ++t) {
    offset[t + 1] = offset[t] + static_cast<int>(k.window[t]);
    for (int i = h + t - static_cast<int>(k.window[t]) + 1; i <= h + t; ++i) {
      step_of.push_back(t);
      pair_of.push_back(i);
    }
  }
  p.n = offset[c];
  std::vector<int>& v = p.ints;
  for (int t = 0; t < c; ++t) v.push_back(static_cast<int>(k.window[t]));
  p.offset_at = v.size();
  v.insert(v.end(), offset.begin(), offset.end());
  p.step_of_at = v.size();
  v.insert(v.end(), step_of.begin(), step_of.end());
  p.pair_of_at = v.size();
  v.insert(v.end(), pair_of.begin(), pair_of.end());
  p.group_start_at = v.size();
  int start = 0;
  for (const FalconColumnGroup& group : k.groups) {
    v.push_back(start);
    start += static_cast<int>(group.columns.size());
  }
  v.push_back(start);
  p.columns_at = v.size();
  for (const FalconColumnGroup& group : k.groups) {
    for (int64_t col : group.columns) v.push_back(static_cast<int>(col));
  }
  p.tiles_at = v.size();
  for (int g = 0; g < groups; ++g) {
    const int q = static_cast<int>(k.groups[g].columns.size());
    for (int first = 0; first < q; first += kFalconTileColumns) {
      v.push_back(g);
      v.push_back(first);
      ++p.tile_count;
    }
  }
  // The rates exactly as the host's RatesFor sums them, and each column's e^{G_C}.
  std::vector<double>& d = p.doubles;
  d.assign(3 * static_cast<size_t>(groups) * c + k.m, 1.0);
  double* g_at = d.data();
  double* g_prev_at = g_at + static_cast<size_t>(groups) * c;
  double* rate_at = g_prev_at + static_cast<size_t>(groups) * c;
  double* end_decay = rate_at + static_cast<size_t>(groups) * c;
  for (int g = 0; g < groups; ++g) {
    const FalconColumnGroup& group = k.groups[g];
    double sum = 0;
    for (int t = 0; t < c; ++t) {
      g_prev_at[static_cast<size_t>(g) * c + t] = sum;
      sum += group.log_gamma[t];
      g_at[static_cast<size_t>(g) * c + t] = sum;
      rate_at[static_cast<size_t>(g) * c + t] = group.rate[t];
    }
    const double end = std::exp(sum);
    for (int64_t col : group.columns) end_decay[col] = end;
  }
  return p;
}

}  // namespace

template <typename T>
absl::Status FalconChunkStepOnDevice(CudaResources& r, const FalconChunk<T>& chunk) {
  const int d = static_cast<int>(chunk.d), m = static_cast<int>(chunk.m);
  const int h = static_cast<int>(chunk.h), c = static_cast<int>(chunk.c), e = h + c;
  const int groups = static_cast<int>(chunk.groups.size());
  const bool whole = !chunk.residual && groups == 1;
  const ChunkPlan p = PlanChunk(chunk);
  const size_t em = static_cast<size_t>(e) * m, cm = static_cast<size_t>(c) * m;

  WorkspacePlan plan;
  const size_t x_at = plan.Add<T>(static_cast<size_t>(e) * d);
  const size_t v_at = plan.Add<T>(em);
  const size_t s_at = plan.Add<T>(static_cast<size_t>(d) * m);
  const size_t xs0_at = plan.Add<T>(em);
  const size_t gram_at = plan.Add<T>(static_cast<size_t>(e) * e);
  const size_t z_at = plan.Add<T>(em);
  const size_t pred_at = plan.Add<T>(chunk.predictions != nullptr ? cm : 0);
  const size_t ints_at = plan.Add<int>(p.ints.size());
  const size_t doubles_at = plan.Add<double>(p.doubles.size());
  // Residual variants: the n × m residuals. Masked: A, the final weights, A·V for one group.
  const size_t rho_at = plan.Add<double>(chunk.residual ? static_cast<size_t>(p.n) * m : 0);
  const size_t a_at = plan.Add<T>(chunk.residual ? 0 : static_cast<size_t>(groups) * c * e);
  const size_t fw_at = plan.Add<double>(chunk.residual ? 0 : static_cast<size_t>(groups) * e);
  const size_t product_at = plan.Add<T>(whole ? cm : 0);
  absl::StatusOr<std::byte*> base = r.Workspace(plan.bytes());
  if (!base.ok()) return base.status();
  T* d_x = WorkspacePlan::At<T>(*base, x_at);
  T* d_v = WorkspacePlan::At<T>(*base, v_at);
  T* d_s = WorkspacePlan::At<T>(*base, s_at);
  T* d_xs0 = WorkspacePlan::At<T>(*base, xs0_at);
  T* d_gram = WorkspacePlan::At<T>(*base, gram_at);
  T* d_z = WorkspacePlan::At<T>(*base, z_at);
  int* d_ints = WorkspacePlan::At<int>(*base, ints_at);
  double* d_doubles = WorkspacePlan::At<double>(*base, doubles_at);

  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), chunk.keys, chunk.d, e, d, d_x));
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), chunk.targets, chunk.m, e, m, d_v));
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), chunk.s, chunk.m, d, m, d_s));
  // p's vectors are pageable host memory read by queued copies: the synchronize at the end
  // keeps them alive long enough.
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_ints, p.ints.data(), p.ints.size() * sizeof(int),
                                       cudaMemcpyHostToDevice, r.stream()));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_doubles, p.doubles.data(),
                                       p.doubles.size() * sizeof(double), cudaMemcpyHostToDevice,
                                       r.stream()));

  // X S₀ (e × m) and XXᵀ (e × e); with d = 0 both are zero (cuBLAS with k = 0, beta = 0).
  CUDA_KERNELS_RETURN_IF_ERROR(
      RowMajorGemm<T>(r, Trans::kNo, Trans::kNo, e, m, d, T(1), d_x, d, d_s, m, T(0), d_xs0));
  CUDA_KERNELS_RETURN_IF_ERROR(
      RowMajorGemm<T>(r, Trans::kNo, Trans::kYes, e, e, d, T(1), d_x, d, d_x, d, T(0), d_gram));

  DeviceFalconChunk<T> k;
  k.m = m;
  k.h = h;
  k.c = c;
  k.e = e;
  k.n = p.n;
  k.groups = groups;
  k.window = d_ints;
  k.offset = d_ints + p.offset_at;
  k.step_of = d_ints + p.step_of_at;
  k.pair_of = d_ints + p.pair_of_at;
  k.group_start = d_ints + p.group_start_at;
  k.columns = d_ints + p.columns_at;
  k.tiles = d_ints + p.tiles_at;
  k.tile_count = p.tile_count;
  k.g = d_doubles;
  k.g_prev = d_doubles + static_cast<size_t>(groups) * c;
  k.rate = d_doubles + 2 * static_cast<size_t>(groups) * c;
  const double* d_end_decay = d_doubles + 3 * static_cast<size_t>(groups) * c;
  k.targets = d_v;
  k.xs0 = d_xs0;
  k.gram = d_gram;
  k.z = d_z;
  k.predictions = chunk.predictions != nullptr ? WorkspacePlan::At<T>(*base, pred_at) : nullptr;

  if (chunk.residual) {
    CUDA_RETURN_IF_ERROR(
        LaunchFalconResiduals(k, WorkspacePlan::At<double>(*base, rho_at), r.stream()));
  } else {
    T* d_a = WorkspacePlan::At<T>(*base, a_at);
    double* d_fw = WorkspacePlan::At<double>(*base, fw_at);
    CUDA_RETURN_IF_ERROR(LaunchFalconMaskWeights(k, d_a, d_fw, r.stream()));
    T* d_product = nullptr;
    if (whole) {
      // One group: A V (c × m) as one product, as the host does.
      d_product = WorkspacePlan::At<T>(*base, product_at);
      CUDA_KERNELS_RETURN_IF_ERROR(RowMajorGemm<T>(r, Trans::kNo, Trans::kNo, c, m, e, T(1), d_a, e,
                                                   d_v, m, T(0), d_product));
    }
    CUDA_RETURN_IF_ERROR(LaunchFalconMaskedPredictions(k, d_a, d_fw, d_product, r.stream()));
  }

  // S ← e^{G_C} S₀ + Xᵀ Z (nothing to update when d = 0).
  if (d > 0) {
    CUDA_RETURN_IF_ERROR(LaunchScaleColumns(d, m, d_end_decay, d_s, r.stream()));
    CUDA_KERNELS_RETURN_IF_ERROR(
        RowMajorGemm<T>(r, Trans::kYes, Trans::kNo, d, m, e, T(1), d_x, d, d_z, m, T(1), d_s));
    CUDA_KERNELS_RETURN_IF_ERROR(CopyToHost(r.stream(), d_s, d, m, chunk.s, chunk.m));
  }
  if (chunk.predictions != nullptr) {
    CUDA_KERNELS_RETURN_IF_ERROR(
        CopyToHost(r.stream(), k.predictions, c, m, chunk.predictions, chunk.m));
  }
  return r.Synchronize();
}

template absl::Status FalconChunkStepOnDevice<float>(CudaResources&, const FalconChunk<float>&);
template absl::Status FalconChunkStepOnDevice<double>(CudaResources&, const FalconChunk<double>&);

}  // namespace adaptd::kernels::gpu
