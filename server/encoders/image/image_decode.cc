#include "server/encoders/image/image_decode.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "server/encoders/image/image_codecs.h"

namespace adaptd {
namespace {

constexpr std::string_view kPngSignature("\x89PNG\r\n\x1a\n", 8);
constexpr std::string_view kJpegSignature("\xff\xd8\xff", 3);

// An EXIF (TIFF) field reader of either byte order; reads past the end answer 0.
struct TiffReader {
  std::string_view data;
  bool little_endian;

  uint32_t U16(size_t at) const {
    if (at + 2 > data.size()) return 0;
    const auto b0 = static_cast<uint8_t>(data[at]), b1 = static_cast<uint8_t>(data[at + 1]);
    return little_endian ? b0 | (b1 << 8) : (b0 << 8) | b1;
  }
  uint32_t U32(size_t at) const {
    return little_endian ? U16(at) | (U16(at + 2) << 16) : (U16(at) << 16) | U16(at + 2);
  }
};

}  // namespace

absl::Status CheckImageSize(const char* format, uint64_t width, uint64_t height,
                            const ImageLimits& limits) {
  if (width == 0 || height == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(format, ": empty image (", width, "x", height, ")"));
  }
  if (width > limits.max_side || height > limits.max_side) {
    return absl::InvalidArgumentError(absl::StrCat(format, ": ", width, "x", height,
                                                   " has a side over the limit of ",
                                                   limits.max_side, " pixels"));
  }
  if (width * height > limits.max_pixels) {
    return absl::InvalidArgumentError(absl::StrCat(format, ": ", width, "x", height, " is ",
                                                   width * height, " pixels, over the limit of ",
                                                   limits.max_pixels));
  }
  return absl::OkStatus();
}

int ExifOrientation(std::string_view app1) {
  constexpr std::string_view kExif("Exif\0\0", 6);
  if (app1.size() < kExif.size() + 8 || app1.substr(0, kExif.size()) != kExif) return 1;
  const std::string_view tiff = app1.substr(kExif.size());
  TiffReader reader{tiff, tiff.substr(0, 2) == "II"};
  if (!reader.little_endian && tiff.substr(0, 2) != "MM") return 1;
  if (reader.U16(2) != 42) return 1;
  const size_t ifd = reader.U32(4);
  const uint32_t entries = reader.U16(ifd);
  constexpr uint32_t kOrientationTag = 0x0112, kShort = 3;
  for (uint32_t i = 0; i < entries; ++i) {
    const size_t entry = ifd + 2 + 12 * static_cast<size_t>(i);
    if (entry + 12 > tiff.size()) break;
    if (reader.U16(entry) != kOrientationTag) continue;
    if (reader.U16(entry + 2) != kShort || reader.U32(entry + 4) < 1) return 1;
    const uint32_t value = reader.U16(entry + 8);
    return value >= 1 && value <= 8 ? static_cast<int>(value) : 1;
  }
  return 1;
}

RgbImage Orient(const RgbImage& image, int orientation) {
  if (orientation < 2 || orientation > 8) return image;
  // Per orientation: output (x, y) reads the stored (y, x) when transposed, then mirrored.
  struct Turn {
    bool transpose, mirror_x, mirror_y;
  };
  static constexpr Turn kTurns[9] = {{},
                                     {},
                                     {false, true, false},
                                     {false, true, true},
                                     {false, false, true},
                                     {true, false, false},
                                     {true, false, true},
                                     {true, true, true},
                                     {true, true, false}};
  const Turn turn = kTurns[orientation];
  const int64_t w = image.width, h = image.height;
  RgbImage out;
  out.width = turn.transpose ? h : w;
  out.height = turn.transpose ? w : h;
  out.pixels.resize(image.pixels.size());
  for (int64_t y = 0; y < out.height; ++y) {
    for (int64_t x = 0; x < out.width; ++x) {
      int64_t sx = turn.transpose ? y : x, sy = turn.transpose ? x : y;
      if (turn.mirror_x) sx = w - 1 - sx;
      if (turn.mirror_y) sy = h - 1 - sy;
      std::copy_n(&image.pixels[static_cast<size_t>((sy * w + sx) * 3)], 3,
                  &out.pixels[static_cast<size_t>((y * out.width + x) * 3)]);
    }
  }
  return out;
}

absl::StatusOr<RgbImage> DecodeImage(std::string_view bytes, const ImageLimits& limits) {
  if (bytes.size() > limits.max_encoded_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "image of ", bytes.size(), " bytes, over the limit of ", limits.max_encoded_bytes));
  }
  if (bytes.substr(0, kPngSignature.size()) == kPngSignature) return DecodePng(bytes, limits);
  if (bytes.substr(0, kJpegSignature.size()) == kJpegSignature) {
    absl::StatusOr<DecodedJpeg> jpeg = DecodeJpeg(bytes, limits);
    if (!jpeg.ok()) return jpeg.status();
    if (jpeg->orientation == 1) return std::move(jpeg->image);
    return Orient(jpeg->image, jpeg->orientation);
  }
  if (bytes.empty()) return absl::InvalidArgumentError("empty image (no bytes)");
  return absl::InvalidArgumentError(absl::StrCat(
      "not a PNG or JPEG image (it starts with bytes ",
      absl::BytesToHexString(absl::string_view(bytes.data(), std::min<size_t>(bytes.size(), 8))),
      ")"));
}

}  // namespace adaptd
