#include "server/encoders/onnx/ort_runtime.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"

namespace adaptd {
namespace {

std::string HowToGet(const std::string& path, absl::string_view why) {
  return absl::StrCat(
      "ONNX Runtime's library '", path, "' ", why,
      "; get it from the PyPI wheel onnxruntime (pip download onnxruntime --no-deps, unzip, "
      "onnxruntime/capi/libonnxruntime.so.*; bash .ci/dev build puts it in build/onnxruntime/) "
      "and name it with ",
      kOnnxRuntimeLibraryEnv);
}

// One line: dlerror's message may end with a newline on some systems.
std::string OneLine(const char* text) {
  std::string line = text == nullptr ? "unknown error" : text;
  for (char& c : line) {
    if (c == '\n') c = ' ';
  }
  return line;
}

// Fills `api` from the runtime's table; false when a declared slot is empty.
bool FillSlots(const void* table, ort::Api* api, std::string* missing) {
  const auto* slots = static_cast<void* const*>(table);
#define ADAPTD_ORT_FILL(name, slot, ...)                                         \
  static_assert(slot <= ort::kLastSlotOfVersion1, #name " is not in version 1"); \
  api->name = reinterpret_cast<decltype(api->name)>(slots[slot]);                \
  if (api->name == nullptr) {                                                    \
    *missing = #name;                                                            \
    return false;                                                                \
  }
  ADAPTD_ORT_SLOTS(ADAPTD_ORT_FILL)
#undef ADAPTD_ORT_FILL
  return true;
}

// Fills the global pool's slots from a version-5 table; false (and none filled) when one is
// empty.
bool FillGlobalPoolSlots(const void* table, ort::Api* api) {
  const auto* slots = static_cast<void* const*>(table);
#define ADAPTD_ORT_CHECK(name, slot, ...)                                        \
  static_assert(slot <= ort::kLastSlotOfVersion5, #name " is not in version 5"); \
  if (slots[slot] == nullptr) return false;
  ADAPTD_ORT_GLOBAL_POOL_SLOTS(ADAPTD_ORT_CHECK)
#undef ADAPTD_ORT_CHECK
#define ADAPTD_ORT_FILL(name, slot, ...) \
  api->name = reinterpret_cast<decltype(api->name)>(slots[slot]);
  ADAPTD_ORT_GLOBAL_POOL_SLOTS(ADAPTD_ORT_FILL)
#undef ADAPTD_ORT_FILL
  return true;
}

}  // namespace

std::string OrtRuntime::ResolvePath(const std::string& path) {
  if (!path.empty()) return path;
  const char* env = std::getenv(kOnnxRuntimeLibraryEnv);
  if (env != nullptr && env[0] != '\0') return env;
  return kOnnxRuntimeDefaultLibrary;
}

absl::StatusOr<const OrtRuntime*> OrtRuntime::Load(const std::string& path, int global_threads) {
  static std::mutex mu;
  static auto* loaded = new std::map<std::string, std::unique_ptr<OrtRuntime>>();
  const std::string resolved = ResolvePath(path);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = loaded->find(resolved); it != loaded->end()) return it->second.get();

  void* handle = dlopen(resolved.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    return absl::FailedPreconditionError(
        HowToGet(resolved, absl::StrCat("could not be opened (", OneLine(dlerror()), ")")));
  }
  auto get_base = reinterpret_cast<ort::GetApiBaseFn>(dlsym(handle, "OrtGetApiBase"));
  const ort::OrtApiBase* base = get_base == nullptr ? nullptr : get_base();
  if (base == nullptr) {
    dlclose(handle);
    return absl::FailedPreconditionError(HowToGet(resolved, "has no OrtGetApiBase"));
  }
  auto runtime = std::unique_ptr<OrtRuntime>(new OrtRuntime());
  runtime->library_ = resolved;
  runtime->version_ = base->GetVersionString();
  const void* table = base->GetApi(ort::kApiVersion);
  std::string missing;
  if (table == nullptr || !FillSlots(table, &runtime->api_, &missing)) {
    // The library stays open: a runtime that answered may still hold threads.
    return absl::FailedPreconditionError(HowToGet(
        resolved, absl::StrCat("(version ", runtime->version_, ") does not serve C API version ",
                               ort::kApiVersion, missing.empty() ? "" : " slot ", missing)));
  }
  const void* table5 = global_threads > 0 ? base->GetApi(ort::kGlobalPoolApiVersion) : nullptr;
  if (table5 != nullptr && FillGlobalPoolSlots(table5, &runtime->api_)) {
    if (auto s = runtime->CreatePooledEnv(global_threads); !s.ok()) return s;
  } else {
    absl::Status env =
        runtime->Check(runtime->api_.CreateEnv(ort::kLoggingLevelError, "adaptd", &runtime->env_),
                       absl::StrCat("ONNX Runtime '", resolved, "': CreateEnv"),
                       absl::StatusCode::kFailedPrecondition);
    if (!env.ok()) return env;
  }
  const OrtRuntime* result = runtime.get();
  loaded->emplace(resolved, std::move(runtime));
  return result;
}

absl::Status OrtRuntime::CreatePooledEnv(int threads) {
  const std::string context = absl::StrCat("ONNX Runtime '", library_, "': global thread pool");
  ort::OrtThreadingOptions* options = nullptr;
  if (auto s = Check(api_.CreateThreadingOptions(&options), context); !s.ok()) return s;
  // Inter-op 1: sessions run sequentially; no spinning, so idle pool threads leave the cores to
  // the scheduler's workers and OpenBLAS.
  absl::Status s = Check(api_.SetGlobalIntraOpNumThreads(options, threads), context);
  if (s.ok()) s = Check(api_.SetGlobalInterOpNumThreads(options, 1), context);
  if (s.ok()) s = Check(api_.SetGlobalSpinControl(options, 0), context);
  if (s.ok()) {
    s = Check(
        api_.CreateEnvWithGlobalThreadPools(ort::kLoggingLevelError, "adaptd", options, &env_),
        context, absl::StatusCode::kFailedPrecondition);
  }
  api_.ReleaseThreadingOptions(options);
  if (s.ok()) global_threads_ = threads;
  return s;
}

absl::Status OrtRuntime::Check(ort::OrtStatus* status, absl::string_view context,
                               absl::StatusCode code) const {
  if (status == nullptr) return absl::OkStatus();
  absl::Status result(code, absl::StrCat(context, ": ", OneLine(api_.GetErrorMessage(status))));
  api_.ReleaseStatus(status);
  return result;
}

}  // namespace adaptd
