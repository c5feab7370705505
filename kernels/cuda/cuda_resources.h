// Per-device CUDA state: the device id, one stream, a cuBLAS and a cuSOLVER handle bound to that
// stream, and one growable device workspace that each operation carves into its matrices.
//
// Ownership: one CudaResources per device per process, shared (std::shared_ptr) by every CUDA
// backend on that device and freed with the last of them.
// Thread safety: mu() serializes all work on the device. An operation holds it from staging its
// inputs to the final stream synchronize, so concurrent callers run one after another on the
// device (no overlap between callers for now). Everything except device() and mu() requires it.
// Layout: the workspace is raw bytes; WorkspacePlan below aligns each region to 256 bytes.
#ifndef ADAPTD_KERNELS_CUDA_CUDA_RESOURCES_H_
#define ADAPTD_KERNELS_CUDA_CUDA_RESOURCES_H_

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <cstddef>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace adaptd::kernels::gpu {

class CudaResources {
 public:
  // The shared resources of `device` (an index below cudaGetDeviceCount), created on first use.
  static absl::StatusOr<std::shared_ptr<CudaResources>> ForDevice(int device);

  CudaResources(const CudaResources&) = delete;
  CudaResources& operator=(const CudaResources&) = delete;
  ~CudaResources();

  int device() const { return device_; }
  absl::Mutex& mu() ABSL_LOCK_RETURNED(mu_) { return mu_; }

  cudaStream_t stream() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stream_; }
  cublasHandle_t cublas() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return cublas_; }
  cusolverDnHandle_t cusolver() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return cusolver_; }

  // At least `bytes` of device memory, valid until the next call. Growing it waits for the
  // stream and drops the old contents.
  absl::StatusOr<std::byte*> Workspace(size_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Status Synchronize() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

 private:
  explicit CudaResources(int device) : device_(device) {}
  absl::Status Init() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int device_;
  absl::Mutex mu_;
  cudaStream_t stream_ ABSL_GUARDED_BY(mu_) = nullptr;
  cublasHandle_t cublas_ ABSL_GUARDED_BY(mu_) = nullptr;
  cusolverDnHandle_t cusolver_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::byte* workspace_ ABSL_GUARDED_BY(mu_) = nullptr;
  size_t workspace_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

// Makes a device current on the calling thread for the scope and restores the previous one, so
// that the backend does not change which device the caller's own CUDA code runs on.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  ~ScopedDevice();

  // Not OK when the device could not be made current; then nothing is restored.
  const absl::Status& status() const { return status_; }

 private:
  absl::Status Enter(int device);

  int previous_ = -1;
  absl::Status status_;
};

// Lays out typed regions in one workspace: record each region with Add<T>(count), ask the
// workspace for bytes(), then turn each offset into a pointer with At<T>(base, offset).
class WorkspacePlan {
 public:
  static constexpr size_t kAlignment = 256;

  template <typename T>
  size_t Add(size_t count) {
    const size_t offset = bytes_;
    bytes_ += (count * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
    return offset;
  }
  size_t bytes() const { return bytes_; }

  template <typename T>
  static T* At(std::byte* base, size_t offset) {
    return reinterpret_cast<T*>(base + offset);
  }

 private:
  size_t bytes_ = 0;
};

}  // namespace adaptd::kernels::gpu

#endif  // ADAPTD_KERNELS_CUDA_CUDA_RESOURCES_H_
