// The declared C API subset (ort_api.h) against ONNX Runtime's library, and OrtModel against
// what the Python onnxruntime answers for the same models and tensors
// (testdata/onnx/reference.json, written by make_onnx_testdata.py).
#include "server/encoders/onnx/ort_runtime.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "server/encoders/onnx/onnx_test_util.h"
#include "server/encoders/onnx/ort_session.h"

namespace adaptd {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using onnx_test::Reference;

const std::string kData = onnx_test::Data("");

const OrtRuntime* Runtime() {
  absl::StatusOr<const OrtRuntime*> runtime = OrtRuntime::Load(ADAPTD_ONNXRUNTIME_LIBRARY);
  // No skip: CI must run these (bash .ci/dev build fetches the library).
  EXPECT_TRUE(runtime.ok()) << runtime.status();
  return runtime.ok() ? *runtime : nullptr;
}

void ExpectClose(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_LE(std::abs(got[i] - want[i]), 1e-5 * std::max(1.0f, std::abs(want[i]))) << i;
  }
}

void ExpectSpecs(const std::vector<OrtTensorSpec>& got, const nlohmann::json& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i]["name"].get<std::string>());
    EXPECT_EQ(got[i].element_type, want[i]["element_type"].get<int>());
    EXPECT_EQ(got[i].dims, want[i]["dims"].get<std::vector<int64_t>>());
  }
}

TEST(OrtRuntimeTest, LoadsThePinnedRuntimeAtApiVersion1) {
  const OrtRuntime* runtime = Runtime();
  ASSERT_NE(runtime, nullptr);
  EXPECT_EQ(runtime->version(), Reference()["onnxruntime"].get<std::string>());
  EXPECT_NE(runtime->env(), nullptr);
  absl::StatusOr<const OrtRuntime*> again = OrtRuntime::Load(ADAPTD_ONNXRUNTIME_LIBRARY);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, runtime);
  for (const ort::SlotInfo& slot : ort::kSlots) {
    EXPECT_LE(slot.slot, ort::kLastSlotOfVersion1) << slot.name;
  }
}

TEST(OrtRuntimeTest, ResolvesThePathFromArgumentThenEnvironmentThenLinker) {
  ::unsetenv(kOnnxRuntimeLibraryEnv);
  EXPECT_EQ(OrtRuntime::ResolvePath(""), kOnnxRuntimeDefaultLibrary);
  ::setenv(kOnnxRuntimeLibraryEnv, "/opt/ort/libonnxruntime.so", 1);
  EXPECT_EQ(OrtRuntime::ResolvePath(""), "/opt/ort/libonnxruntime.so");
  EXPECT_EQ(OrtRuntime::ResolvePath("/x/lib.so"), "/x/lib.so");
  ::unsetenv(kOnnxRuntimeLibraryEnv);
}

TEST(OrtRuntimeTest, AMissingLibraryIsOneLineSayingHowToGetIt) {
  absl::StatusOr<const OrtRuntime*> runtime = OrtRuntime::Load("/nonexistent/libonnxruntime.so");
  ASSERT_FALSE(runtime.ok());
  EXPECT_EQ(runtime.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(runtime.status().message());
  EXPECT_THAT(message, HasSubstr("'/nonexistent/libonnxruntime.so'"));
  EXPECT_THAT(message, HasSubstr("pip download onnxruntime"));
  EXPECT_THAT(message, HasSubstr(kOnnxRuntimeLibraryEnv));
  EXPECT_THAT(message, Not(HasSubstr("\n")));
}

TEST(OrtRuntimeTest, ALibraryWithoutTheEntryPointIsRefused) {
  absl::StatusOr<const OrtRuntime*> runtime = OrtRuntime::Load("libm.so.6");
  ASSERT_FALSE(runtime.ok());
  EXPECT_EQ(runtime.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(runtime.status().message(),
              HasSubstr("ONNX Runtime's library 'libm.so.6' has no OrtGetApiBase"));
}

// Calls each declared slot directly, recording its name; the calls among the slots of `list`
// (by default the version-1 ones) must be every slot of it.
class SlotCalls {
 public:
  explicit SlotCalls(const OrtRuntime* runtime, std::span<const ort::SlotInfo> list = ort::kSlots)
      : runtime_(runtime), api_(runtime->api()), list_(list) {}
  ~SlotCalls() {
    std::set<std::string> declared;
    for (const ort::SlotInfo& slot : list_) declared.insert(slot.name);
    std::set<std::string> called;
    for (const std::string& name : called_) {
      if (declared.contains(name) || list_.data() == ort::kSlots) called.insert(name);
    }
    EXPECT_EQ(called, declared);
  }
  const ort::Api& api(const char* name) {
    called_.insert(name);
    return api_;
  }
  void Ok(ort::OrtStatus* status) { EXPECT_TRUE(runtime_->Check(status, "call").ok()); }

 private:
  const OrtRuntime* runtime_;
  const ort::Api& api_;
  std::span<const ort::SlotInfo> list_;
  std::set<std::string> called_;
};
#define ORT(name) calls.api(#name).name

std::vector<int64_t> Dims(SlotCalls& calls, const ort::OrtTensorTypeAndShapeInfo* info,
                          int* element_type) {
  size_t rank = 0;
  calls.Ok(ORT(GetTensorElementType)(info, element_type));
  calls.Ok(ORT(GetDimensionsCount)(info, &rank));
  std::vector<int64_t> dims(rank);
  calls.Ok(ORT(GetDimensions)(info, dims.data(), rank));
  return dims;
}

std::string Name(SlotCalls& calls, ort::OrtSession* session, bool input) {
  ort::OrtAllocator* allocator = nullptr;
  calls.Ok(ORT(GetAllocatorWithDefaultOptions)(&allocator));
  char* raw = nullptr;
  calls.Ok(input ? ORT(SessionGetInputName)(session, 0, allocator, &raw)
                 : ORT(SessionGetOutputName)(session, 0, allocator, &raw));
  std::string name = raw;
  calls.Ok(ORT(AllocatorFree)(allocator, raw));
  return name;
}

OrtTensorSpec Spec(SlotCalls& calls, ort::OrtSession* session, bool input) {
  OrtTensorSpec spec;
  spec.name = Name(calls, session, input);
  ort::OrtTypeInfo* type = nullptr;
  calls.Ok(input ? ORT(SessionGetInputTypeInfo)(session, 0, &type)
                 : ORT(SessionGetOutputTypeInfo)(session, 0, &type));
  const ort::OrtTensorTypeAndShapeInfo* tensor = nullptr;
  calls.Ok(ORT(CastTypeInfoToTensorInfo)(type, &tensor));
  spec.dims = Dims(calls, tensor, &spec.element_type);
  ORT(ReleaseTypeInfo)(type);
  return spec;
}

TEST(OrtRuntimeTest, EveryDeclaredSlotAnswersAsThePythonRuntime) {
  const OrtRuntime* runtime = Runtime();
  ASSERT_NE(runtime, nullptr);
  const nlohmann::json want = Reference()["linear.onnx"];
  SlotCalls calls(runtime);
  ort::OrtEnv* env = nullptr;
  calls.Ok(ORT(CreateEnv)(ort::kLoggingLevelWarning, "ort_runtime_test", &env));
  ort::OrtSessionOptions* options = nullptr;
  calls.Ok(ORT(CreateSessionOptions)(&options));
  calls.Ok(ORT(SetSessionExecutionMode)(options, ort::kExecutionModeSequential));
  calls.Ok(ORT(DisableMemPattern)(options));
  calls.Ok(ORT(DisableCpuMemArena)(options));
  calls.Ok(ORT(SetSessionGraphOptimizationLevel)(options, ort::kGraphOptimizationAll));
  calls.Ok(ORT(SetIntraOpNumThreads)(options, 2));
  calls.Ok(ORT(SetInterOpNumThreads)(options, 1));
  ort::OrtSession* session = nullptr;
  calls.Ok(ORT(CreateSession)(env, (kData + "linear.onnx").c_str(), options, &session));
  ASSERT_NE(session, nullptr);
  size_t inputs = 0, outputs = 0;
  calls.Ok(ORT(SessionGetInputCount)(session, &inputs));
  calls.Ok(ORT(SessionGetOutputCount)(session, &outputs));
  EXPECT_EQ(inputs, want["inputs"].size());
  EXPECT_EQ(outputs, want["outputs"].size());
  const OrtTensorSpec input = Spec(calls, session, true);
  const OrtTensorSpec output = Spec(calls, session, false);
  ExpectSpecs({input}, want["inputs"]);
  ExpectSpecs({output}, want["outputs"]);

  ort::OrtMemoryInfo* cpu = nullptr;
  calls.Ok(ORT(CreateCpuMemoryInfo)(ort::kArenaAllocator, ort::kMemTypeDefault, &cpu));
  const nlohmann::json& run = want["runs"][1];
  std::vector<float> values = run["input"]["values"].get<std::vector<float>>();
  const std::vector<int64_t> shape = run["input"]["shape"].get<std::vector<int64_t>>();
  ort::OrtValue* in = nullptr;
  calls.Ok(ORT(CreateTensorWithDataAsOrtValue)(cpu, values.data(), values.size() * sizeof(float),
                                               shape.data(), shape.size(), ort::kElementFloat,
                                               &in));
  const char* in_name = input.name.c_str();
  const char* out_name = output.name.c_str();
  ort::OrtValue* out = nullptr;
  calls.Ok(ORT(Run)(session, nullptr, &in_name, &in, 1, &out_name, 1, &out));
  ASSERT_NE(out, nullptr);
  ort::OrtTensorTypeAndShapeInfo* out_info = nullptr;
  calls.Ok(ORT(GetTensorTypeAndShape)(out, &out_info));
  int element_type = 0;
  const std::vector<int64_t> out_shape = Dims(calls, out_info, &element_type);
  EXPECT_EQ(element_type, ort::kElementFloat);
  EXPECT_EQ(out_shape, run["output"]["shape"].get<std::vector<int64_t>>());
  void* data = nullptr;
  calls.Ok(ORT(GetTensorMutableData)(out, &data));
  const auto* floats = static_cast<const float*>(data);
  ExpectClose(std::vector<float>(floats, floats + out_shape[0] * out_shape[1]),
              run["output"]["values"].get<std::vector<float>>());

  // A failing call: its status carries the runtime's message.
  ort::OrtSession* missing = nullptr;
  ort::OrtStatus* status = ORT(CreateSession)(env, "/nonexistent.onnx", options, &missing);
  ASSERT_NE(status, nullptr);
  EXPECT_THAT(std::string(ORT(GetErrorMessage)(status)), HasSubstr("nonexistent.onnx"));
  ORT(ReleaseStatus)(status);

  ORT(ReleaseTensorTypeAndShapeInfo)(out_info);
  ORT(ReleaseValue)(out);
  ORT(ReleaseValue)(in);
  ORT(ReleaseMemoryInfo)(cpu);
  ORT(ReleaseSession)(session);
  ORT(ReleaseSessionOptions)(options);
  ORT(ReleaseEnv)(env);
}

// A copy of the library under another name: a runtime of its own (ONNX Runtime's environment
// is one per loaded library), so the first Load of it decides its pool whatever ran before.
std::string LibraryCopy(const std::string& name) {
  const std::string copy = ::testing::TempDir() + "/" + name;
  std::filesystem::copy_file(ADAPTD_ONNXRUNTIME_LIBRARY, copy,
                             std::filesystem::copy_options::overwrite_existing);
  return copy;
}

TEST(OrtRuntimeTest, EveryGlobalPoolSlotAnswersAndSessionsRunOnThePool) {
  absl::StatusOr<const OrtRuntime*> loaded = OrtRuntime::Load(LibraryCopy("ort_pool.so"), 2);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  const OrtRuntime* runtime = *loaded;
  EXPECT_EQ(runtime->global_threads(), 2);
  for (const ort::SlotInfo& slot : ort::kGlobalPoolSlots) {
    EXPECT_GT(slot.slot, ort::kLastSlotOfVersion1) << slot.name;
    EXPECT_LE(slot.slot, ort::kLastSlotOfVersion5) << slot.name;
  }
  const nlohmann::json want = Reference()["linear.onnx"];
  const nlohmann::json run = want["runs"][1];
  {
    SlotCalls calls(runtime, ort::kGlobalPoolSlots);
    ort::OrtThreadingOptions* threading = nullptr;
    calls.Ok(ORT(CreateThreadingOptions)(&threading));
    calls.Ok(ORT(SetGlobalIntraOpNumThreads)(threading, 2));
    calls.Ok(ORT(SetGlobalInterOpNumThreads)(threading, 1));
    calls.Ok(ORT(SetGlobalSpinControl)(threading, 0));
    // The library's one environment: the one Load made with its pool.
    ort::OrtEnv* env = nullptr;
    calls.Ok(ORT(CreateEnvWithGlobalThreadPools)(ort::kLoggingLevelWarning, "ort_runtime_test",
                                                 threading, &env));
    ORT(ReleaseThreadingOptions)(threading);
    ort::OrtSessionOptions* options = nullptr;
    calls.Ok(ORT(CreateSessionOptions)(&options));
    calls.Ok(ORT(DisablePerSessionThreads)(options));
    ort::OrtSession* session = nullptr;
    calls.Ok(ORT(CreateSession)(env, (kData + "linear.onnx").c_str(), options, &session));
    EXPECT_NE(session, nullptr);
    if (session != nullptr) ORT(ReleaseSession)(session);
    ORT(ReleaseSessionOptions)(options);
    ORT(ReleaseEnv)(env);
  }
  absl::StatusOr<std::unique_ptr<OrtModel>> model =
      OrtModel::Create(runtime, kData + "linear.onnx", {.global_pool = true});
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<float> values = run["input"]["values"].get<std::vector<float>>();
  absl::StatusOr<OrtFloatTensor> out =
      (*model)->Run("features", run["input"]["shape"], values, "embedding");
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectClose(out->values, run["output"]["values"].get<std::vector<float>>());

  // A later Load of the same library returns the same runtime, whatever it asks.
  absl::StatusOr<const OrtRuntime*> again = OrtRuntime::Load(::testing::TempDir() + "/ort_pool.so");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, runtime);
}

TEST(OrtRuntimeTest, WithoutAPoolAskedForSessionsKeepTheirOwnThreads) {
  absl::StatusOr<const OrtRuntime*> runtime = OrtRuntime::Load(LibraryCopy("ort_nopool.so"));
  ASSERT_TRUE(runtime.ok()) << runtime.status();
  EXPECT_EQ((*runtime)->global_threads(), 0);
  EXPECT_EQ((*runtime)->api().CreateEnvWithGlobalThreadPools, nullptr);
  absl::StatusOr<std::unique_ptr<OrtModel>> model =
      OrtModel::Create(*runtime, kData + "linear.onnx", {.global_pool = true});
  ASSERT_FALSE(model.ok());
  EXPECT_THAT(model.status().message(), HasSubstr("the runtime has no shared pool"));
}
#undef ORT

// The CUDA provider's slots on the CPU-only runtime of the tests: each declared slot is in the
// table; the ones that need CUDA answer an error naming it (but the append, below).
TEST(OrtRuntimeTest, EveryCudaSlotAnswersAndACpuOnlyRuntimeRefusesCuda) {
  const OrtRuntime* runtime = Runtime();
  ASSERT_NE(runtime, nullptr);
  for (const ort::SlotInfo& slot : ort::kCudaSlots) {
    EXPECT_GT(slot.slot, ort::kLastSlotOfVersion1) << slot.name;
    EXPECT_LE(slot.slot, ort::kLastSlotOfVersion11) << slot.name;
  }
  absl::StatusOr<const ort::CudaApi*> refused = runtime->Cuda();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  const std::string message(refused.status().message());
  EXPECT_THAT(message, HasSubstr("is a CPU-only runtime (its execution providers: "));
  EXPECT_THAT(message, HasSubstr("CPUExecutionProvider"));
  EXPECT_THAT(message, HasSubstr("onnxruntime-gpu"));
  EXPECT_THAT(message, Not(HasSubstr("\n")));
  EXPECT_THAT(runtime->providers(), ::testing::Contains("CPUExecutionProvider"));
  EXPECT_THAT(runtime->providers(), Not(::testing::Contains(ort::kCudaProviderName)));

  const ort::CudaApi& cuda = runtime->cuda_api();
  std::set<std::string> called;
#define CUDA(name) (called.insert(#name), cuda.name)
  char** names = nullptr;
  int count = 0;
  ASSERT_TRUE(runtime->Check(CUDA(GetAvailableProviders)(&names, &count), "call").ok());
  EXPECT_EQ(std::vector<std::string>(names, names + count), runtime->providers());
  EXPECT_TRUE(runtime->Check(CUDA(ReleaseAvailableProviders)(names, count), "call").ok());
  // Each call that needs CUDA answers an error status naming CUDA.
  auto expect_no_cuda = [&](ort::OrtStatus* status) {
    ASSERT_NE(status, nullptr);
    EXPECT_THAT(std::string(runtime->api().GetErrorMessage(status)), HasSubstr("CUDA"));
    runtime->api().ReleaseStatus(status);
  };
  ort::OrtCUDAProviderOptionsV2* provider = nullptr;
  expect_no_cuda(CUDA(CreateCUDAProviderOptions)(&provider));
  EXPECT_EQ(provider, nullptr);
  const char* keys[] = {"device_id"};
  const char* values[] = {"0"};
  expect_no_cuda(CUDA(UpdateCUDAProviderOptions)(provider, keys, values, 1));
  CUDA(ReleaseCUDAProviderOptions)(provider);
#undef CUDA
  // Appending the provider takes the options CreateCUDAProviderOptions makes, which a CPU-only
  // runtime never does (it dereferences them): here the slot is only checked to be in the
  // table; onnx_cuda_test (label gpu) calls it through OrtModel.
  EXPECT_NE(cuda.SessionOptionsAppendExecutionProvider_CUDA_V2, nullptr);
  called.insert("SessionOptionsAppendExecutionProvider_CUDA_V2");
  std::set<std::string> declared;
  for (const ort::SlotInfo& slot : ort::kCudaSlots) declared.insert(slot.name);
  EXPECT_EQ(called, declared);

  // A session asked for CUDA is refused with the same line.
  absl::StatusOr<std::unique_ptr<OrtModel>> model =
      OrtModel::Create(runtime, kData + "linear.onnx", {.cuda_device = 0});
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(model.status().message(), HasSubstr("is a CPU-only runtime"));
}

// A runtime listing the CUDA provider needs the provider library beside the file loaded.
TEST(OrtRuntimeTest, ACudaRuntimeNeedsItsProviderLibraryBesideIt) {
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "ort_gpu";
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "libonnxruntime.so.1.32.0").string();
  std::ofstream(file) << "a stand-in";
  const std::vector<std::string> gpu = {"CUDAExecutionProvider", "CPUExecutionProvider"};
  std::filesystem::remove(dir / ort::kCudaProviderLibrary);
  absl::Status missing = OrtRuntime::CheckCudaProvider(file, "1.32.0", gpu);
  EXPECT_EQ(missing.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(missing.message(),
              HasSubstr("lists CUDAExecutionProvider but has no provider library '" +
                        (dir / ort::kCudaProviderLibrary).string() + "' beside it"));
  std::ofstream((dir / ort::kCudaProviderLibrary).string()) << "a stand-in";
  EXPECT_TRUE(OrtRuntime::CheckCudaProvider(file, "1.32.0", gpu).ok());
  absl::Status cpu = OrtRuntime::CheckCudaProvider(file, "1.32.0", {"CPUExecutionProvider"});
  EXPECT_THAT(cpu.message(), HasSubstr("(version 1.32.0) is a CPU-only runtime (its execution "
                                       "providers: CPUExecutionProvider)"));
}

TEST(OrtModelTest, Int64InputsRunAsThePythonRuntime) {
  const OrtRuntime* runtime = Runtime();
  ASSERT_NE(runtime, nullptr);
  absl::StatusOr<std::unique_ptr<OrtModel>> model =
      OrtModel::Create(runtime, kData + "text/text.onnx", {.arena = false});
  ASSERT_TRUE(model.ok()) << model.status();
  const nlohmann::json reference = Reference();
  const nlohmann::json& want = reference["text/text.onnx"];
  ExpectSpecs((*model)->inputs(), want["inputs"]);
  ExpectSpecs((*model)->outputs(), want["outputs"]);
  const nlohmann::json& run = want["runs"][2];
  const std::vector<int64_t> ids = run["ids"].get<std::vector<int64_t>>();
  const std::vector<int64_t> ones(ids.size(), 1), zeros(ids.size(), 0);
  const std::vector<int64_t> shape = {1, static_cast<int64_t>(ids.size())};
  const size_t bytes = ids.size() * sizeof(int64_t);
  const std::vector<OrtInput> inputs = {
      {"input_ids", ort::kElementInt64, shape, ids.data(), bytes},
      {"attention_mask", ort::kElementInt64, shape, ones.data(), bytes},
      {"token_type_ids", ort::kElementInt64, shape, zeros.data(), bytes}};
  absl::StatusOr<OrtFloatTensor> pooled = (*model)->Run(inputs, "pooled");
  ASSERT_TRUE(pooled.ok()) << pooled.status();
  EXPECT_EQ(pooled->shape, (std::vector<int64_t>{1, 4}));
  ExpectClose(pooled->values, run["mean"].get<std::vector<float>>());
  absl::StatusOr<OrtFloatTensor> hidden = (*model)->Run(inputs, "hidden");
  ASSERT_TRUE(hidden.ok()) << hidden.status();
  EXPECT_EQ(hidden->shape, (std::vector<int64_t>{1, static_cast<int64_t>(ids.size()), 4}));
  ExpectClose({hidden->values.begin(), hidden->values.begin() + 4},
              run["first"].get<std::vector<float>>());
  // A float tensor where the model takes int64 is InvalidArgument naming the file.
  const std::vector<float> float_mask(ids.size(), 1.0f);
  const std::vector<OrtInput> wrong_type = {
      inputs[0],
      {"attention_mask", ort::kElementFloat, shape, float_mask.data(), ids.size() * sizeof(float)},
      inputs[2]};
  absl::StatusOr<OrtFloatTensor> refused = (*model)->Run(wrong_type, "hidden");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.status().message(), HasSubstr("text.onnx"));
}

TEST(OrtModelTest, SignatureAndOutputsMatchThePythonRuntime) {
  const OrtRuntime* runtime = Runtime();
  ASSERT_NE(runtime, nullptr);
  const nlohmann::json reference = Reference();
  for (const char* file : {"linear.onnx", "fixed_batch.onnx"}) {
    SCOPED_TRACE(file);
    const nlohmann::json& want = reference[file];
    for (bool arena : {true, false}) {
      absl::StatusOr<std::unique_ptr<OrtModel>> model =
          OrtModel::Create(runtime, kData + file, {.intra_op_threads = 1, .arena = arena});
      ASSERT_TRUE(model.ok()) << model.status();
      ExpectSpecs((*model)->inputs(), want["inputs"]);
      ExpectSpecs((*model)->outputs(), want["outputs"]);
      for (const nlohmann::json& run : want["runs"]) {
        const std::vector<float> values = run["input"]["values"].get<std::vector<float>>();
        absl::StatusOr<OrtFloatTensor> out = (*model)->Run(
            (*model)->inputs()[0].name, run["input"]["shape"], values, (*model)->outputs()[0].name);
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_EQ(out->shape, run["output"]["shape"].get<std::vector<int64_t>>());
        ExpectClose(out->values, run["output"]["values"].get<std::vector<float>>());
      }
    }
  }
}

TEST(OrtModelTest, MissingOrCorruptModelFailsNamingTheFile) {
  const OrtRuntime* runtime = Runtime();
  ASSERT_NE(runtime, nullptr);
  const std::string corrupt = ::testing::TempDir() + "/corrupt.onnx";
  std::ofstream(corrupt) << "this is not an ONNX model";
  for (const std::string& path : {std::string("/nonexistent/model.onnx"), corrupt}) {
    absl::StatusOr<std::unique_ptr<OrtModel>> model = OrtModel::Create(runtime, path, {});
    ASSERT_FALSE(model.ok()) << path;
    EXPECT_EQ(model.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_THAT(model.status().message(), HasSubstr("'" + path + "'"));
  }
}

TEST(OrtModelTest, AnInputOfTheWrongShapeIsInvalidArgument) {
  const OrtRuntime* runtime = Runtime();
  ASSERT_NE(runtime, nullptr);
  absl::StatusOr<std::unique_ptr<OrtModel>> model =
      OrtModel::Create(runtime, kData + "linear.onnx", {});
  ASSERT_TRUE(model.ok()) << model.status();
  const std::vector<float> values(5, 1.0f);
  absl::StatusOr<OrtFloatTensor> out = (*model)->Run("features", {1, 5}, values, "embedding");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("features"));
  absl::StatusOr<OrtFloatTensor> unknown =
      (*model)->Run("nope", {1, 4}, {values.data(), 4}, "embedding");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr("nope"));
}

}  // namespace
}  // namespace adaptd
