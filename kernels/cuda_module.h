// The entry point of the CUDA backend module (libadaptd_cuda.so, built from kernels/cuda): its
// one exported symbol, looked up with dlsym by cuda_module_loader.cc. No CUDA header here.
#ifndef ADAPTD_KERNELS_CUDA_MODULE_H_
#define ADAPTD_KERNELS_CUDA_MODULE_H_

#include <memory>

#include "absl/status/statusor.h"
#include "kernels/backend.h"

namespace adaptd::kernels {

// Sets *out to MakeCudaBackend(device) as the module implements it.
using CudaModuleEntry = void (*)(int device, absl::StatusOr<std::unique_ptr<Backend>>* out);
inline constexpr char kCudaModuleEntryName[] = "AdaptdMakeCudaBackend";

}  // namespace adaptd::kernels

#endif  // ADAPTD_KERNELS_CUDA_MODULE_H_
