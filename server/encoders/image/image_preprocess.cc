#include "server/encoders/image/image_preprocess.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"

namespace adaptd {
namespace {

// One output coordinate's two input neighbours and the weight of the second.
struct Tap {
  int64_t lo = 0;
  int64_t hi = 0;
  double t = 0;
};

// Taps for output coordinates [first, first + count) of a resize from `in` to `out` pixels.
std::vector<Tap> Taps(int64_t in, int64_t out, int64_t first, int64_t count) {
  std::vector<Tap> taps(static_cast<size_t>(count));
  const double ratio = static_cast<double>(in) / static_cast<double>(out);
  for (int64_t i = 0; i < count; ++i) {
    double source = (static_cast<double>(first + i) + 0.5) * ratio - 0.5;
    source = std::clamp(source, 0.0, static_cast<double>(in - 1));
    Tap& tap = taps[static_cast<size_t>(i)];
    tap.lo = static_cast<int64_t>(std::floor(source));
    tap.hi = std::min(tap.lo + 1, in - 1);
    tap.t = source - static_cast<double>(tap.lo);
  }
  return taps;
}

std::string SizeText(ImageSize size) { return absl::StrCat(size.width, "x", size.height); }

}  // namespace

ImageSize ResizedSize(ImageSize size, const ImagePreprocess& preprocess) {
  switch (preprocess.resize) {
    case ImagePreprocess::Resize::kNone:
      return size;
    case ImagePreprocess::Resize::kExact:
      return preprocess.resize_to;
    case ImagePreprocess::Resize::kShorterSide:
      break;
  }
  const int64_t s = preprocess.shorter_side;
  if (size.width <= size.height) return {s, std::max<int64_t>(1, s * size.height / size.width)};
  return {std::max<int64_t>(1, s * size.width / size.height), s};
}

absl::Status PreprocessImage(const RgbImage& image, const ImagePreprocess& preprocess,
                             ImageSize want, float* out) {
  const ImageSize source{image.width, image.height};
  const ImageSize resized = ResizedSize(source, preprocess);
  ImageSize result = resized;
  if (preprocess.crop.width > 0) {
    if (resized.width < preprocess.crop.width || resized.height < preprocess.crop.height) {
      return absl::InvalidArgumentError(absl::StrCat("the image is ", SizeText(resized),
                                                     " after its resize, smaller than the crop ",
                                                     SizeText(preprocess.crop)));
    }
    result = preprocess.crop;
  }
  if (!(result == want)) {
    return absl::InvalidArgumentError(
        absl::StrCat("the image is ", SizeText(result), " after its preprocessing (from ",
                     SizeText(source), "); the model takes ", SizeText(want)));
  }
  const int64_t left = (resized.width - result.width) / 2;
  const int64_t top = (resized.height - result.height) / 2;
  const std::vector<Tap> xs = Taps(source.width, resized.width, left, result.width);
  const std::vector<Tap> ys = Taps(source.height, resized.height, top, result.height);
  const int64_t plane = result.width * result.height;
  const uint8_t* pixels = image.pixels.data();
  for (int64_t y = 0; y < result.height; ++y) {
    const Tap& ty = ys[static_cast<size_t>(y)];
    const uint8_t* row0 = pixels + ty.lo * source.width * 3;
    const uint8_t* row1 = pixels + ty.hi * source.width * 3;
    for (int64_t x = 0; x < result.width; ++x) {
      const Tap& tx = xs[static_cast<size_t>(x)];
      for (int c = 0; c < 3; ++c) {
        const double top_value = (1 - tx.t) * row0[tx.lo * 3 + c] + tx.t * row0[tx.hi * 3 + c];
        const double bottom = (1 - tx.t) * row1[tx.lo * 3 + c] + tx.t * row1[tx.hi * 3 + c];
        const double value = (1 - ty.t) * top_value + ty.t * bottom;
        const double normalized =
            (value * preprocess.scale - preprocess.mean[c]) / preprocess.std[c];
        const int channel = preprocess.bgr ? 2 - c : c;
        const int64_t at = preprocess.nhwc ? (y * result.width + x) * 3 + channel
                                           : channel * plane + y * result.width + x;
        out[at] = static_cast<float>(normalized);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace adaptd
