// The CUDA backend module's entry point (kernels/cuda_module.h): MakeCudaBackend behind a C name,
// the only symbol libadaptd_cuda.so exports.
#include "kernels/cuda_module.h"

#include <memory>
#include <type_traits>

#include "absl/status/statusor.h"
#include "kernels/backend.h"

extern "C" __attribute__((visibility("default"))) void AdaptdMakeCudaBackend(
    int device, absl::StatusOr<std::unique_ptr<adaptd::kernels::Backend>>* out) {
  *out = adaptd::kernels::MakeCudaBackend(device);
}

// The loader calls the entry through CudaModuleEntry: keep the two in step.
static_assert(std::is_same_v<decltype(&AdaptdMakeCudaBackend), adaptd::kernels::CudaModuleEntry>);
