// Copies of row-major matrices between caller-owned host memory (any leading dimension) and
// packed device buffers (leading dimension = number of columns), queued on one stream.
// Thread safety: none of its own; callers hold the device's CudaResources::mu(). The host side
// may be pageable or pinned: callers synchronize the stream before handing host memory back.
#ifndef ADAPTD_KERNELS_CUDA_CUDA_STAGING_H_
#define ADAPTD_KERNELS_CUDA_CUDA_STAGING_H_

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "kernels/cuda/cuda_check.h"

namespace adaptd::kernels::gpu {

// host (rows×cols, leading dimension host_ld ≥ cols) → device (rows×cols, packed).
template <typename T>
absl::Status CopyToDevice(cudaStream_t stream, const T* host, int64_t host_ld, int64_t rows,
                          int64_t cols, T* device) {
  if (rows == 0 || cols == 0) return absl::OkStatus();
  const size_t row_bytes = static_cast<size_t>(cols) * sizeof(T);
  if (host_ld == cols || rows == 1) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(device, host, static_cast<size_t>(rows) * row_bytes,
                                         cudaMemcpyHostToDevice, stream));
  } else {
    CUDA_RETURN_IF_ERROR(
        cudaMemcpy2DAsync(device, row_bytes, host, static_cast<size_t>(host_ld) * sizeof(T),
                          row_bytes, static_cast<size_t>(rows), cudaMemcpyHostToDevice, stream));
  }
  return absl::OkStatus();
}

// device (rows×cols, packed) → host (rows×cols, leading dimension host_ld ≥ cols). Host entries
// between the end of a row and the next row's start are left as they are.
template <typename T>
absl::Status CopyToHost(cudaStream_t stream, const T* device, int64_t rows, int64_t cols, T* host,
                        int64_t host_ld) {
  if (rows == 0 || cols == 0) return absl::OkStatus();
  const size_t row_bytes = static_cast<size_t>(cols) * sizeof(T);
  if (host_ld == cols || rows == 1) {
    CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host, device, static_cast<size_t>(rows) * row_bytes,
                                         cudaMemcpyDeviceToHost, stream));
  } else {
    CUDA_RETURN_IF_ERROR(cudaMemcpy2DAsync(host, static_cast<size_t>(host_ld) * sizeof(T), device,
                                           row_bytes, row_bytes, static_cast<size_t>(rows),
                                           cudaMemcpyDeviceToHost, stream));
  }
  return absl::OkStatus();
}

}  // namespace adaptd::kernels::gpu

#endif  // ADAPTD_KERNELS_CUDA_CUDA_STAGING_H_
