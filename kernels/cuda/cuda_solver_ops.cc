// Symmetric eigendecomposition and Cholesky solve on cuSOLVER. See cuda_ops.h for the
// row-major ↔ column-major mapping: the row-major upper triangle the interface reads is the
// column-major lower triangle, hence CUBLAS_FILL_MODE_LOWER throughout.
#include <cusolverDn.h>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_ops.h"
#include "kernels/cuda/cuda_staging.h"

namespace adaptd::kernels::gpu {
namespace {

constexpr cublasFillMode_t kUpperRowMajor = CUBLAS_FILL_MODE_LOWER;

// dst (cols×rows, column-major, leading dimension cols) = transpose of src (rows×cols,
// column-major, leading dimension rows). dst and src must not overlap.
absl::Status Transpose(CudaResources& r, int rows, int cols, const double* src, double* dst)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu()) {
  const double one = 1.0;
  const double zero = 0.0;
  // cublasDgeam's documented in-place form (B = C, transb = N) supplies the unused B term.
  CUBLAS_RETURN_IF_ERROR(cublasDgeam(r.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, cols, rows, &one, src,
                                     rows, &zero, dst, cols, dst, cols));
  return absl::OkStatus();
}

// Waits for the stream and returns the LAPACK-style info values copied from the device.
absl::Status ReadInfo(CudaResources& r, const int* d_info, int count, int* info)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu()) {
  CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(info, d_info, sizeof(int) * count, cudaMemcpyDeviceToHost, r.stream()));
  return r.Synchronize();
}

}  // namespace

absl::Status SymmetricEigenOnDevice(CudaResources& r, int n, double* a, double* w) {
  const size_t nn = static_cast<size_t>(n) * n;
  WorkspacePlan plan;
  const size_t a_at = plan.Add<double>(nn);
  const size_t vectors_at = plan.Add<double>(nn);
  const size_t w_at = plan.Add<double>(n);
  const size_t info_at = plan.Add<int>(1);

  // The workspace size query takes the matrix pointers, so place the matrices first; the answer
  // depends only on n, so it survives the workspace growing (and moving) afterwards.
  absl::StatusOr<std::byte*> base = r.Workspace(plan.bytes());
  if (!base.ok()) return base.status();
  int lwork = 0;
  CUSOLVER_RETURN_IF_ERROR(cusolverDnDsyevd_bufferSize(
      r.cusolver(), CUSOLVER_EIG_MODE_VECTOR, kUpperRowMajor, n,
      WorkspacePlan::At<double>(*base, a_at), n, WorkspacePlan::At<double>(*base, w_at), &lwork));
  if (lwork < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("matrix of order ", n, " is too large for cusolverDnDsyevd"));
  }
  const size_t work_at = plan.Add<double>(static_cast<size_t>(lwork));
  base = r.Workspace(plan.bytes());
  if (!base.ok()) return base.status();
  double* d_a = WorkspacePlan::At<double>(*base, a_at);
  double* d_vectors = WorkspacePlan::At<double>(*base, vectors_at);
  double* d_w = WorkspacePlan::At<double>(*base, w_at);
  int* d_info = WorkspacePlan::At<int>(*base, info_at);
  double* d_work = WorkspacePlan::At<double>(*base, work_at);

  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), a, n, n, n, d_a));
  CUSOLVER_RETURN_IF_ERROR(cusolverDnDsyevd(r.cusolver(), CUSOLVER_EIG_MODE_VECTOR, kUpperRowMajor,
                                            n, d_a, n, d_w, d_work, lwork, d_info));
  int info = 0;
  CUDA_KERNELS_RETURN_IF_ERROR(ReadInfo(r, d_info, 1, &info));
  if (info != 0) {
    return absl::InternalError(absl::StrCat("cusolverDnDsyevd failed, info=", info));
  }

  // cuSOLVER leaves vector j in column j of the column-major d_a, i.e. in row j of its row-major
  // reading; the interface wants it in column j of the row-major result: one transpose.
  CUDA_KERNELS_RETURN_IF_ERROR(Transpose(r, n, n, d_a, d_vectors));
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToHost(r.stream(), d_vectors, n, n, a, n));
  return CopyToHost(r.stream(), d_w, 1, n, w, n);
}

absl::Status CholeskySolveOnDevice(CudaResources& r, int n, int m, double* a, double* b) {
  const size_t nm = static_cast<size_t>(n) * m;
  WorkspacePlan plan;
  const size_t a_at = plan.Add<double>(static_cast<size_t>(n) * n);
  const size_t b_at = plan.Add<double>(nm);
  const size_t x_at = plan.Add<double>(nm);
  const size_t info_at = plan.Add<int>(2);

  absl::StatusOr<std::byte*> base = r.Workspace(plan.bytes());
  if (!base.ok()) return base.status();
  int lwork = 0;
  CUSOLVER_RETURN_IF_ERROR(cusolverDnDpotrf_bufferSize(
      r.cusolver(), kUpperRowMajor, n, WorkspacePlan::At<double>(*base, a_at), n, &lwork));
  const size_t work_at = plan.Add<double>(static_cast<size_t>(lwork));
  base = r.Workspace(plan.bytes());
  if (!base.ok()) return base.status();
  double* d_a = WorkspacePlan::At<double>(*base, a_at);
  double* d_b = WorkspacePlan::At<double>(*base, b_at);
  double* d_x = WorkspacePlan::At<double>(*base, x_at);
  int* d_info = WorkspacePlan::At<int>(*base, info_at);
  double* d_work = WorkspacePlan::At<double>(*base, work_at);

  // Column-major A = L·Lᵀ with L lower; read back row-major, that factor is U = Lᵀ with A = UᵀU,
  // the same upper factor the CPU backend (LAPACK 'U', row-major) leaves in `a`.
  CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), a, n, n, n, d_a));
  CUSOLVER_RETURN_IF_ERROR(
      cusolverDnDpotrf(r.cusolver(), kUpperRowMajor, n, d_a, n, d_work, lwork, &d_info[0]));
  CUDA_RETURN_IF_ERROR(cudaMemsetAsync(&d_info[1], 0, sizeof(int), r.stream()));
  if (m > 0) {
    // B is row-major n×m, i.e. column-major m×n; potrs wants column-major n×m: transpose in,
    // solve, transpose out. Solving after a failed factorization is harmless (only wasted).
    CUDA_KERNELS_RETURN_IF_ERROR(CopyToDevice(r.stream(), b, m, n, m, d_b));
    CUDA_KERNELS_RETURN_IF_ERROR(Transpose(r, m, n, d_b, d_x));
    CUSOLVER_RETURN_IF_ERROR(
        cusolverDnDpotrs(r.cusolver(), kUpperRowMajor, n, m, d_a, n, d_x, n, &d_info[1]));
    CUDA_KERNELS_RETURN_IF_ERROR(Transpose(r, n, m, d_x, d_b));
  }
  int info[2] = {0, 0};
  CUDA_KERNELS_RETURN_IF_ERROR(ReadInfo(r, d_info, 2, info));
  if (info[0] > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("matrix is not positive definite (leading minor ", info[0], " of ", n, ")"));
  }
  if (info[0] < 0)
    return absl::InternalError(absl::StrCat("cusolverDnDpotrf failed, info=", info[0]));
  if (info[1] != 0)
    return absl::InternalError(absl::StrCat("cusolverDnDpotrs failed, info=", info[1]));

  CUDA_KERNELS_RETURN_IF_ERROR(CopyToHost(r.stream(), d_a, n, n, a, n));
  return CopyToHost(r.stream(), d_b, n, m, b, m);
}

}  // namespace adaptd::kernels::gpu
