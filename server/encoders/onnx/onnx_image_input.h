// OnnxImageInput: the onnx encoder's image input (docs/ONNX.md, "Images"). Each input's
// encoded PNG or JPEG is decoded (server/encoders/image: limits from the config's
// ImageConfig, checked on the header before decoding) and preprocessed as the config declares
// into one row of the model's float input, [batch, 3, height, width] (NCHW) or
// [batch, height, width, 3] (NHWC); each row of the float output [batch, dim] is a key.
//
// The size every image ends at is fixed at start: the crop when set, else the exact resize,
// else the model's fixed height and width (the image resized to them); a model whose fixed size
// differs from the config's is refused, naming both. Images are decoded one run (at most
// max_batch images) at a time, so memory follows the run, not the request. Immutable after
// Create; Encode is const and safe to call from many threads.
#ifndef ADAPTD_SERVER_ENCODERS_ONNX_ONNX_IMAGE_INPUT_H_
#define ADAPTD_SERVER_ENCODERS_ONNX_ONNX_IMAGE_INPUT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "adapt/v1/config.pb.h"
#include "server/base/stable_hash.h"
#include "server/encoders/encoder.h"
#include "server/encoders/image/image_decode.h"
#include "server/encoders/image/image_preprocess.h"
#include "server/encoders/onnx/ort_session.h"

namespace adaptd {

// The preprocessing and limits `image` declares; InvalidArgument naming `field`.image.<setting>
// for a bad one. `model_size` is the model's fixed size ({0, 0} when dynamic); `*size` gets
// the size every image ends at.
absl::Status ImageSettingsFromConfig(const adapt::v1::ImageConfig& image, ImageSize model_size,
                                     const std::string& field, ImagePreprocess* preprocess,
                                     ImageLimits* limits, ImageSize* size);

class OnnxImageInput {
 public:
  // Binds `model`'s one input (float32, rank 4 in the config's layout, 3 channels) and its
  // output (float32 [batch, dim], dim fixed). A model that does not fit is FailedPrecondition
  // naming the file and tensor; a bad setting InvalidArgument naming `field`.image.<setting>.
  static absl::StatusOr<std::unique_ptr<OnnxImageInput>> Create(
      const OrtModel& model, const adapt::v1::EncoderConfig& config, const std::string& field);

  int64_t dim() const { return dim_; }
  // 1 when the model's batch dimension is fixed at 1, else 0 (any).
  int64_t fixed_batch() const { return fixed_batch_; }
  const std::string& input_tensor() const { return input_; }
  const std::string& output_tensor() const { return output_; }
  // The settings that change a key: the preprocessing (never the limits).
  void AddToFingerprint(Fnv1a64* hash) const;

  // Encodes the images of `inputs` into `out` (inputs.size() × dim(), row-major, in order), at
  // most `max_batch` per run. An input that is not an image, or one that does not decode or
  // preprocess, is InvalidArgument naming `field(i)` and the reason.
  absl::Status Encode(const OrtModel& model, const std::vector<const adapt::v1::Input*>& inputs,
                      const FieldNamer& field, int64_t max_batch, float* out) const;
  // One run of `rows` all-zero images (the encoder's warm-up).
  absl::Status WarmUp(const OrtModel& model, int64_t rows) const;

 private:
  OnnxImageInput() = default;

  absl::Status Run(const OrtModel& model, const std::vector<float>& tensor, int64_t rows,
                   float* out) const;

  std::string name_;  // the encoder's
  std::string input_;
  std::string output_;
  ImagePreprocess preprocess_;
  ImageLimits limits_;
  ImageSize size_;
  int64_t dim_ = 0;
  int64_t fixed_batch_ = 0;
};

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_ONNX_ONNX_IMAGE_INPUT_H_
