// OrtRuntime: ONNX Runtime's shared library, opened with dlopen at run time so that adaptd
// builds and runs without it (docs/ONNX.md). Load resolves the library's path, checks that it
// serves API version ort::kApiVersion, fills the declared slots (ort_api.h) and creates the
// process's one OrtEnv. A loaded runtime lives until the process ends (never unloaded) and is
// safe to use from any thread; Load itself is thread-safe.
#ifndef ADAPTD_SERVER_ENCODERS_ONNX_ORT_RUNTIME_H_
#define ADAPTD_SERVER_ENCODERS_ONNX_ORT_RUNTIME_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/encoders/onnx/ort_api.h"

namespace adaptd {

// The environment variable naming the library when no path is given.
inline constexpr const char* kOnnxRuntimeLibraryEnv = "ADAPTD_ONNXRUNTIME_LIBRARY";
// What the dynamic linker is asked for when neither a path nor the variable names one.
inline constexpr const char* kOnnxRuntimeDefaultLibrary = "libonnxruntime.so.1";

class OrtRuntime {
 public:
  // `path` if not empty, else $ADAPTD_ONNXRUNTIME_LIBRARY if set and not empty, else
  // kOnnxRuntimeDefaultLibrary.
  static std::string ResolvePath(const std::string& path);

  // Opens the library at ResolvePath(path) (once per resolved path). A library that cannot be
  // opened, lacks OrtGetApiBase or does not serve API version 1 is FailedPrecondition in one
  // line that names the path and says how to get the runtime.
  static absl::StatusOr<const OrtRuntime*> Load(const std::string& path);

  const ort::Api& api() const { return api_; }
  ort::OrtEnv* env() const { return env_; }
  // The runtime's own version string, e.g. "1.32.0".
  const std::string& version() const { return version_; }
  const std::string& library() const { return library_; }

  // OkStatus for a null status; otherwise `code` with "<context>: <runtime's message>", and the
  // status released.
  absl::Status Check(ort::OrtStatus* status, absl::string_view context,
                     absl::StatusCode code = absl::StatusCode::kInternal) const;

 private:
  OrtRuntime() = default;

  ort::Api api_;
  ort::OrtEnv* env_ = nullptr;
  std::string version_;
  std::string library_;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_ONNX_ORT_RUNTIME_H_
