// MakeCudaBackend for builds without CUDA (ADAPTD_ENABLE_CUDA=OFF).
#include "kernels/backend.h"

namespace adaptd::kernels {

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int) {
  return absl::UnavailableError("this adaptd was built without CUDA (ADAPTD_ENABLE_CUDA=OFF)");
}

}  // namespace adaptd::kernels
