#include "server/encoders/onnx/onnx_image_input.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace adaptd {
namespace {

std::string ShapeText(const std::vector<int64_t>& dims) {
  std::vector<std::string> parts;
  for (int64_t d : dims) parts.push_back(d < 0 ? "?" : absl::StrCat(d));
  return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
}

std::string SizeText(ImageSize size) {
  auto side = [](int64_t n) { return n < 0 ? std::string("?") : absl::StrCat(n); };
  return absl::StrCat(side(size.width), "x", side(size.height));
}

// Checks the three-value per-channel setting `values` (empty: `fallback`).
absl::Status ChannelValues(const google::protobuf::RepeatedField<float>& values, float fallback,
                           bool nonzero, const std::string& field, std::array<float, 3>* out) {
  if (values.empty()) {
    out->fill(fallback);
    return absl::OkStatus();
  }
  if (values.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", values.size(), " values; give 3 (R, G, B) or none"));
  }
  for (int c = 0; c < 3; ++c) {
    if (!std::isfinite(values[c]) || (nonzero && values[c] == 0)) {
      return absl::InvalidArgumentError(absl::StrCat(field, "[", c, "]: ", values[c], " is not a ",
                                                     nonzero ? "non-zero " : "", "finite number"));
    }
    (*out)[c] = values[c];
  }
  return absl::OkStatus();
}

// Where images end: the crop, the exact resize, or the model's fixed size.
absl::StatusOr<ImageSize> FinalSize(ImageSize model_size, const std::string& f,
                                    ImagePreprocess* p) {
  if (p->crop.width > 0) return p->crop;
  if (p->resize == ImagePreprocess::Resize::kExact) return p->resize_to;
  if (p->resize == ImagePreprocess::Resize::kShorterSide) {
    return absl::InvalidArgumentError(absl::StrCat(
        f,
        "resize_shorter: without a crop images end at varying sizes; set crop_width and "
        "crop_height (or resize_width and resize_height instead)"));
  }
  if (model_size.width <= 0 || model_size.height <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(f, "crop_width: the model's height and width are not both fixed (",
                     SizeText(model_size), "); set a crop or resize_width and resize_height"));
  }
  p->resize = ImagePreprocess::Resize::kExact;
  p->resize_to = model_size;
  return model_size;
}

}  // namespace

absl::Status ImageSettingsFromConfig(const adapt::v1::ImageConfig& c, ImageSize model_size,
                                     const std::string& field, ImagePreprocess* p,
                                     ImageLimits* limits, ImageSize* size) {
  const std::string f = field + ".image.";
  auto bad = [&f](const char* setting, const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(f, setting, ": ", why));
  };
  if (!c.resize_filter().empty() && c.resize_filter() != "bilinear") {
    return bad("resize_filter", absl::StrCat("'", c.resize_filter(),
                                             "' is not a filter the encoder has (\"bilinear\")"));
  }
  const bool exact = c.resize_width() > 0 || c.resize_height() > 0;
  if (exact && (c.resize_width() == 0 || c.resize_height() == 0)) {
    return bad("resize_width", "set resize_width and resize_height both, or neither");
  }
  if (exact && c.resize_shorter() > 0) {
    return bad("resize_shorter", "set resize_shorter or resize_width and resize_height, not both");
  }
  if ((c.crop_width() > 0) != (c.crop_height() > 0)) {
    return bad("crop_width", "set crop_width and crop_height both, or neither");
  }
  if (c.channel_order() != "" && c.channel_order() != "rgb" && c.channel_order() != "bgr") {
    return bad("channel_order", absl::StrCat("'", c.channel_order(), "' (\"rgb\" or \"bgr\")"));
  }
  if (c.layout() != "" && c.layout() != "nchw" && c.layout() != "nhwc") {
    return bad("layout", absl::StrCat("'", c.layout(), "' (\"nchw\" or \"nhwc\")"));
  }
  *p = ImagePreprocess();
  if (exact) {
    p->resize = ImagePreprocess::Resize::kExact;
    p->resize_to = {c.resize_width(), c.resize_height()};
  } else if (c.resize_shorter() > 0) {
    p->resize = ImagePreprocess::Resize::kShorterSide;
    p->shorter_side = c.resize_shorter();
  }
  p->crop = {c.crop_width(), c.crop_height()};
  p->bgr = c.channel_order() == "bgr";
  p->nhwc = c.layout() == "nhwc";
  if (c.has_scale()) {
    if (!std::isfinite(c.scale())) return bad("scale", "not a finite number");
    p->scale = c.scale();
  }
  if (auto s = ChannelValues(c.mean(), 0, false, f + "mean", &p->mean); !s.ok()) return s;
  if (auto s = ChannelValues(c.std(), 1, true, f + "std", &p->std); !s.ok()) return s;
  *limits = ImageLimits();
  if (c.max_encoded_bytes() > 0) limits->max_encoded_bytes = c.max_encoded_bytes();
  if (c.max_side() > 0) limits->max_side = c.max_side();
  if (c.max_pixels() > 0) limits->max_pixels = c.max_pixels();
  absl::StatusOr<ImageSize> final_size = FinalSize(model_size, f, p);
  if (!final_size.ok()) return final_size.status();
  const bool fits = (model_size.width <= 0 || model_size.width == final_size->width) &&
                    (model_size.height <= 0 || model_size.height == final_size->height);
  if (!fits) {
    return absl::InvalidArgumentError(
        absl::StrCat(f.substr(0, f.size() - 1), ": images end at ", SizeText(*final_size),
                     " (width x height); the model takes ", SizeText(model_size)));
  }
  *size = *final_size;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<OnnxImageInput>> OnnxImageInput::Create(
    const OrtModel& model, const adapt::v1::EncoderConfig& config, const std::string& field) {
  const std::string context = absl::StrCat("ONNX model '", model.path(), "'");
  if (model.inputs().size() != 1) {
    return absl::FailedPreconditionError(absl::StrCat(context, " has ", model.inputs().size(),
                                                      " inputs; the image input takes one"));
  }
  const OrtTensorSpec& in = model.inputs()[0];
  if (!config.input_tensor().empty() && config.input_tensor() != in.name) {
    return absl::FailedPreconditionError(absl::StrCat(
        context, " has no input tensor '", config.input_tensor(), "' (inputs: ", in.name, ")"));
  }
  const bool nhwc = config.image().layout() == "nhwc";
  const size_t channels = nhwc ? 3 : 1, rows = nhwc ? 1 : 2, columns = nhwc ? 2 : 3;
  if (in.element_type != ort::kElementFloat || in.dims.size() != 4 || in.dims[channels] != 3) {
    return absl::FailedPreconditionError(absl::StrCat(
        context, " input tensor '", in.name, "' is element type ", in.element_type, " of shape ",
        ShapeText(in.dims), "; the image input (layout ", nhwc ? "nhwc" : "nchw",
        ") needs float32 ", nhwc ? "[batch, height, width, 3]" : "[batch, 3, height, width]"));
  }
  auto input = std::unique_ptr<OnnxImageInput>(new OnnxImageInput());
  const ImageSize model_size{in.dims[columns], in.dims[rows]};
  if (auto s = ImageSettingsFromConfig(config.image(), model_size, field, &input->preprocess_,
                                       &input->limits_, &input->size_);
      !s.ok()) {
    return s;
  }
  const OrtTensorSpec* out = nullptr;
  for (const OrtTensorSpec& spec : model.outputs()) {
    if (spec.name == config.output_tensor() ||
        (config.output_tensor().empty() && model.outputs().size() == 1)) {
      out = &spec;
    }
  }
  if (out == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        context, config.output_tensor().empty()
                     ? " has several outputs; name one with output_tensor"
                     : absl::StrCat(" has no output tensor '", config.output_tensor(), "'")));
  }
  if (out->element_type != ort::kElementFloat || out->dims.size() != 2 || out->dims[1] <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(context, " output tensor '", out->name, "' is element type ",
                     out->element_type, " of shape ", ShapeText(out->dims),
                     "; the image input needs float32 [batch, dim] with dim fixed"));
  }
  if (in.dims[0] > 1) {
    return absl::FailedPreconditionError(
        absl::StrCat(context, " input tensor '", in.name, "' has a fixed batch of ", in.dims[0],
                     "; the onnx encoder runs dynamic batches or a batch of 1"));
  }
  input->fixed_batch_ = in.dims[0] == 1 ? 1 : 0;
  input->name_ = config.name();
  input->input_ = in.name;
  input->output_ = out->name;
  input->dim_ = out->dims[1];
  return input;
}

void OnnxImageInput::AddToFingerprint(Fnv1a64* hash) const {
  const ImagePreprocess& p = preprocess_;
  const ImageSize resized = p.resize == ImagePreprocess::Resize::kExact ? p.resize_to : ImageSize{};
  // Floats by their bits, so the text is exact.
  auto bits = [](float v) {
    uint32_t b;
    std::memcpy(&b, &v, sizeof(b));
    return absl::StrCat(b);
  };
  hash->Add(absl::StrCat("\nimage=bilinear-half-pixel;shorter=", p.shorter_side,
                         ";resize=", SizeText(resized), ";crop=", SizeText(p.crop),
                         ";size=", SizeText(size_), ";order=", p.bgr ? "bgr" : "rgb",
                         ";layout=", p.nhwc ? "nhwc" : "nchw", ";scale=", bits(p.scale)));
  for (int c = 0; c < 3; ++c) hash->Add(absl::StrCat(";mean=", bits(p.mean[c])));
  for (int c = 0; c < 3; ++c) hash->Add(absl::StrCat(";std=", bits(p.std[c])));
}

absl::Status OnnxImageInput::Encode(const OrtModel& model,
                                    const std::vector<const adapt::v1::Input*>& inputs,
                                    const FieldNamer& field, int64_t max_batch, float* out) const {
  const int64_t row = 3 * size_.width * size_.height;
  const int64_t n = static_cast<int64_t>(inputs.size());
  std::vector<float> tensor;
  for (int64_t begin = 0; begin < n; begin += max_batch) {
    const int64_t rows = std::min(max_batch, n - begin);
    tensor.assign(static_cast<size_t>(rows * row), 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      const size_t i = static_cast<size_t>(begin + r);
      const adapt::v1::Input& input = *inputs[i];
      if (input.value_case() != adapt::v1::Input::kImage) {
        return absl::InvalidArgumentError(absl::StrCat(field(i), ": encoder '", name_,
                                                       "' takes an image (PNG or JPEG bytes), got ",
                                                       InputKindName(input)));
      }
      absl::StatusOr<RgbImage> image = DecodeImage(input.image(), limits_);
      absl::Status s = image.ok()
                           ? PreprocessImage(*image, preprocess_, size_, tensor.data() + r * row)
                           : image.status();
      if (!s.ok())
        return absl::InvalidArgumentError(absl::StrCat(field(i), ".image: ", s.message()));
    }
    if (auto s = Run(model, tensor, rows, out + begin * dim_); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status OnnxImageInput::WarmUp(const OrtModel& model, int64_t rows) const {
  const std::vector<float> zeros(static_cast<size_t>(rows * 3 * size_.width * size_.height), 0.0f);
  std::vector<float> out(static_cast<size_t>(rows * dim_));
  return Run(model, zeros, rows, out.data());
}

absl::Status OnnxImageInput::Run(const OrtModel& model, const std::vector<float>& tensor,
                                 int64_t rows, float* out) const {
  const std::vector<int64_t> shape = preprocess_.nhwc
                                         ? std::vector<int64_t>{rows, size_.height, size_.width, 3}
                                         : std::vector<int64_t>{rows, 3, size_.height, size_.width};
  absl::StatusOr<OrtFloatTensor> result = model.Run(input_, shape, tensor, output_);
  if (!result.ok()) return result.status();
  if (result->shape != std::vector<int64_t>{rows, dim_}) {
    return absl::InternalError(absl::StrCat("ONNX model '", model.path(), "' output '", output_,
                                            "' has shape ", ShapeText(result->shape), " for ", rows,
                                            " images; expected ", ShapeText({rows, dim_})));
  }
  std::copy(result->values.begin(), result->values.end(), out);
  return absl::OkStatus();
}

}  // namespace adaptd
