// The device side of each CUDA backend operation: stage the caller's host matrices into the
// workspace, run cuBLAS / cuSOLVER on the resources' stream, queue the copies back.
//
// Preconditions (checked by Backend's public methods and CudaBackend::SupportsImpl, not here):
// dimensions are positive where the comment says so and fit in int, leading dimensions are at
// least the row length (or the matrix has one row), the caller holds r.mu() with r.device()
// current. Results are complete only after r.Synchronize().
// Layout: the arguments mean exactly what they mean in kernels/backend.h (row-major host data).
// cuBLAS and cuSOLVER are column-major: a row-major m×n matrix with leading dimension ld is,
// byte for byte, the column-major n×m matrix (its transpose) with the same ld. Each operation
// below is written in terms of that transpose.
#ifndef ADAPTD_KERNELS_CUDA_CUDA_OPS_H_
#define ADAPTD_KERNELS_CUDA_CUDA_OPS_H_

#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "kernels/backend.h"
#include "kernels/cuda/cuda_resources.h"

namespace adaptd::kernels::gpu {

// m, n ≥ 1, k ≥ 0. T is float or double.
template <typename T>
absl::Status GemmOnDevice(CudaResources& r, Trans trans_a, Trans trans_b, int m, int n, int k,
                          T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta, T* c,
                          int64_t ldc) ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu());

// n ≥ 1, k ≥ 0.
absl::Status SyrkUpperOnDevice(CudaResources& r, int n, int k, double alpha, const double* a,
                               int64_t lda, double beta, double* c, int64_t ldc)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu());

// n ≥ 1. Synchronizes itself (it must read cuSOLVER's info); `a` and `w` are written only on
// success.
absl::Status SymmetricEigenOnDevice(CudaResources& r, int n, double* a, double* w)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu());

// n ≥ 1, m ≥ 0. Synchronizes itself; `a` and `b` are written only on success.
absl::Status CholeskySolveOnDevice(CudaResources& r, int n, int m, double* a, double* b)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu());

// m, n ≥ 1 (both op(A) dimensions). y is read only when beta ≠ 0.
template <typename T>
absl::Status GemvOnDevice(CudaResources& r, Trans trans, int m, int n, T alpha, const T* a,
                          int64_t lda, const T* x, T beta, T* y)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu());

// n ≥ 1, k ≥ 1: A converted to float64 on the device, then DSYRK.
absl::Status SyrkUpperAccumulateOnDevice(CudaResources& r, int n, int k, double alpha,
                                         const float* a, int64_t lda, double beta, double* c,
                                         int64_t ldc) ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu());

// rows ≥ 1, 1 ≤ k ≤ kCudaTopKMaxK, k ≤ n.
absl::Status TopKOnDevice(CudaResources& r, int rows, int n, const float* x, int64_t ldx, int k,
                          int32_t* idx, float* val) ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu());

// rows, n, dst_count ≥ 1; indices already checked against dst_count.
absl::Status RowScatterAddOnDevice(CudaResources& r, int rows, int n, const int64_t* dst_rows,
                                   float alpha, const float* src, int64_t lds, float* dst,
                                   int64_t ldd, int dst_count)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu());

// Groups checked (op_checks.h) and within int range; empty groups are skipped.
absl::Status GroupedGemmOnDevice(CudaResources& r, std::span<const GemmGroup> groups)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu());

// Query checked; count ≥ 1, k ≤ kCudaTopKMaxK.
absl::Status ProductKeyScoresOnDevice(CudaResources& r, const ProductKeyQuery& query)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu());

// Chunk checked (op_checks.h); m ≥ 1, c ≤ kFalconMaxSteps (falcon_chunk_kernels.h), d, m, h + c
// and the window pair count within int. Synchronizes itself.
template <typename T>
absl::Status FalconChunkStepOnDevice(CudaResources& r, const FalconChunk<T>& chunk)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(r.mu());

}  // namespace adaptd::kernels::gpu

#endif  // ADAPTD_KERNELS_CUDA_CUDA_OPS_H_
