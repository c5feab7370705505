// Fuzzes the image decoder (server/encoders/image/image_decode.h) on the bytes of a request's
// image, and the preprocessing of every image it decodes. Besides crashing, it checks the
// decoder's promises: a decoded image is inside the limits and holds width × height × 3 bytes;
// turning it by EXIF orientation 6 and back by 8 gives it back. Each decoded image then goes
// through the preprocessing of a few encoder configs: it is refused exactly when the image
// after its resize is smaller than the crop, and otherwise every value written lies between
// those of the darkest and the brightest 8-bit pixel (bilinear blends never leave that range).
// A PNG is decoded twice: as it is, and with its chunks' CRCs recomputed (WithPngCrcs).
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/encoders/image/image_decode.h"
#include "server/encoders/image/image_preprocess.h"

namespace {

void Fail(const char* what) {
  std::fprintf(stderr, "image_fuzzer: %s\n", what);
  std::abort();
}

// Lower than the server's defaults so that each input decodes quickly; the checks against the
// limits are the same code whatever they are.
adaptd::ImageLimits FuzzLimits() {
  adaptd::ImageLimits limits;
  limits.max_side = 2048;
  limits.max_pixels = 1u << 20;
  return limits;
}

// The model takes the size after the crop, or after the resize when there is no crop.
struct Config {
  adaptd::ImagePreprocess preprocess;
};

std::vector<Config> Configs() {
  using Resize = adaptd::ImagePreprocess::Resize;
  std::vector<Config> configs(5);
  // A CLIP-like encoder: the shorter side to 8, then an 8 × 8 centre crop.
  configs[0].preprocess.resize = Resize::kShorterSide;
  configs[0].preprocess.shorter_side = 8;
  configs[0].preprocess.crop = {8, 8};
  configs[0].preprocess.mean = {0.48f, 0.46f, 0.41f};
  configs[0].preprocess.std = {0.27f, 0.26f, 0.28f};
  // An exact resize (up or down), BGR, NHWC, 0-255 values.
  configs[1].preprocess.resize = Resize::kExact;
  configs[1].preprocess.resize_to = {5, 3};
  configs[1].preprocess.bgr = true;
  configs[1].preprocess.nhwc = true;
  configs[1].preprocess.scale = 1.0f;
  // No resize, a crop: refused for images under 4 × 4.
  configs[2].preprocess.crop = {4, 4};
  // The shorter side to 3, no crop: the model takes the resized size.
  configs[3].preprocess.resize = Resize::kShorterSide;
  configs[3].preprocess.shorter_side = 3;
  // An exact upscale to an odd size, then a crop of its centre.
  configs[4].preprocess.resize = Resize::kExact;
  configs[4].preprocess.resize_to = {37, 29};
  configs[4].preprocess.crop = {31, 7};
  configs[4].preprocess.mean = {0.5f, 0.5f, 0.5f};
  configs[4].preprocess.std = {0.5f, 0.5f, 0.5f};
  return configs;
}

void CheckPreprocess(const adaptd::RgbImage& image, const Config& config) {
  const adaptd::ImagePreprocess& p = config.preprocess;
  const adaptd::ImageSize resized = adaptd::ResizedSize({image.width, image.height}, p);
  const bool crops = p.crop.width > 0;
  const bool fits = !crops || (resized.width >= p.crop.width && resized.height >= p.crop.height);
  const adaptd::ImageSize want = crops ? p.crop : resized;
  if (want.width <= 0 || want.height <= 0) Fail("an empty size after the resize");
  std::vector<float> out(static_cast<size_t>(3 * want.width * want.height), NAN);
  const absl::Status status = adaptd::PreprocessImage(image, p, want, out.data());
  if (status.ok() != fits) Fail(fits ? "refused an image the crop fits" : "took a crop too big");
  if (!status.ok()) return;
  for (int c = 0; c < 3; ++c) {
    const double a = (0 * p.scale - p.mean[c]) / p.std[c];
    const double b = (255 * p.scale - p.mean[c]) / p.std[c];
    const double lo = std::min(a, b) - 1e-3, hi = std::max(a, b) + 1e-3;
    const int channel = p.bgr ? 2 - c : c;
    for (int64_t i = 0; i < want.width * want.height; ++i) {
      const float v = out[static_cast<size_t>(p.nhwc ? i * 3 + channel
                                                     : channel * want.width * want.height + i)];
      if (!(v >= lo && v <= hi)) Fail("a value outside the range of its channel (or unwritten)");
    }
  }
}

void DecodeAndCheck(std::string_view bytes) {
  static const adaptd::ImageLimits limits = FuzzLimits();
  static const std::vector<Config> configs = Configs();
  absl::StatusOr<adaptd::RgbImage> image = adaptd::DecodeImage(bytes, limits);
  if (!image.ok()) {
    if (image.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("refused with a code other than INVALID_ARGUMENT");
    }
    return;
  }
  const auto width = static_cast<uint64_t>(image->width);
  const auto height = static_cast<uint64_t>(image->height);
  if (image->width <= 0 || image->height <= 0 || width > limits.max_side ||
      height > limits.max_side || width * height > limits.max_pixels) {
    Fail("decoded an image outside the limits");
  }
  if (image->pixels.size() != width * height * 3) Fail("pixels are not width x height x 3");
  const adaptd::RgbImage turned = adaptd::Orient(*image, 6);
  if (turned.width != image->height || turned.height != image->width) Fail("orientation 6 size");
  const adaptd::RgbImage back = adaptd::Orient(turned, 8);
  if (back.width != image->width || back.height != image->height || back.pixels != image->pixels) {
    Fail("orientation 8 does not undo orientation 6");
  }
  for (const Config& config : configs) CheckPreprocess(*image, config);
}

constexpr std::string_view kPngSignature("\x89PNG\r\n\x1a\n", 8);

// libpng refuses a chunk whose CRC does not hold, so most mutations of a PNG would stop at the
// first chunk they touch: the same bytes with every chunk's CRC recomputed reach the chunk
// parsers and the image data.
std::string WithPngCrcs(std::string_view bytes) {
  std::string out(bytes);
  auto* u = reinterpret_cast<unsigned char*>(out.data());
  size_t at = kPngSignature.size();
  while (at + 12 <= out.size()) {
    const uint32_t length = (uint32_t{u[at]} << 24) | (uint32_t{u[at + 1]} << 16) |
                            (uint32_t{u[at + 2]} << 8) | u[at + 3];
    if (length > out.size() - at - 12) break;
    const auto crc = static_cast<uint32_t>(crc32(0, u + at + 4, length + 4));
    for (int i = 0; i < 4; ++i)
      u[at + 8 + length + i] = static_cast<unsigned char>(crc >> (24 - 8 * i));
    at += 12 + size_t{length};
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  DecodeAndCheck(bytes);
  if (bytes.substr(0, kPngSignature.size()) == kPngSignature) {
    const std::string fixed = WithPngCrcs(bytes);
    if (fixed != bytes) DecodeAndCheck(fixed);
  }
  return 0;
}
