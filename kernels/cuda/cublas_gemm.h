// cuBLAS GEMM by element type, and the project's Trans flag as a cuBLAS operation. Shared by the
// CUDA ops that multiply on cuBLAS (cuda_blas_ops.cc, falcon_chunk_ops.cc).
#ifndef ADAPTD_KERNELS_CUDA_CUBLAS_GEMM_H_
#define ADAPTD_KERNELS_CUDA_CUBLAS_GEMM_H_

#include <cublas_v2.h>

#include "kernels/cuda/cuda_ops.h"

namespace adaptd::kernels::gpu {

inline cublasOperation_t ToCublas(Trans t) { return t == Trans::kYes ? CUBLAS_OP_T : CUBLAS_OP_N; }

inline cublasStatus_t CublasGemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                                 int m, int n, int k, const double* alpha, const double* a, int lda,
                                 const double* b, int ldb, const double* beta, double* c, int ldc) {
  return cublasDgemm(handle, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

inline cublasStatus_t CublasGemm(cublasHandle_t handle, cublasOperation_t ta, cublasOperation_t tb,
                                 int m, int n, int k, const float* alpha, const float* a, int lda,
                                 const float* b, int ldb, const float* beta, float* c, int ldc) {
  return cublasSgemm(handle, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace adaptd::kernels::gpu

#endif  // ADAPTD_KERNELS_CUDA_CUBLAS_GEMM_H_
