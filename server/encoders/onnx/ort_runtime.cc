#include "server/encoders/onnx/ort_runtime.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <span>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

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

// Whether every slot of `slots` is filled in `table`.
bool AllPresent(const void* table, std::span<const ort::SlotInfo> slots) {
  const auto* entries = static_cast<void* const*>(table);
  return std::all_of(slots.begin(), slots.end(), [entries](const ort::SlotInfo& slot) {
    return entries[slot.slot] != nullptr;
  });
}

constexpr bool AllAtOrBelow(std::span<const ort::SlotInfo> slots, int last) {
  for (const ort::SlotInfo& slot : slots) {
    if (slot.slot > last) return false;
  }
  return true;
}
static_assert(AllAtOrBelow(ort::kGlobalPoolSlots, ort::kLastSlotOfVersion5));
static_assert(AllAtOrBelow(ort::kCudaSlots, ort::kLastSlotOfVersion11));

#define ADAPTD_ORT_FILL(name, slot, ...) \
  api->name = reinterpret_cast<decltype(api->name)>(static_cast<void* const*>(table)[slot]);

// Fills the global pool's slots from a version-5 table; false (and none filled) when one is
// empty.
bool FillGlobalPoolSlots(const void* table, ort::Api* api) {
  if (!AllPresent(table, ort::kGlobalPoolSlots)) return false;
  ADAPTD_ORT_GLOBAL_POOL_SLOTS(ADAPTD_ORT_FILL)
  return true;
}

// Fills the CUDA slots from a version-11 table; false (and none filled) when one is empty.
bool FillCudaSlots(const void* table, ort::CudaApi* api) {
  if (!AllPresent(table, ort::kCudaSlots)) return false;
  ADAPTD_ORT_CUDA_SLOTS(ADAPTD_ORT_FILL)
  return true;
}
#undef ADAPTD_ORT_FILL

// The file the dynamic linker loaded for `handle`'s symbol `address`; `fallback` when unknown.
std::string LoadedFile(const void* address, const std::string& fallback) {
  Dl_info info;
  if (dladdr(address, &info) == 0 || info.dli_fname == nullptr) return fallback;
  std::error_code error;
  const std::filesystem::path file = std::filesystem::canonical(info.dli_fname, error);
  return error ? std::string(info.dli_fname) : file.string();
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
  runtime->file_ = LoadedFile(reinterpret_cast<const void*>(get_base), resolved);
  runtime->version_ = base->GetVersionString();
  runtime->get_api_ = base->GetApi;
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

absl::StatusOr<const ort::CudaApi*> OrtRuntime::Cuda() const {
  std::call_once(cuda_once_, [this] {
    const void* table = get_api_(ort::kCudaApiVersion);
    if (table == nullptr || !FillCudaSlots(table, &cuda_api_)) {
      cuda_api_ = {};
      cuda_status_ = absl::FailedPreconditionError(absl::StrCat(
          "ONNX Runtime '", library_, "' (version ", version_, ") does not serve C API version ",
          ort::kCudaApiVersion, ", which the CUDA execution provider needs (1.11 or later)"));
      return;
    }
    char** names = nullptr;
    int count = 0;
    cuda_status_ = Check(cuda_api_.GetAvailableProviders(&names, &count),
                         absl::StrCat("ONNX Runtime '", library_, "': GetAvailableProviders"),
                         absl::StatusCode::kFailedPrecondition);
    if (!cuda_status_.ok()) return;
    providers_.assign(names, names + count);
    cuda_status_ = Check(cuda_api_.ReleaseAvailableProviders(names, count),
                         absl::StrCat("ONNX Runtime '", library_, "': ReleaseAvailableProviders"));
    if (cuda_status_.ok()) cuda_status_ = CheckCudaProvider(file_, version_, providers_);
  });
  if (!cuda_status_.ok()) return cuda_status_;
  return &cuda_api_;
}

std::vector<std::string> OrtRuntime::providers() const {
  (void)Cuda();
  return providers_;
}

absl::Status OrtRuntime::CheckCudaProvider(const std::string& file, const std::string& version,
                                           const std::vector<std::string>& providers) {
  const std::string runtime = absl::StrCat("ONNX Runtime '", file, "' (version ", version, ")");
  if (std::find(providers.begin(), providers.end(), ort::kCudaProviderName) == providers.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        runtime, " is a CPU-only runtime (its execution providers: ",
        absl::StrJoin(providers, ", "), "); --device cuda needs the onnxruntime-gpu wheel's ",
        "library (pip download onnxruntime-gpu --no-deps, unzip, onnxruntime/capi/), named with ",
        "--onnxruntime-library or ", kOnnxRuntimeLibraryEnv));
  }
  const std::filesystem::path provider =
      std::filesystem::path(file).parent_path() / ort::kCudaProviderLibrary;
  std::error_code error;
  if (!std::filesystem::is_regular_file(provider, error)) {
    return absl::FailedPreconditionError(
        absl::StrCat(runtime, " lists ", ort::kCudaProviderName, " but has no provider library '",
                     provider.string(),
                     "' beside it (the onnxruntime-gpu wheel's onnxruntime/capi/ holds "
                     "both)"));
  }
  return absl::OkStatus();
}

absl::Status OrtRuntime::Check(ort::OrtStatus* status, absl::string_view context,
                               absl::StatusCode code) const {
  if (status == nullptr) return absl::OkStatus();
  absl::Status result(code, absl::StrCat(context, ": ", OneLine(api_.GetErrorMessage(status))));
  api_.ReleaseStatus(status);
  return result;
}

}  // namespace adaptd
