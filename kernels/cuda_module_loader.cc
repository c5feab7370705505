// MakeCudaBackend for builds with CUDA: loads the CUDA backend module (libadaptd_cuda.so) with
// dlopen the first time a CUDA device is asked for, and asks it for the backend.
//
// Why a module and not a link: cuBLAS, cuBLASLt and cuSOLVER carry about 150 KiB of
// thread-local storage. glibc carves the TLS of every library loaded at start-up out of each new
// thread's stack, so linked into adaptd they make pthread_create fail (EINVAL) for any thread
// created with a small fixed stack: civetweb's 100 KiB threads behind the Prometheus exposer, even
// with --device cpu. A library loaded later with dlopen has its TLS allocated on first use instead.
#include <dlfcn.h>

#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "kernels/backend.h"
#include "kernels/cuda_module.h"

namespace adaptd::kernels {
namespace {

struct CudaModule {
  CudaModuleEntry entry = nullptr;
  std::string error;  // Why entry is null.
};

std::string DlError() {
  const char* error = dlerror();
  return error != nullptr ? error : "unknown error";
}

// Where the module may be, best first: where this build put it; the same place relative to a
// build tree that was moved (ADAPTD_CUDA_MODULE_RELATIVE_PATH under an ancestor of the running
// binary's directory); then the dynamic linker's own search (LD_LIBRARY_PATH, the cache, the
// system directories) for an installed one.
std::vector<std::string> Candidates() {
  std::vector<std::string> paths = {ADAPTD_CUDA_MODULE_PATH};
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (!error) {
    for (std::filesystem::path dir = self.parent_path(); !dir.empty(); dir = dir.parent_path()) {
      const std::filesystem::path candidate = dir / ADAPTD_CUDA_MODULE_RELATIVE_PATH;
      if (std::filesystem::exists(candidate, error)) paths.push_back(candidate.string());
      if (dir == dir.root_path()) break;
    }
  }
  paths.push_back(ADAPTD_CUDA_MODULE_NAME);
  return paths;
}

// Never unloaded: backends it made may live until exit.
CudaModule Load() {
  CudaModule module;
  std::string first_error;  // The first failure of a module that exists says the most.
  for (const std::string& path : Candidates()) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const std::string error = DlError();
      std::error_code exists_error;
      if (first_error.empty() &&
          (path == ADAPTD_CUDA_MODULE_NAME || std::filesystem::exists(path, exists_error))) {
        first_error = error;
      }
      continue;
    }
    module.entry = reinterpret_cast<CudaModuleEntry>(dlsym(handle, kCudaModuleEntryName));
    if (module.entry == nullptr) {
      module.error = absl::StrCat("the CUDA backend ", path, " has no entry point: ", DlError());
    }
    return module;
  }
  module.error = absl::StrCat("cannot load the CUDA backend: ", first_error);
  return module;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> MakeCudaBackend(int device) {
  static const CudaModule* const module = new CudaModule(Load());
  if (module->entry == nullptr) return absl::UnavailableError(module->error);
  absl::StatusOr<std::unique_ptr<Backend>> backend =
      absl::InternalError("the CUDA backend module did not answer");
  module->entry(device, &backend);
  return backend;
}

}  // namespace adaptd::kernels
