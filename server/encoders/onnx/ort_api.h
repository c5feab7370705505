// The part of ONNX Runtime's C API that adaptd uses, declared here in the project's own words
// (the runtime ships no headers and none is copied; docs/ONNX.md). The runtime hands out one
// table of function pointers (OrtApi); each slot used is listed below with its index in that
// table, a fact of the published ABI: the table only grows at its end, and API version 1 ends
// at slot 101. The slots of ADAPTD_ORT_SLOTS lie in version 1, so the loader requests version
// 1; those of ADAPTD_ORT_GLOBAL_POOL_SLOTS (the shared thread pool) need version 5, asked for
// only when a global pool is wanted (docs/ONNX.md, "Threads, arena, warm-up"); those of
// ADAPTD_ORT_CUDA_SLOTS need version 11, asked for only with --device cuda ("Devices").
//
// Calling convention: the platform's C one. Functions returning an OrtStatus* return null on
// success; a non-null status is read with GetErrorMessage and freed with ReleaseStatus.
// Shapes are int64 dimensions, outermost first; tensors are dense and row-major.
#ifndef ADAPTD_SERVER_ENCODERS_ONNX_ORT_API_H_
#define ADAPTD_SERVER_ENCODERS_ONNX_ORT_API_H_

#include <cstddef>
#include <cstdint>

namespace adaptd::ort {

// Opaque handles owned by the runtime.
struct OrtStatus;
struct OrtEnv;
struct OrtSessionOptions;
struct OrtSession;
struct OrtRunOptions;
struct OrtValue;
struct OrtTypeInfo;
struct OrtTensorTypeAndShapeInfo;
struct OrtMemoryInfo;
struct OrtAllocator;
struct OrtThreadingOptions;
struct OrtCUDAProviderOptionsV2;

// The requested API version: the lowest one that has every slot of ADAPTD_ORT_SLOTS.
inline constexpr uint32_t kApiVersion = 1;
// The version the global thread pool's slots need (SetGlobalIntraOpNumThreads came in 5).
inline constexpr uint32_t kGlobalPoolApiVersion = 5;
// The version the CUDA execution provider's slots need (the V2 provider options came in 11).
inline constexpr uint32_t kCudaApiVersion = 11;

// Enum values passed to or read from the runtime (their C enums are int-sized).
inline constexpr int kLoggingLevelWarning = 2;
inline constexpr int kLoggingLevelError = 3;
inline constexpr int kExecutionModeSequential = 0;
inline constexpr int kGraphOptimizationAll = 99;
inline constexpr int kElementFloat = 1;
inline constexpr int kElementInt64 = 7;
inline constexpr int kArenaAllocator = 1;
inline constexpr int kMemTypeDefault = 0;

// The entry point's result: GetApi(version) answers null for a version the runtime lacks.
struct OrtApiBase {
  const void* (*GetApi)(uint32_t version) noexcept;
  const char* (*GetVersionString)() noexcept;
};
using GetApiBaseFn = const OrtApiBase* (*)() noexcept;

// X(name, slot, return type, parameters...): every slot adaptd calls.
#define ADAPTD_ORT_SLOTS(X)                                                                 \
  X(GetErrorMessage, 2, const char*, const OrtStatus*)                                      \
  X(CreateEnv, 3, OrtStatus*, int, const char*, OrtEnv**)                                   \
  X(CreateSession, 7, OrtStatus*, const OrtEnv*, const char*, const OrtSessionOptions*,     \
    OrtSession**)                                                                           \
  X(Run, 9, OrtStatus*, OrtSession*, const OrtRunOptions*, const char* const*,              \
    const OrtValue* const*, size_t, const char* const*, size_t, OrtValue**)                 \
  X(CreateSessionOptions, 10, OrtStatus*, OrtSessionOptions**)                              \
  X(SetSessionExecutionMode, 13, OrtStatus*, OrtSessionOptions*, int)                       \
  X(DisableMemPattern, 17, OrtStatus*, OrtSessionOptions*)                                  \
  X(DisableCpuMemArena, 19, OrtStatus*, OrtSessionOptions*)                                 \
  X(SetSessionGraphOptimizationLevel, 23, OrtStatus*, OrtSessionOptions*, int)              \
  X(SetIntraOpNumThreads, 24, OrtStatus*, OrtSessionOptions*, int)                          \
  X(SetInterOpNumThreads, 25, OrtStatus*, OrtSessionOptions*, int)                          \
  X(SessionGetInputCount, 30, OrtStatus*, const OrtSession*, size_t*)                       \
  X(SessionGetOutputCount, 31, OrtStatus*, const OrtSession*, size_t*)                      \
  X(SessionGetInputTypeInfo, 33, OrtStatus*, const OrtSession*, size_t, OrtTypeInfo**)      \
  X(SessionGetOutputTypeInfo, 34, OrtStatus*, const OrtSession*, size_t, OrtTypeInfo**)     \
  X(SessionGetInputName, 36, OrtStatus*, const OrtSession*, size_t, OrtAllocator*, char**)  \
  X(SessionGetOutputName, 37, OrtStatus*, const OrtSession*, size_t, OrtAllocator*, char**) \
  X(CreateTensorWithDataAsOrtValue, 49, OrtStatus*, const OrtMemoryInfo*, void*, size_t,    \
    const int64_t*, size_t, int, OrtValue**)                                                \
  X(GetTensorMutableData, 51, OrtStatus*, OrtValue*, void**)                                \
  X(CastTypeInfoToTensorInfo, 55, OrtStatus*, const OrtTypeInfo*,                           \
    const OrtTensorTypeAndShapeInfo**)                                                      \
  X(GetTensorElementType, 60, OrtStatus*, const OrtTensorTypeAndShapeInfo*, int*)           \
  X(GetDimensionsCount, 61, OrtStatus*, const OrtTensorTypeAndShapeInfo*, size_t*)          \
  X(GetDimensions, 62, OrtStatus*, const OrtTensorTypeAndShapeInfo*, int64_t*, size_t)      \
  X(GetTensorTypeAndShape, 65, OrtStatus*, const OrtValue*, OrtTensorTypeAndShapeInfo**)    \
  X(CreateCpuMemoryInfo, 69, OrtStatus*, int, int, OrtMemoryInfo**)                         \
  X(AllocatorFree, 76, OrtStatus*, OrtAllocator*, void*)                                    \
  X(GetAllocatorWithDefaultOptions, 78, OrtStatus*, OrtAllocator**)                         \
  X(ReleaseEnv, 92, void, OrtEnv*)                                                          \
  X(ReleaseStatus, 93, void, OrtStatus*)                                                    \
  X(ReleaseMemoryInfo, 94, void, OrtMemoryInfo*)                                            \
  X(ReleaseSession, 95, void, OrtSession*)                                                  \
  X(ReleaseValue, 96, void, OrtValue*)                                                      \
  X(ReleaseTypeInfo, 98, void, OrtTypeInfo*)                                                \
  X(ReleaseTensorTypeAndShapeInfo, 99, void, OrtTensorTypeAndShapeInfo*)                    \
  X(ReleaseSessionOptions, 100, void, OrtSessionOptions*)

// The last slot of API version 1; every slot of ADAPTD_ORT_SLOTS is at or below it.
inline constexpr int kLastSlotOfVersion1 = 101;

// The shared (global) thread pool: an environment whose intra-op pool every session that
// disables its own threads runs on. Version 3 added the environment, the session switch and the
// threading options (slots 119-122); version 5 the pool's sizes and spin control (147-149,
// version 5 ends at 149).
#define ADAPTD_ORT_GLOBAL_POOL_SLOTS(X)                                                            \
  X(CreateEnvWithGlobalThreadPools, 119, OrtStatus*, int, const char*, const OrtThreadingOptions*, \
    OrtEnv**)                                                                                      \
  X(DisablePerSessionThreads, 120, OrtStatus*, OrtSessionOptions*)                                 \
  X(CreateThreadingOptions, 121, OrtStatus*, OrtThreadingOptions**)                                \
  X(ReleaseThreadingOptions, 122, void, OrtThreadingOptions*)                                      \
  X(SetGlobalIntraOpNumThreads, 147, OrtStatus*, OrtThreadingOptions*, int)                        \
  X(SetGlobalInterOpNumThreads, 148, OrtStatus*, OrtThreadingOptions*, int)                        \
  X(SetGlobalSpinControl, 149, OrtStatus*, OrtThreadingOptions*, int)

// The last slot of API version 5; every slot of ADAPTD_ORT_GLOBAL_POOL_SLOTS is at or below it.
inline constexpr int kLastSlotOfVersion5 = 149;

// The CUDA execution provider (--device cuda): the providers the library was built with
// (GetAvailableProviders, ReleaseAvailableProviders: slots 125-126, version 4, which ends at 126)
// and the V2 provider options appended to a session (slots 204-206 and 208, version 11, which
// ends at 209, SessionOptionsAppendExecutionProvider_MIGraphX). A CPU-only runtime has these
// slots too: it lists no CUDAExecutionProvider, and its CreateCUDAProviderOptions answers an
// error.
#define ADAPTD_ORT_CUDA_SLOTS(X)                                                               \
  X(GetAvailableProviders, 125, OrtStatus*, char***, int*)                                     \
  X(ReleaseAvailableProviders, 126, OrtStatus*, char**, int)                                   \
  X(SessionOptionsAppendExecutionProvider_CUDA_V2, 204, OrtStatus*, OrtSessionOptions*,        \
    const OrtCUDAProviderOptionsV2*)                                                           \
  X(CreateCUDAProviderOptions, 205, OrtStatus*, OrtCUDAProviderOptionsV2**)                    \
  X(UpdateCUDAProviderOptions, 206, OrtStatus*, OrtCUDAProviderOptionsV2*, const char* const*, \
    const char* const*, size_t)                                                                \
  X(ReleaseCUDAProviderOptions, 208, void, OrtCUDAProviderOptionsV2*)

// The last slot of API version 11; every slot of ADAPTD_ORT_CUDA_SLOTS is at or below it.
inline constexpr int kLastSlotOfVersion11 = 209;

// The provider name a CUDA-enabled runtime lists, and its provider library, which the
// onnxruntime-gpu wheel installs beside libonnxruntime.so.
inline constexpr const char* kCudaProviderName = "CUDAExecutionProvider";
inline constexpr const char* kCudaProviderLibrary = "libonnxruntime_providers_cuda.so";

// The declared slots as typed function pointers, filled by the loader from the runtime's table
// (the global pool's only when the runtime serves version 5 and a pool was asked for; null
// otherwise).
struct Api {
#define ADAPTD_ORT_MEMBER(name, slot, ret, ...) ret (*name)(__VA_ARGS__) noexcept = nullptr;
  ADAPTD_ORT_SLOTS(ADAPTD_ORT_MEMBER)
  ADAPTD_ORT_GLOBAL_POOL_SLOTS(ADAPTD_ORT_MEMBER)
#undef ADAPTD_ORT_MEMBER
};

// The CUDA slots, filled apart (OrtRuntime::Cuda) once a CUDA session is asked for.
struct CudaApi {
#define ADAPTD_ORT_MEMBER(name, slot, ret, ...) ret (*name)(__VA_ARGS__) noexcept = nullptr;
  ADAPTD_ORT_CUDA_SLOTS(ADAPTD_ORT_MEMBER)
#undef ADAPTD_ORT_MEMBER
};

struct SlotInfo {
  const char* name;
  int slot;
};

// Every declared slot of version 1, in declaration order (for the loader's checks and the test).
inline constexpr SlotInfo kSlots[] = {
#define ADAPTD_ORT_INFO(name, slot, ...) {#name, slot},
    ADAPTD_ORT_SLOTS(ADAPTD_ORT_INFO)
#undef ADAPTD_ORT_INFO
};

// The global pool's slots (version 5), likewise.
inline constexpr SlotInfo kGlobalPoolSlots[] = {
#define ADAPTD_ORT_INFO(name, slot, ...) {#name, slot},
    ADAPTD_ORT_GLOBAL_POOL_SLOTS(ADAPTD_ORT_INFO)
#undef ADAPTD_ORT_INFO
};

// The CUDA provider's slots (version 11), likewise.
inline constexpr SlotInfo kCudaSlots[] = {
#define ADAPTD_ORT_INFO(name, slot, ...) {#name, slot},
    ADAPTD_ORT_CUDA_SLOTS(ADAPTD_ORT_INFO)
#undef ADAPTD_ORT_INFO
};

}  // namespace adaptd::ort

#endif  // ADAPTD_SERVER_ENCODERS_ONNX_ORT_API_H_
