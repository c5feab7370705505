#include "kernels/cuda/cuda_resources.h"

#include <algorithm>
#include <map>

#include "absl/base/attributes.h"
#include "absl/base/const_init.h"
#include "kernels/cuda/cuda_check.h"

namespace adaptd::kernels::gpu {
namespace {

// Workspace sizes are rounded up to this, so that small changes in shape reuse the allocation.
constexpr size_t kWorkspaceGranule = size_t{1} << 20;

ABSL_CONST_INIT absl::Mutex registry_mu(absl::kConstInit);

// Weak references: the resources die with the last backend that uses them.
std::map<int, std::weak_ptr<CudaResources>>& Registry() ABSL_EXCLUSIVE_LOCKS_REQUIRED(registry_mu) {
  static auto* registry = new std::map<int, std::weak_ptr<CudaResources>>();
  return *registry;
}

size_t RoundUp(size_t bytes) {
  return (bytes + kWorkspaceGranule - 1) / kWorkspaceGranule * kWorkspaceGranule;
}

}  // namespace

absl::StatusOr<std::shared_ptr<CudaResources>> CudaResources::ForDevice(int device) {
  absl::MutexLock registry_lock(&registry_mu);
  std::weak_ptr<CudaResources>& slot = Registry()[device];
  if (std::shared_ptr<CudaResources> existing = slot.lock()) return existing;
  std::shared_ptr<CudaResources> created(new CudaResources(device));
  {
    absl::MutexLock lock(&created->mu_);
    CUDA_KERNELS_RETURN_IF_ERROR(created->Init());
  }
  slot = created;
  return created;
}

absl::Status CudaResources::Init() {
  ScopedDevice scope(device_);
  CUDA_KERNELS_RETURN_IF_ERROR(scope.status());
  CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  CUBLAS_RETURN_IF_ERROR(cublasCreate(&cublas_));
  CUBLAS_RETURN_IF_ERROR(cublasSetStream(cublas_, stream_));
  // No TF32 or other reduced-precision tensor-core paths: float results must match the CPU's.
  CUBLAS_RETURN_IF_ERROR(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
  CUSOLVER_RETURN_IF_ERROR(cusolverDnCreate(&cusolver_));
  CUSOLVER_RETURN_IF_ERROR(cusolverDnSetStream(cusolver_, stream_));
  return absl::OkStatus();
}

CudaResources::~CudaResources() {
  // Errors cannot be reported from here and at process exit the runtime may already be gone
  // (cudaErrorCudartUnloading), so results are deliberately ignored.
  absl::MutexLock lock(&mu_);
  ScopedDevice scope(device_);
  if (!scope.status().ok()) return;
  if (stream_ != nullptr) (void)cudaStreamSynchronize(stream_);
  if (cusolver_ != nullptr) (void)cusolverDnDestroy(cusolver_);
  if (cublas_ != nullptr) (void)cublasDestroy(cublas_);
  if (workspace_ != nullptr) (void)cudaFree(workspace_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

absl::StatusOr<std::byte*> CudaResources::Workspace(size_t bytes) {
  if (bytes <= workspace_bytes_) return workspace_;
  CUDA_KERNELS_RETURN_IF_ERROR(Synchronize());
  const size_t previous_bytes = workspace_bytes_;
  if (workspace_ != nullptr) {
    CUDA_RETURN_IF_ERROR(cudaFree(workspace_));
    workspace_ = nullptr;
    workspace_bytes_ = 0;
  }
  // Grow geometrically when there is room, so that a slowly growing shape does not reallocate
  // every call; fall back to the exact size when the device is nearly full.
  const size_t wanted = RoundUp(std::max(bytes, previous_bytes + previous_bytes / 2));
  void* memory = nullptr;
  if (cudaMalloc(&memory, wanted) == cudaSuccess) {
    workspace_bytes_ = wanted;
  } else {
    (void)cudaGetLastError();  // Clears the failed allocation before retrying.
    CUDA_RETURN_IF_ERROR(cudaMalloc(&memory, RoundUp(bytes)));
    workspace_bytes_ = RoundUp(bytes);
  }
  workspace_ = static_cast<std::byte*>(memory);
  return workspace_;
}

absl::Status CudaResources::Synchronize() {
  CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
  return absl::OkStatus();
}

ScopedDevice::ScopedDevice(int device) : status_(Enter(device)) {}

absl::Status ScopedDevice::Enter(int device) {
  int current = -1;
  CUDA_RETURN_IF_ERROR(cudaGetDevice(&current));
  if (current != device) {
    CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    previous_ = current;
  }
  return absl::OkStatus();
}

ScopedDevice::~ScopedDevice() {
  if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

}  // namespace adaptd::kernels::gpu
