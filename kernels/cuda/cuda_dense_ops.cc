// GEMV (cuBLAS), float-input SYRK accumulated in float64 (device conversion, then DSYRK), and
// the grouped GEMM (own kernel, one launch). See cuda_ops.h for the row-major ↔ column-major
// mapping.
#include <cublas_v2.h>

#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/cuda_staging.h"

namespace adaptd::kernels::gpu {
namespace {

cublasStatus_t CublasGemv(cublasHandle_t h, cublasOperation_t op, int m, int n, const float* alpha,
                          const float* a, int lda, const float* x, const float* beta, float* y) {
  return cublasSgemv(h, op, m, n, alpha, a, lda, x, 1, beta, y, 1);
}

cublasStatus_t CublasGemv(cublasHandle_t h, cublasOperation_t op, int m, int n, const double* alpha,
                          const double* a, int lda, const double* x, const double* beta,
                          double* y) {
  return cublasDgemv(h, op, m, n, alpha, a, lda, x, 1, beta, y, 1);
}

}  // namespace

template <typename T>
absl::Status GemvOnDevice(CudaResources& r, Trans trans, int m, int n, T alpha, const T* a,
                          int64_t lda, const T* x, T beta, T* y) {
  const int x_len = trans == Trans::kNo ? n : m, y_len = trans == Trans::kNo ? m : n;
  WorkspacePlan plan;
  const size_t a_at = plan.Add<T>(static_cast<size_t>(m) * n);
  const size_t x_at = plan.Add<T>(x_len);
  const size_t y_at = plan.Add<T>(y_len);
  absl::StatusOr<std::byte*> base = r.Workspace(plan.bytes());
  if (!base.ok()) return base.status();
  T* d_a = WorkspacePlan::At<T>(*base, a_at);
  T* d_x = WorkspacePlan::At<T>(*base, x_at);
  T* d_y = WorkspacePlan::At<T>(*base, y_at);
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), a, lda, m, n, d_a));
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), x, x_len, 1, x_len, d_x));
  if (beta != T(0)) CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), y, y_len, 1, y_len, d_y));
  // The packed row-major A (m×n) is the column-major n×m matrix Aᵀ: A·x is its transposed GEMV.
  CUBLAS_RETURN_IF_ERROR(CublasGemv(r.cublas(), trans == Trans::kNo ? CUBLAS_OP_T : CUBLAS_OP_N, n,
                                    m, &alpha, d_a, n, d_x, &beta, d_y));
  return CopyToHost(r.stream(), d_y, 1, y_len, y, y_len);
}

template absl::Status GemvOnDevice<float>(CudaResources&, Trans, int, int, float, const float*,
                                          int64_t, const float*, float, float*);
template absl::Status GemvOnDevice<double>(CudaResources&, Trans, int, int, double, const double*,
                                           int64_t, const double*, double, double*);

absl::Status SyrkUpperAccumulateOnDevice(CudaResources& r, int n, int k, double alpha,
                                         const float* a, int64_t lda, double beta, double* c,
                                         int64_t ldc) {
  const size_t elements = static_cast<size_t>(k) * n;
  WorkspacePlan plan;
  const size_t af_at = plan.Add<float>(elements);
  const size_t ad_at = plan.Add<double>(elements);
  const size_t c_at = plan.Add<double>(static_cast<size_t>(n) * n);
  absl::StatusOr<std::byte*> base = r.Workspace(plan.bytes());
  if (!base.ok()) return base.status();
  float* d_af = WorkspacePlan::At<float>(*base, af_at);
  double* d_ad = WorkspacePlan::At<double>(*base, ad_at);
  double* d_c = WorkspacePlan::At<double>(*base, c_at);
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), a, lda, k, n, d_af));
  // All of C goes over and back, so its strictly lower triangle returns unchanged.
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), c, ldc, n, n, d_c));
  CUDA_RETURN_IF_ERROR(LaunchFloatToDouble(d_af, d_ad, elements, r.stream()));
  // Row-major upper triangle of AᵀA = column-major lower triangle of the no-transpose SYRK of
  // the packed A's column-major view (n×k).
  CUBLAS_RETURN_IF_ERROR(cublasDsyrk(r.cublas(), CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k, &alpha,
                                     d_ad, n, &beta, d_c, n));
  return CopyToHost(r.stream(), d_c, n, n, c, ldc);
}

absl::Status GroupedGemmOnDevice(CudaResources& r, std::span<const GemmGroup> groups) {
  // Stage every group's A and B packed, one region each, and C's packed output.
  WorkspacePlan plan;
  std::vector<size_t> a_at(groups.size()), b_at(groups.size()), c_at(groups.size());
  int64_t live = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    const GemmGroup& g = groups[i];
    if (g.m == 0 || g.n == 0) continue;
    ++live;
    a_at[i] = plan.Add<float>(static_cast<size_t>(g.m) * g.k);
    b_at[i] = plan.Add<float>(static_cast<size_t>(g.k) * g.n);
    c_at[i] = plan.Add<float>(static_cast<size_t>(g.m) * g.n);
  }
  if (live == 0) return absl::OkStatus();
  std::vector<DeviceGemmGroup> plan_groups;
  std::vector<size_t> source;  // index into `groups` of each planned group
  plan_groups.reserve(live);
  for (size_t i = 0; i < groups.size(); ++i) {
    const GemmGroup& g = groups[i];
    if (g.m == 0 || g.n == 0) continue;
    plan_groups.push_back(DeviceGemmGroup{
        static_cast<int>(g.m), static_cast<int>(g.n), static_cast<int>(g.k), nullptr,
        static_cast<int>(g.k), nullptr, static_cast<int>(g.n), nullptr, static_cast<int>(g.n)});
    source.push_back(i);
  }
  std::vector<GemmTile> tiles(GemmTileCount(plan_groups.data(), live));
  const size_t groups_at = plan.Add<DeviceGemmGroup>(plan_groups.size());
  const size_t tiles_at = plan.Add<GemmTile>(tiles.size());
  absl::StatusOr<std::byte*> base = r.Workspace(plan.bytes());
  if (!base.ok()) return base.status();
  for (size_t p = 0; p < plan_groups.size(); ++p) {
    const size_t i = source[p];
    const GemmGroup& g = groups[i];
    DeviceGemmGroup& d = plan_groups[p];
    d.a = WorkspacePlan::At<float>(*base, a_at[i]);
    d.b = WorkspacePlan::At<float>(*base, b_at[i]);
    d.c = WorkspacePlan::At<float>(*base, c_at[i]);
    CUDA_KERNELS_RETURN_IF_ERROR(
        CopyToDevice(r.stream(), g.a, g.lda, g.m, g.k, const_cast<float*>(d.a)));
    CUDA_KERNELS_RETURN_IF_ERROR(
        CopyToDevice(r.stream(), g.b, g.ldb, g.k, g.n, const_cast<float*>(d.b)));
  }
  PlanGemmTiles(plan_groups.data(), live, tiles.data());
  auto* d_groups = WorkspacePlan::At<DeviceGemmGroup>(*base, groups_at);
  auto* d_tiles = WorkspacePlan::At<GemmTile>(*base, tiles_at);
  // The host vectors stay alive until the caller's synchronize (OnDevice).
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_groups, plan_groups.data(),
                                       plan_groups.size() * sizeof(DeviceGemmGroup),
                                       cudaMemcpyHostToDevice, r.stream()));
  CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(d_tiles, tiles.data(), tiles.size() * sizeof(GemmTile),
                                       cudaMemcpyHostToDevice, r.stream()));
  CUDA_RETURN_IF_ERROR(
      LaunchGroupedGemm(d_groups, d_tiles, static_cast<int64_t>(tiles.size()), r.stream()));
  for (size_t p = 0; p < plan_groups.size(); ++p) {
    const GemmGroup& g = groups[source[p]];
    CUDA_KERNELS_RETURN_IF_ERROR(CopyToHost(r.stream(), plan_groups[p].c, g.m, g.n, g.c, g.ldc));
  }
  // plan_groups and tiles are pageable host memory read by queued copies: wait here so they
  // outlive them.
  return r.Synchronize();
}

}  // namespace adaptd::kernels::gpu
