#include "server/encoders/onnx/ort_session.h"

#include <functional>
#include <memory>

#include "absl/strings/str_cat.h"

namespace adaptd {
namespace {

// Releases a runtime object when it leaves scope.
template <typename T>
class Owned {
 public:
  Owned(T* object, void (*release)(T*) noexcept) : object_(object), release_(release) {}
  ~Owned() {
    if (object_ != nullptr) release_(object_);
  }
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  T* get() const { return object_; }

 private:
  T* object_;
  void (*release_)(T*) noexcept;
};

// Appends the CUDA execution provider on `device` to `options`.
absl::Status AppendCuda(const OrtRuntime* runtime, ort::OrtSessionOptions* options, int device,
                        const std::string& context) {
  absl::StatusOr<const ort::CudaApi*> cuda = runtime->Cuda();
  if (!cuda.ok()) return cuda.status();
  const std::string where = absl::StrCat(context, ": CUDA device ", device);
  ort::OrtCUDAProviderOptionsV2* raw = nullptr;
  if (auto s = runtime->Check((*cuda)->CreateCUDAProviderOptions(&raw), where,
                              absl::StatusCode::kFailedPrecondition);
      !s.ok()) {
    return s;
  }
  Owned<ort::OrtCUDAProviderOptionsV2> provider(raw, (*cuda)->ReleaseCUDAProviderOptions);
  const std::string id = absl::StrCat(device);
  const char* keys[] = {"device_id"};
  const char* values[] = {id.c_str()};
  if (auto s = runtime->Check((*cuda)->UpdateCUDAProviderOptions(raw, keys, values, 1), where,
                              absl::StatusCode::kFailedPrecondition);
      !s.ok()) {
    return s;
  }
  return runtime->Check((*cuda)->SessionOptionsAppendExecutionProvider_CUDA_V2(options, raw), where,
                        absl::StatusCode::kFailedPrecondition);
}

}  // namespace

absl::StatusOr<std::unique_ptr<OrtModel>> OrtModel::Create(const OrtRuntime* runtime,
                                                           const std::string& path,
                                                           const OrtModelOptions& options) {
  const ort::Api& api = runtime->api();
  const std::string context = absl::StrCat("ONNX model '", path, "'");
  ort::OrtSessionOptions* raw_options = nullptr;
  if (auto s = runtime->Check(api.CreateSessionOptions(&raw_options), context); !s.ok()) return s;
  Owned<ort::OrtSessionOptions> session_options(raw_options, api.ReleaseSessionOptions);
  std::vector<ort::OrtStatus*> settings = {
      api.SetSessionExecutionMode(raw_options, ort::kExecutionModeSequential),
      api.SetSessionGraphOptimizationLevel(raw_options, ort::kGraphOptimizationAll),
      api.SetIntraOpNumThreads(raw_options, options.intra_op_threads),
      api.SetInterOpNumThreads(raw_options, 1),
  };
  if (options.global_pool) {
    if (runtime->global_threads() <= 0) {
      return absl::InternalError(absl::StrCat(context, ": the runtime has no shared pool"));
    }
    settings.push_back(api.DisablePerSessionThreads(raw_options));
  }
  if (!options.arena) {
    settings.push_back(api.DisableMemPattern(raw_options));
    settings.push_back(api.DisableCpuMemArena(raw_options));
  }
  absl::Status first;
  for (ort::OrtStatus* status : settings) first.Update(runtime->Check(status, context));
  if (!first.ok()) return first;
  if (options.cuda_device >= 0) {
    if (auto s = AppendCuda(runtime, raw_options, options.cuda_device, context); !s.ok()) return s;
  }

  auto model = std::unique_ptr<OrtModel>(new OrtModel(runtime, path));
  if (auto s = runtime->Check(
          api.CreateSession(runtime->env(), path.c_str(), raw_options, &model->session_), context,
          absl::StatusCode::kFailedPrecondition);
      !s.ok()) {
    return s;
  }
  if (auto s = runtime->Check(
          api.CreateCpuMemoryInfo(ort::kArenaAllocator, ort::kMemTypeDefault, &model->cpu_),
          context);
      !s.ok()) {
    return s;
  }
  if (auto s = model->ReadSignature(); !s.ok()) return s;
  return model;
}

OrtModel::~OrtModel() {
  const ort::Api& api = runtime_->api();
  if (cpu_ != nullptr) api.ReleaseMemoryInfo(cpu_);
  if (session_ != nullptr) api.ReleaseSession(session_);
}

absl::Status OrtModel::ReadSignature() {
  const ort::Api& api = runtime_->api();
  const std::string context = absl::StrCat("ONNX model '", path_, "'");
  size_t input_count = 0;
  size_t output_count = 0;
  if (auto s = runtime_->Check(api.SessionGetInputCount(session_, &input_count), context);
      !s.ok()) {
    return s;
  }
  if (auto s = runtime_->Check(api.SessionGetOutputCount(session_, &output_count), context);
      !s.ok()) {
    return s;
  }
  for (size_t i = 0; i < input_count + output_count; ++i) {
    const bool input = i < input_count;
    absl::StatusOr<OrtTensorSpec> spec = Describe(input ? i : i - input_count, input);
    if (!spec.ok()) return spec.status();
    (input ? inputs_ : outputs_).push_back(*std::move(spec));
  }
  return absl::OkStatus();
}

absl::StatusOr<OrtTensorSpec> OrtModel::Describe(size_t index, bool input) const {
  const ort::Api& api = runtime_->api();
  const std::string context =
      absl::StrCat("ONNX model '", path_, "' ", input ? "input " : "output ", index);
  ort::OrtAllocator* allocator = nullptr;
  if (auto s = runtime_->Check(api.GetAllocatorWithDefaultOptions(&allocator), context); !s.ok()) {
    return s;
  }
  OrtTensorSpec spec;
  char* name = nullptr;
  auto get_name = input ? api.SessionGetInputName : api.SessionGetOutputName;
  if (auto s = runtime_->Check(get_name(session_, index, allocator, &name), context); !s.ok()) {
    return s;
  }
  spec.name = name;
  if (auto s = runtime_->Check(api.AllocatorFree(allocator, name), context); !s.ok()) return s;

  ort::OrtTypeInfo* raw_type = nullptr;
  auto get_type = input ? api.SessionGetInputTypeInfo : api.SessionGetOutputTypeInfo;
  if (auto s = runtime_->Check(get_type(session_, index, &raw_type), context); !s.ok()) return s;
  Owned<ort::OrtTypeInfo> type(raw_type, api.ReleaseTypeInfo);
  const ort::OrtTensorTypeAndShapeInfo* tensor = nullptr;
  if (auto s = runtime_->Check(api.CastTypeInfoToTensorInfo(raw_type, &tensor), context); !s.ok()) {
    return s;
  }
  if (tensor == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(context, " ('", spec.name, "') is not a tensor"));
  }
  size_t rank = 0;
  absl::Status s = runtime_->Check(api.GetTensorElementType(tensor, &spec.element_type), context);
  if (s.ok()) s = runtime_->Check(api.GetDimensionsCount(tensor, &rank), context);
  spec.dims.resize(rank);
  if (s.ok()) s = runtime_->Check(api.GetDimensions(tensor, spec.dims.data(), rank), context);
  if (!s.ok()) return s;
  return spec;
}

absl::StatusOr<OrtFloatTensor> OrtModel::Run(const std::string& input,
                                             const std::vector<int64_t>& shape,
                                             std::span<const float> values,
                                             const std::string& output) const {
  const OrtInput one{.name = input,
                     .element_type = ort::kElementFloat,
                     .shape = shape,
                     .data = values.data(),
                     .bytes = values.size_bytes()};
  return Run({&one, 1}, output);
}

absl::StatusOr<OrtFloatTensor> OrtModel::Run(std::span<const OrtInput> inputs,
                                             const std::string& output) const {
  const ort::Api& api = runtime_->api();
  const std::string context = absl::StrCat("ONNX model '", path_, "': run");
  std::vector<std::unique_ptr<Owned<ort::OrtValue>>> owned;
  std::vector<const ort::OrtValue*> values;
  std::vector<const char*> names;
  for (const OrtInput& input : inputs) {
    ort::OrtValue* raw = nullptr;
    // The runtime only reads an input tensor; its API takes a mutable pointer.
    void* data = const_cast<void*>(input.data);
    if (auto s = runtime_->Check(
            api.CreateTensorWithDataAsOrtValue(cpu_, data, input.bytes, input.shape.data(),
                                               input.shape.size(), input.element_type, &raw),
            absl::StrCat(context, " input '", input.name, "'"), absl::StatusCode::kInvalidArgument);
        !s.ok()) {
      return s;
    }
    owned.push_back(std::make_unique<Owned<ort::OrtValue>>(raw, api.ReleaseValue));
    values.push_back(raw);
    names.push_back(input.name.c_str());
  }
  const char* output_name = output.c_str();
  ort::OrtValue* raw_output = nullptr;
  if (auto s = runtime_->Check(api.Run(session_, nullptr, names.data(), values.data(),
                                       values.size(), &output_name, 1, &raw_output),
                               context, absl::StatusCode::kInvalidArgument);
      !s.ok()) {
    return s;
  }
  Owned<ort::OrtValue> output_value(raw_output, api.ReleaseValue);
  return ReadOutput(raw_output, output);
}

absl::StatusOr<OrtFloatTensor> OrtModel::ReadOutput(ort::OrtValue* value,
                                                    const std::string& name) const {
  const ort::Api& api = runtime_->api();
  const std::string context = absl::StrCat("ONNX model '", path_, "' output '", name, "'");
  ort::OrtTensorTypeAndShapeInfo* raw_info = nullptr;
  if (auto s = runtime_->Check(api.GetTensorTypeAndShape(value, &raw_info), context); !s.ok()) {
    return s;
  }
  Owned<ort::OrtTensorTypeAndShapeInfo> info(raw_info, api.ReleaseTensorTypeAndShapeInfo);
  int element_type = 0;
  size_t rank = 0;
  OrtFloatTensor result;
  absl::Status s = runtime_->Check(api.GetTensorElementType(raw_info, &element_type), context);
  if (s.ok()) s = runtime_->Check(api.GetDimensionsCount(raw_info, &rank), context);
  result.shape.resize(rank);
  if (s.ok()) s = runtime_->Check(api.GetDimensions(raw_info, result.shape.data(), rank), context);
  if (!s.ok()) return s;
  if (element_type != ort::kElementFloat) {
    return absl::FailedPreconditionError(
        absl::StrCat(context, ": element type ", element_type, ", not float"));
  }
  int64_t count = 1;
  for (int64_t d : result.shape) count *= d;
  void* data = nullptr;
  if (auto st = runtime_->Check(api.GetTensorMutableData(value, &data), context); !st.ok()) {
    return st;
  }
  const auto* floats = static_cast<const float*>(data);
  result.values.assign(floats, floats + count);
  return result;
}

}  // namespace adaptd
