// Preprocessing of a decoded image into one float tensor row, as an image encoder's config
// declares (docs/ONNX.md, "Images"), in this order: resize, centre crop, then per channel
// (value × scale − mean) / std, written in the channel order and layout asked. Pure functions;
// safe to call from many threads.
//
// Resize is bilinear with half-pixel centres and no antialiasing: output pixel x samples the
// input at (x + 0.5) × in / out − 0.5, clamped to [0, in − 1], blending its two neighbours
// (OpenCV's INTER_LINEAR, PyTorch's interpolate(mode="bilinear", align_corners=False,
// antialias=False)); computed in double from the 8-bit values, never rounded back to 8 bits.
// Shrinking by more than 2× therefore skips pixels (aliases): resize near the model's size.
// The centre crop starts at ((w − crop_w) / 2, (h − crop_h) / 2), rounded down.
//
// Layout of the output: NCHW writes 3 planes of height × width; NHWC height × width × 3.
#ifndef ADAPTD_SERVER_ENCODERS_IMAGE_IMAGE_PREPROCESS_H_
#define ADAPTD_SERVER_ENCODERS_IMAGE_IMAGE_PREPROCESS_H_

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "server/encoders/image/image_decode.h"

namespace adaptd {

struct ImageSize {
  int64_t width = 0;
  int64_t height = 0;
  bool operator==(const ImageSize&) const = default;
};

struct ImagePreprocess {
  enum class Resize { kNone, kShorterSide, kExact };
  Resize resize = Resize::kNone;
  int64_t shorter_side = 0;  // kShorterSide: the shorter side's new length, the aspect kept
  ImageSize resize_to;       // kExact
  ImageSize crop;            // {0, 0}: no crop
  bool bgr = false;          // channel order in the output: B, G, R
  bool nhwc = false;         // layout: height × width × 3 (else 3 × height × width)
  float scale = 1.0f / 255.0f;
  std::array<float, 3> mean = {0, 0, 0};  // R, G, B
  std::array<float, 3> std = {1, 1, 1};   // R, G, B
};

// The size of an image of `size` after the resize (the shorter side to S makes the longer one
// floor(S × longer / shorter)), before the crop.
ImageSize ResizedSize(ImageSize size, const ImagePreprocess& preprocess);

// Writes 3 × want.width × want.height floats to `out`. InvalidArgument when the image after
// resize is smaller than the crop, or when the result is not `want` (the model's size).
absl::Status PreprocessImage(const RgbImage& image, const ImagePreprocess& preprocess,
                             ImageSize want, float* out);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_IMAGE_IMAGE_PREPROCESS_H_
