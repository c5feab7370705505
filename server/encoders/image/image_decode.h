// Decoding of encoded images (PNG through libpng, JPEG through libjpeg-turbo) into 8-bit RGB,
// for encoders that take images (docs/ONNX.md, "Images"). The header's width and height are
// checked against the limits before any pixel is decoded, so a small file declaring a huge
// image (a decompression bomb) is refused without allocating it. Free functions; safe to call
// from many threads.
//
// Layout: RgbImage.pixels is height × width × 3 bytes, row-major, R, G, B per pixel.
#ifndef ADAPTD_SERVER_ENCODERS_IMAGE_IMAGE_DECODE_H_
#define ADAPTD_SERVER_ENCODERS_IMAGE_IMAGE_DECODE_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace adaptd {

struct RgbImage {
  int64_t width = 0;
  int64_t height = 0;
  std::vector<uint8_t> pixels;  // height × width × 3
};

struct ImageLimits {
  uint64_t max_encoded_bytes = 16u << 20;
  uint32_t max_side = 8192;        // width and height each
  uint64_t max_pixels = 1u << 25;  // width × height
};

// Decodes a PNG or a JPEG (told apart by their signatures) to 8-bit RGB: grayscale expanded to
// three equal channels, a palette expanded, alpha dropped (not composited), 16-bit samples
// reduced to their high byte (v >> 8, as Pillow reads 16-bit RGB), a JPEG's EXIF orientation
// applied. Every failure is InvalidArgument naming the reason: over a limit, not PNG or JPEG,
// truncated or corrupt data (libjpeg's warnings count as errors), a CMYK JPEG.
absl::StatusOr<RgbImage> DecodeImage(std::string_view bytes, const ImageLimits& limits);

// The orientation (1-8) of an APP1 Exif segment's payload (starting at "Exif\0\0"), 1 when it
// has none or the segment is not Exif; exposed for tests.
int ExifOrientation(std::string_view app1);

// The image as it is meant to be seen under EXIF orientation 1-8 (2 mirrors, 3 rotates 180,
// 4 flips, 5 transposes, 6 rotates 90 clockwise, 7 transverses, 8 rotates 90 anticlockwise).
RgbImage Orient(const RgbImage& image, int orientation);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_IMAGE_IMAGE_DECODE_H_
