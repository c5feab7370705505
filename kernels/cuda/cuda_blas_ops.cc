// GEMM and SYRK on cuBLAS. See cuda_ops.h for the row-major ↔ column-major mapping.
#include <cublas_v2.h>

#include "kernels/cuda/cublas_gemm.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/cuda_staging.h"

namespace adaptd::kernels::gpu {
template <typename T>
absl::Status GemmOnDevice(CudaResources& r, Trans trans_a, Trans trans_b, int m, int n, int k,
                          T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
                          int64_t ldc) {
  // Stored shapes (row-major): A is m×k or k×m, B is k×n or n×k. Packed on the device, each has
  // its column count as leading dimension (at least 1, as cuBLAS requires even when k = 0).
  const int a_rows = trans_a == Trans::kNo ? m : k;
  const int a_cols = trans_a == Trans::kNo ? k : m;
  const int b_rows = trans_b == Trans::kNo ? k : n;
  const int b_cols = trans_b == Trans::kNo ? n : k;

  WorkspacePlan plan;
  const size_t a_at = plan.Add<T>(static_cast<size_t>(a_rows) * a_cols);
  const size_t b_at = plan.Add<T>(static_cast<size_t>(b_rows) * b_cols);
  const size_t c_at = plan.Add<T>(static_cast<size_t>(m) * n);
  absl::StatusOr<std::byte*> base = r.Workspace(plan.bytes());
  if (!base.ok()) return base.status();
  T* d_a = WorkspacePlan::At<T>(*base, a_at);
  T* d_b = WorkspacePlan::At<T>(*base, b_at);
  T* d_c = WorkspacePlan::At<T>(*base, c_at);

  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), a, lda, a_rows, a_cols, d_a));
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), b, ldb, b_rows, b_cols, d_b));
  // With beta = 0, C is output only (and may hold NaNs that must not propagate).
  if (beta != T(0)) CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), c, ldc, m, n, d_c));

  // Row-major C = op(A)·op(B) is column-major Cᵀ (n×m) = op(B)ᵀ·op(A)ᵀ, and the column-major
  // views of the packed A and B already are Aᵀ and Bᵀ: so the transposition flags carry over.
  CUBLAS_RETURN_IF_ERROR(CublasGemm(r.cublas(), ToCublas(trans_b), ToCublas(trans_a), n, m, k,
                                    &alpha, d_b, b_cols > 0 ? b_cols : 1, d_a,
                                    a_cols > 0 ? a_cols : 1, &beta, d_c, n));

  return CopyToHost(r.stream(), d_c, m, n, c, ldc);
}

template absl::Status GemmOnDevice<double>(CudaResources&, Trans, Trans, int, int, int, double,
                                           const double*, int64_t, const double*, int64_t, double,
                                           double*, int64_t);
template absl::Status GemmOnDevice<float>(CudaResources&, Trans, Trans, int, int, int, float,
                                          const float*, int64_t, const float*, int64_t, float,
                                          float*, int64_t);

absl::Status SyrkUpperOnDevice(CudaResources& r, int n, int k, double alpha, const double* a,
                               int64_t lda, double beta, double* c, int64_t ldc) {
  WorkspacePlan plan;
  const size_t a_at = plan.Add<double>(static_cast<size_t>(k) * n);
  const size_t c_at = plan.Add<double>(static_cast<size_t>(n) * n);
  absl::StatusOr<std::byte*> base = r.Workspace(plan.bytes());
  if (!base.ok()) return base.status();
  double* d_a = WorkspacePlan::At<double>(*base, a_at);
  double* d_c = WorkspacePlan::At<double>(*base, c_at);

  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), a, lda, k, n, d_a));
  // All of C goes over and back, so its strictly lower (unreferenced) triangle returns to the
  // caller bit for bit while cuBLAS writes only the triangle named below.
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), c, ldc, n, n, d_c));

  // The packed row-major A (k×n) is the column-major n×k matrix Aᵀ, so AᵀA is the no-transpose
  // SYRK of that view. Row-major upper triangle (i ≤ j) = column-major lower triangle.
  CUBLAS_RETURN_IF_ERROR(cublasDsyrk(r.cublas(), CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N, n, k, &alpha,
                                     d_a, n, &beta, d_c, n));

  return CopyToHost(r.stream(), d_c, n, n, c, ldc);
}

}  // namespace adaptd::kernels::gpu
