#include "server/encoders/onnx/onnx_encoder.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/device_name.h"
#include "server/config/defaults.h"
#include "server/encoders/fingerprint.h"
#include "server/encoders/onnx/onnx_external_data.h"
#include "server/encoders/onnx/onnx_heaps.h"
#include "server/encoders/onnx/onnx_image_input.h"
#include "server/encoders/onnx/onnx_text_input.h"
#include "server/encoders/text_encoder.h"

namespace adaptd {
namespace {

// The tensor `wanted` names, or the only one when `wanted` is empty.
absl::StatusOr<const OrtTensorSpec*> PickTensor(const std::vector<OrtTensorSpec>& specs,
                                                const std::string& wanted, const char* kind,
                                                const std::string& context) {
  std::vector<std::string> names;
  for (const OrtTensorSpec& spec : specs) {
    if (spec.name == wanted || (wanted.empty() && specs.size() == 1)) return &spec;
    names.push_back(spec.name);
  }
  const std::string listed = absl::StrCat(" (", kind, "s: ", absl::StrJoin(names, ", "), ")");
  if (wanted.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        context, " has ", specs.size(), " ", kind, "s; name one with ", kind, "_tensor", listed));
  }
  return absl::FailedPreconditionError(
      absl::StrCat(context, " has no ", kind, " tensor '", wanted, "'", listed));
}

// A float tensor [batch, n] with n fixed; n, or the error naming the tensor.
absl::StatusOr<int64_t> RowWidth(const OrtTensorSpec& spec, const std::string& context) {
  const bool matrix = spec.dims.size() == 2 && spec.dims[1] > 0;
  if (spec.element_type != ort::kElementFloat || !matrix) {
    std::vector<std::string> dims;
    for (int64_t d : spec.dims) dims.push_back(d < 0 ? "?" : absl::StrCat(d));
    return absl::FailedPreconditionError(absl::StrCat(
        context, " tensor '", spec.name, "' is element type ", spec.element_type, " of shape [",
        absl::StrJoin(dims, ", "), "]; the vector input needs float32 [batch, n] with n fixed"));
  }
  return spec.dims[1];
}

// How `adaptctl encoders` names an element type (ONNX's TensorProto numbering).
std::string ElementTypeName(int type) {
  switch (type) {
    case 1:
      return "float32";
    case 2:
      return "uint8";
    case 3:
      return "int8";
    case 5:
      return "int16";
    case 6:
      return "int32";
    case 7:
      return "int64";
    case 8:
      return "string";
    case 9:
      return "bool";
    case 10:
      return "float16";
    case 11:
      return "float64";
    case 16:
      return "bfloat16";
    default:
      return absl::StrCat("type ", type);
  }
}

}  // namespace

OnnxEncoder::~OnnxEncoder() = default;

absl::StatusOr<std::unique_ptr<OnnxEncoder>> OnnxEncoder::Create(
    const adapt::v1::EncoderConfig& config, const std::string& field,
    const OnnxEncoderOptions& options) {
  if (config.input() != "vector" && config.input() != "text" && config.input() != "image") {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".input: '", config.input(),
                     "' is not an input the onnx encoder takes (\"vector\", \"text\" or "
                     "\"image\"; docs/ONNX.md)"));
  }
  const std::string& path = config.model_path();
  if (path.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ".model_path: empty"));
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) {
    return absl::FailedPreconditionError(
        absl::StrCat(field, ".model_path: '", path, "' is not a readable file"));
  }
  const uint32_t max_batch = config.has_max_batch() ? config.max_batch() : defaults::kOnnxMaxBatch;
  if (max_batch == 0) return absl::InvalidArgumentError(absl::StrCat(field, ".max_batch: 0"));

  absl::StatusOr<kernels::DeviceName> device = kernels::ParseDeviceName(options.device);
  if (!device.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(field, " (onnx): ", device.status().message()));
  }
  // threads 0: the server's backend threads, on the runtime's shared pool where it has one.
  const int pool = config.threads() == 0 ? std::max(0, options.backend_threads) : 0;
  absl::StatusOr<const OrtRuntime*> runtime = OrtRuntime::Load(options.library, pool);
  if (!runtime.ok()) {
    return absl::Status(runtime.status().code(),
                        absl::StrCat(field, " (onnx): ", runtime.status().message()));
  }
  auto encoder = std::unique_ptr<OnnxEncoder>(new OnnxEncoder());
  encoder->kind_ = config.input();
  if (device->cuda) {
    // Said before the model loads: a runtime that cannot run CUDA sessions, and why.
    if (auto cuda = (*runtime)->Cuda(); !cuda.ok()) {
      return absl::Status(
          cuda.status().code(),
          absl::StrCat(field, " (onnx): device ", options.device, ": ", cuda.status().message()));
    }
    encoder->cuda_device_ = device->index;
  }
  encoder->shared_pool_ = pool > 0 && (*runtime)->global_threads() > 0;
  encoder->session_threads_ =
      encoder->shared_pool_ ? 0 : (pool > 0 ? pool : static_cast<int>(config.threads()));
  // Vectors have one shape per batch size: the arena and memory patterns pay. Texts and images
  // vary, so their tensors are malloc blocks of every size (onnx_heaps.h).
  if (encoder->kind_ != "vector") ConfigureHeapsForVaryingShapes();
  absl::StatusOr<std::unique_ptr<OrtModel>> model =
      OrtModel::Create(*runtime, path,
                       {.intra_op_threads = encoder->session_threads_,
                        .global_pool = encoder->shared_pool_,
                        .arena = encoder->kind_ == "vector",
                        .cuda_device = encoder->cuda_device_});
  if (!model.ok()) {
    return absl::Status(model.status().code(), absl::StrCat(field, ": ", model.status().message()));
  }
  encoder->model_ = *std::move(model);
  encoder->max_batch_ = max_batch;
  absl::Status bound = encoder->kind_ == "text"    ? encoder->BindTextInput(config, field)
                       : encoder->kind_ == "image" ? encoder->BindImageInput(config, field)
                                                   : encoder->BindVectorInput(config);
  if (!bound.ok()) {
    if (absl::StartsWith(bound.message(), field)) return bound;
    return absl::Status(bound.code(), absl::StrCat(field, ": ", bound.message()));
  }
  if (config.dim() != 0 && config.dim() != encoder->info_.dim()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ".dim: ", config.dim(),
                                                   " differs from the model's dimension ",
                                                   encoder->info_.dim(), " (leave it 0)"));
  }
  if (auto s = encoder->SetFingerprint(config); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(field, ": ", s.message()));
  }
  if (auto s = encoder->WarmUp(); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(field, ": warm-up run of '", path, "' failed: ", s.message()));
  }
  encoder->truncated_.store(0, std::memory_order_relaxed);
  // Set after the warm-up, whose one-word texts are never cut; the series starts at zero.
  if (encoder->kind_ == "text" && options.on_truncated) {
    encoder->on_truncated_ = options.on_truncated;
    encoder->on_truncated_(0);
  }
  return encoder;
}

// Warm-up: the first request should not pay for kernel selection and arena growth.
absl::Status OnnxEncoder::WarmUp() {
  EncodedBatch out;
  if (image_ != nullptr) return image_->WarmUp(*model_, max_batch_);
  if (kind_ == "text") {
    const adapt::v1::Input a = [] {
      adapt::v1::Input input;
      input.set_text("a");
      return input;
    }();
    const std::vector<const adapt::v1::Input*> texts(static_cast<size_t>(max_batch_), &a);
    return EncodeTexts(
        texts, [](size_t) { return std::string("warm-up"); }, &out);
  }
  std::vector<float> zeros(static_cast<size_t>(max_batch_ * width_), 0.0f);
  return RunRows(zeros, 0, max_batch_, &out.keys);
}

void OnnxEncoder::Describe(const adapt::v1::EncoderConfig& config, int64_t dim) {
  info_.set_name(config.name());
  info_.set_type("onnx");
  info_.set_input_kind(kind_);
  info_.set_dim(static_cast<uint32_t>(dim));
  info_.set_normalize(config.normalize());
  auto add = [](const OrtTensorSpec& spec, adapt::v1::EncoderInfo::Tensor* tensor) {
    tensor->set_name(spec.name);
    tensor->set_element_type(ElementTypeName(spec.element_type));
    for (int64_t d : spec.dims) tensor->add_shape(d < 0 ? -1 : d);
  };
  for (const OrtTensorSpec& spec : model_->inputs()) add(spec, info_.add_input_tensors());
  for (const OrtTensorSpec& spec : model_->outputs()) add(spec, info_.add_output_tensors());
}

absl::Status OnnxEncoder::BindImageInput(const adapt::v1::EncoderConfig& config,
                                         const std::string& field) {
  absl::StatusOr<std::unique_ptr<OnnxImageInput>> image =
      OnnxImageInput::Create(*model_, config, field);
  if (!image.ok()) return image.status();
  image_ = *std::move(image);
  if (image_->fixed_batch() == 1) max_batch_ = 1;
  input_tensor_ = image_->input_tensor();
  output_tensor_ = image_->output_tensor();
  Describe(config, image_->dim());
  return absl::OkStatus();
}

absl::Status OnnxEncoder::BindTextInput(const adapt::v1::EncoderConfig& config,
                                        const std::string& field) {
  absl::StatusOr<std::unique_ptr<OnnxTextInput>> text =
      OnnxTextInput::Create(*model_, config, field);
  if (!text.ok()) return text.status();
  text_ = *std::move(text);
  if (text_->fixed_batch() == 1) max_batch_ = 1;
  output_tensor_ = text_->output_tensor();
  Describe(config, text_->dim());
  info_.set_max_tokens(static_cast<uint32_t>(text_->max_tokens()));
  return absl::OkStatus();
}

absl::Status OnnxEncoder::BindVectorInput(const adapt::v1::EncoderConfig& config) {
  const std::string context = absl::StrCat("ONNX model '", model_->path(), "'");
  absl::StatusOr<const OrtTensorSpec*> input =
      PickTensor(model_->inputs(), config.input_tensor(), "input", context);
  if (!input.ok()) return input.status();
  if (model_->inputs().size() != 1) {
    return absl::FailedPreconditionError(absl::StrCat(context, " has ", model_->inputs().size(),
                                                      " inputs; the vector input takes one"));
  }
  absl::StatusOr<const OrtTensorSpec*> output =
      PickTensor(model_->outputs(), config.output_tensor(), "output", context);
  if (!output.ok()) return output.status();
  absl::StatusOr<int64_t> width = RowWidth(**input, context + " input");
  if (!width.ok()) return width.status();
  absl::StatusOr<int64_t> dim = RowWidth(**output, context + " output");
  if (!dim.ok()) return dim.status();
  const int64_t batch = (*input)->dims[0];
  if (batch == 1) {
    max_batch_ = 1;
  } else if (batch > 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(context, " input tensor '", (*input)->name, "' has a fixed batch of ", batch,
                     "; the onnx encoder runs dynamic batches or a batch of 1"));
  }
  input_tensor_ = (*input)->name;
  output_tensor_ = (*output)->name;
  width_ = *width;
  Describe(config, *dim);
  return absl::OkStatus();
}

absl::Status OnnxEncoder::SetFingerprint(const adapt::v1::EncoderConfig& config) {
  // Threads and batch sizes do not change a key, so they stay out.
  Fnv1a64 hash;
  hash.Add(absl::StrCat("onnx/v1\ninput=", kind_, "\ninput_tensor=", input_tensor_,
                        "\noutput_tensor=", output_tensor_,
                        "\nnormalize=", config.normalize() ? 1 : 0));
  if (text_ != nullptr) {
    if (auto s = text_->AddToFingerprint(&hash); !s.ok()) return s;
  }
  if (image_ != nullptr) image_->AddToFingerprint(&hash);
  hash.Add("\nmodel=");
  if (auto s = HashFile(model_->path(), &hash); !s.ok()) return s;
  // Tensors kept in external-data files beside the model: their names and bytes (nothing is
  // added for a model that keeps its data inside, so its fingerprint is as before).
  absl::StatusOr<std::vector<std::string>> external = OnnxExternalDataFiles(model_->path());
  if (!external.ok()) return external.status();
  const std::filesystem::path folder = std::filesystem::path(model_->path()).parent_path();
  for (const std::string& location : *external) {
    hash.Add(absl::StrCat("\nexternal_data=", location, "\n"));
    if (auto s = HashFile((folder / location).string(), &hash); !s.ok()) return s;
  }
  info_.set_fingerprint(FormatFingerprint("onnx", hash.value()));
  return absl::OkStatus();
}

absl::Status OnnxEncoder::RunRows(const std::vector<float>& packed, int64_t begin, int64_t rows,
                                  std::vector<float>* out) const {
  const std::span<const float> values(packed.data() + begin * width_,
                                      static_cast<size_t>(rows * width_));
  absl::StatusOr<OrtFloatTensor> result =
      model_->Run(input_tensor_, {rows, width_}, values, output_tensor_);
  if (!result.ok()) return result.status();
  const std::vector<int64_t> want = {rows, static_cast<int64_t>(info_.dim())};
  if (result->shape != want) {
    return absl::InternalError(absl::StrCat("ONNX model '", model_->path(), "' output '",
                                            output_tensor_, "' has ", result->values.size(),
                                            " values for ", rows, " rows of ", info_.dim()));
  }
  out->insert(out->end(), result->values.begin(), result->values.end());
  return absl::OkStatus();
}

absl::StatusOr<EncodedBatch> OnnxEncoder::Encode(const std::vector<const adapt::v1::Input*>& inputs,
                                                 int64_t expected_dim, int64_t /*max_dim*/,
                                                 const FieldNamer& field) const {
  if (expected_dim > 0 && expected_dim != info_.dim()) {
    return absl::FailedPreconditionError(absl::StrCat("the store's dimension ", expected_dim,
                                                      " differs from encoder '", info_.name(),
                                                      "' dimension ", info_.dim()));
  }
  EncodedBatch out;
  out.rows = static_cast<int64_t>(inputs.size());
  out.dim = info_.dim();
  absl::Status s = kind_ == "text"    ? EncodeTexts(inputs, field, &out)
                   : kind_ == "image" ? EncodeImages(inputs, field, &out)
                                      : EncodeVectors(inputs, field, &out);
  if (!s.ok()) return s;
  if (info_.normalize()) NormalizeRows(out.keys.data(), out.rows, out.dim);
  if (kind_ != "vector") TrimHeapsNowAndThen();
  return out;
}

absl::Status OnnxEncoder::EncodeTexts(const std::vector<const adapt::v1::Input*>& inputs,
                                      const FieldNamer& field, EncodedBatch* out) const {
  std::vector<std::string_view> texts;
  texts.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const adapt::v1::Input& input = *inputs[i];
    if (input.value_case() != adapt::v1::Input::kText) {
      return absl::InvalidArgumentError(
          absl::StrCat(field(i), ": encoder '", info_.name(), "' takes text"));
    }
    if (absl::Status s = CheckText(input.text(), field(i) + ".text"); !s.ok()) return s;
    texts.push_back(input.text());
  }
  out->keys.assign(texts.size() * static_cast<size_t>(info_.dim()), 0.0f);
  absl::StatusOr<std::vector<int64_t>> truncated =
      text_->Encode(*model_, texts, max_batch_, out->keys.data());
  if (!truncated.ok()) return truncated.status();
  out->truncated = *std::move(truncated);
  const auto cut = static_cast<uint64_t>(out->truncated.size());
  truncated_.fetch_add(cut, std::memory_order_relaxed);
  if (cut > 0 && on_truncated_) on_truncated_(cut);
  return absl::OkStatus();
}

absl::Status OnnxEncoder::EncodeImages(const std::vector<const adapt::v1::Input*>& inputs,
                                       const FieldNamer& field, EncodedBatch* out) const {
  out->keys.assign(inputs.size() * static_cast<size_t>(info_.dim()), 0.0f);
  return image_->Encode(*model_, inputs, field, max_batch_, out->keys.data());
}

absl::Status OnnxEncoder::EncodeVectors(const std::vector<const adapt::v1::Input*>& inputs,
                                        const FieldNamer& field, EncodedBatch* out) const {
  std::vector<float> packed;
  packed.reserve(inputs.size() * static_cast<size_t>(width_));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const adapt::v1::Input& input = *inputs[i];
    if (input.value_case() != adapt::v1::Input::kVector) {
      return absl::InvalidArgumentError(
          absl::StrCat(field(i), ": encoder '", info_.name(), "' takes a vector"));
    }
    const auto& values = input.vector().values();
    if (values.size() != width_) {
      return absl::InvalidArgumentError(
          absl::StrCat(field(i), ".vector: ", values.size(), " values; encoder '", info_.name(),
                       "' takes ", width_, " (the model's input '", input_tensor_, "')"));
    }
    for (int j = 0; j < values.size(); ++j) {
      if (!std::isfinite(values[j])) {
        return absl::InvalidArgumentError(
            absl::StrCat(field(i), ".vector.values[", j, "]: not a finite number"));
      }
    }
    packed.insert(packed.end(), values.begin(), values.end());
  }
  out->keys.reserve(static_cast<size_t>(out->rows * out->dim));
  for (int64_t begin = 0; begin < out->rows; begin += max_batch_) {
    const int64_t rows = std::min(max_batch_, out->rows - begin);
    if (auto s = RunRows(packed, begin, rows, &out->keys); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace adaptd
