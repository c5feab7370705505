// The one checking facility for CUDA runtime, cuBLAS and cuSOLVER calls under kernels/cuda/.
// Each macro evaluates a call once and, on failure, returns from the enclosing function (which
// must return absl::Status or absl::StatusOr<T>) a status that carries the statement text, the
// file and line, and the library's error name. Codes follow their documented meaning:
// allocation failures are ResourceExhausted, a missing device or driver is Unavailable, anything
// else is Internal (arguments are validated before any call, so a rejected call is our bug).
// Thread safety: stateless; usable from any thread.
#ifndef ADAPTD_KERNELS_CUDA_CUDA_CHECK_H_
#define ADAPTD_KERNELS_CUDA_CUDA_CHECK_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include "absl/status/status.h"

namespace adaptd::kernels::gpu {

absl::Status CudaErrorToStatus(cudaError_t error, const char* statement, const char* file,
                               int line);
absl::Status CublasErrorToStatus(cublasStatus_t status, const char* statement, const char* file,
                                 int line);
absl::Status CusolverErrorToStatus(cusolverStatus_t status, const char* statement, const char* file,
                                   int line);

// cuSOLVER has no status-to-name function of its own.
const char* CusolverStatusName(cusolverStatus_t status);

}  // namespace adaptd::kernels::gpu

#define CUDA_RETURN_IF_ERROR(statement)                                                          \
  do {                                                                                           \
    const cudaError_t adaptd_cuda_error_ = (statement);                                          \
    if (adaptd_cuda_error_ != cudaSuccess) {                                                     \
      return ::adaptd::kernels::gpu::CudaErrorToStatus(adaptd_cuda_error_, #statement, __FILE__, \
                                                       __LINE__);                                \
    }                                                                                            \
  } while (0)

#define CUBLAS_RETURN_IF_ERROR(statement)                                                   \
  do {                                                                                      \
    const cublasStatus_t adaptd_cublas_status_ = (statement);                               \
    if (adaptd_cublas_status_ != CUBLAS_STATUS_SUCCESS) {                                   \
      return ::adaptd::kernels::gpu::CublasErrorToStatus(adaptd_cublas_status_, #statement, \
                                                         __FILE__, __LINE__);               \
    }                                                                                       \
  } while (0)

#define CUSOLVER_RETURN_IF_ERROR(statement)                                                     \
  do {                                                                                          \
    const cusolverStatus_t adaptd_cusolver_status_ = (statement);                               \
    if (adaptd_cusolver_status_ != CUSOLVER_STATUS_SUCCESS) {                                   \
      return ::adaptd::kernels::gpu::CusolverErrorToStatus(adaptd_cusolver_status_, #statement, \
                                                           __FILE__, __LINE__);                 \
    }                                                                                           \
  } while (0)

// For absl::Status results inside kernels/cuda/ (this abseil has no status macros).
#define CUDA_KERNELS_RETURN_IF_ERROR(expr)                           \
  do {                                                               \
    const ::absl::Status adaptd_kernels_status_ = (expr);            \
    if (!adaptd_kernels_status_.ok()) return adaptd_kernels_status_; \
  } while (0)

#endif  // ADAPTD_KERNELS_CUDA_CUDA_CHECK_H_
