#include "kernels/cuda/cuda_check.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace adaptd::kernels::gpu {
namespace {

std::string Describe(const char* statement, const char* file, int line, const char* library,
                     const char* name, const std::string& detail) {
  return absl::StrCat(library, " call `", statement, "` failed at ", file, ":", line, ": ", name,
                      " (", detail, ")");
}

}  // namespace

absl::Status CudaErrorToStatus(cudaError_t error, const char* statement, const char* file,
                               int line) {
  const std::string message =
      Describe(statement, file, line, "CUDA", cudaGetErrorName(error), cudaGetErrorString(error));
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(message);
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::Status CublasErrorToStatus(cublasStatus_t status, const char* statement, const char* file,
                                 int line) {
  const std::string message = Describe(statement, file, line, "cuBLAS", cublasGetStatusName(status),
                                       cublasGetStatusString(status));
  if (status == CUBLAS_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

absl::Status CusolverErrorToStatus(cusolverStatus_t status, const char* statement, const char* file,
                                   int line) {
  const std::string message =
      Describe(statement, file, line, "cuSOLVER", CusolverStatusName(status),
               absl::StrCat("status ", static_cast<int>(status)));
  if (status == CUSOLVER_STATUS_ALLOC_FAILED) return absl::ResourceExhaustedError(message);
  return absl::InternalError(message);
}

const char* CusolverStatusName(cusolverStatus_t status) {
  switch (status) {
    case CUSOLVER_STATUS_SUCCESS:
      return "CUSOLVER_STATUS_SUCCESS";
    case CUSOLVER_STATUS_NOT_INITIALIZED:
      return "CUSOLVER_STATUS_NOT_INITIALIZED";
    case CUSOLVER_STATUS_ALLOC_FAILED:
      return "CUSOLVER_STATUS_ALLOC_FAILED";
    case CUSOLVER_STATUS_INVALID_VALUE:
      return "CUSOLVER_STATUS_INVALID_VALUE";
    case CUSOLVER_STATUS_ARCH_MISMATCH:
      return "CUSOLVER_STATUS_ARCH_MISMATCH";
    case CUSOLVER_STATUS_MAPPING_ERROR:
      return "CUSOLVER_STATUS_MAPPING_ERROR";
    case CUSOLVER_STATUS_EXECUTION_FAILED:
      return "CUSOLVER_STATUS_EXECUTION_FAILED";
    case CUSOLVER_STATUS_INTERNAL_ERROR:
      return "CUSOLVER_STATUS_INTERNAL_ERROR";
    case CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED:
      return "CUSOLVER_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
    case CUSOLVER_STATUS_NOT_SUPPORTED:
      return "CUSOLVER_STATUS_NOT_SUPPORTED";
    case CUSOLVER_STATUS_ZERO_PIVOT:
      return "CUSOLVER_STATUS_ZERO_PIVOT";
    case CUSOLVER_STATUS_INVALID_LICENSE:
      return "CUSOLVER_STATUS_INVALID_LICENSE";
    case CUSOLVER_STATUS_INVALID_WORKSPACE:
      return "CUSOLVER_STATUS_INVALID_WORKSPACE";
    default:
      return "unknown cusolverStatus_t";
  }
}

}  // namespace adaptd::kernels::gpu
