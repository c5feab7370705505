// OrtRuntime: ONNX Runtime's shared library, opened with dlopen at run time so that adaptd
// builds and runs without it (docs/ONNX.md). Load resolves the library's path, checks that it
// serves API version ort::kApiVersion, fills the declared slots (ort_api.h) and creates the
// process's one OrtEnv, with a shared intra-op thread pool when asked for and the runtime serves
// API version 5. A loaded runtime lives until the process ends (never unloaded) and is safe to
// use from any thread; Load itself is thread-safe.
#ifndef ADAPTD_SERVER_ENCODERS_ONNX_ORT_RUNTIME_H_
#define ADAPTD_SERVER_ENCODERS_ONNX_ORT_RUNTIME_H_

#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/config/defaults.h"
#include "server/encoders/onnx/ort_api.h"

namespace adaptd {

// The environment variable naming the library when no path is given.
inline constexpr const char* kOnnxRuntimeLibraryEnv = "ADAPTD_ONNXRUNTIME_LIBRARY";
// What the dynamic linker is asked for when neither a path nor the variable names one.
inline constexpr const char* kOnnxRuntimeDefaultLibrary = defaults::kOnnxRuntimeLibrary;

class OrtRuntime {
 public:
  // `path` if not empty, else $ADAPTD_ONNXRUNTIME_LIBRARY if set and not empty, else
  // kOnnxRuntimeDefaultLibrary.
  static std::string ResolvePath(const std::string& path);

  // Opens the library at ResolvePath(path) (once per resolved path). A library that cannot be
  // opened, lacks OrtGetApiBase or does not serve API version 1 is FailedPrecondition in one
  // line that names the path and says how to get the runtime. `global_threads` > 0 asks for an
  // environment with a shared intra-op pool of that many threads (spinning off), which sessions
  // join with OrtModelOptions::global_pool; it needs API version 5, and a runtime without it
  // gets a plain environment (global_threads() 0). The first Load of a path decides: a later one
  // returns the same runtime whatever it asks.
  static absl::StatusOr<const OrtRuntime*> Load(const std::string& path, int global_threads = 0);

  const ort::Api& api() const { return api_; }
  ort::OrtEnv* env() const { return env_; }
  // The runtime's own version string, e.g. "1.32.0".
  const std::string& version() const { return version_; }
  const std::string& library() const { return library_; }
  // The shared pool's intra-op threads; 0 when the environment has none.
  int global_threads() const { return global_threads_; }
  // The file the dynamic linker opened (library() may be a bare name it searched for).
  const std::string& file() const { return file_; }

  // The CUDA execution provider's slots (ort_api.h, API version 11), filled on the first call.
  // FailedPrecondition in one line saying why CUDA cannot run: a runtime older than version 11,
  // a CPU-only runtime (it lists no CUDAExecutionProvider), or no provider library beside the
  // file loaded (CheckCudaProvider).
  absl::StatusOr<const ort::CudaApi*> Cuda() const;
  // The execution providers the library was built with (GetAvailableProviders), e.g.
  // {"CPUExecutionProvider"}; empty when the runtime predates API version 11.
  std::vector<std::string> providers() const;
  // The CUDA slots as Cuda() filled them: also for a runtime it refused for lacking CUDA (its
  // slots answer errors), null for one older than version 11. Call Cuda() first.
  const ort::CudaApi& cuda_api() const { return cuda_api_; }

  // Whether a runtime at `file` (version `version`) listing `providers` can run CUDA sessions:
  // it lists kCudaProviderName and kCudaProviderLibrary lies in the same folder as `file`.
  static absl::Status CheckCudaProvider(const std::string& file, const std::string& version,
                                        const std::vector<std::string>& providers);

  // OkStatus for a null status; otherwise `code` with "<context>: <runtime's message>", and the
  // status released.
  absl::Status Check(ort::OrtStatus* status, absl::string_view context,
                     absl::StatusCode code = absl::StatusCode::kInternal) const;

 private:
  OrtRuntime() = default;
  // Creates env_ with a shared intra-op pool of `threads` (the global pool's slots filled).
  absl::Status CreatePooledEnv(int threads);

  ort::Api api_;
  ort::OrtEnv* env_ = nullptr;
  std::string version_;
  std::string library_;
  int global_threads_ = 0;
  std::string file_;
  const void* (*get_api_)(uint32_t) noexcept = nullptr;

  // Filled once by Cuda().
  mutable std::once_flag cuda_once_;
  mutable ort::CudaApi cuda_api_;
  mutable absl::Status cuda_status_;
  mutable std::vector<std::string> providers_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_ONNX_ORT_RUNTIME_H_
