// The PNG and JPEG decoders behind DecodeImage (image_decode.h), each in its own file; not
// for use outside server/encoders/image. Both refuse an image over the limits from its header,
// before decoding a pixel. The JPEG decoder returns the stored pixels and the EXIF orientation
// (1-8) of its APP1 segment; DecodeImage applies it.
#ifndef ADAPTD_SERVER_ENCODERS_IMAGE_IMAGE_CODECS_H_
#define ADAPTD_SERVER_ENCODERS_IMAGE_IMAGE_CODECS_H_

#include <cstdint>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/encoders/image/image_decode.h"

namespace adaptd {

// InvalidArgument when a width × height image is over the limits.
absl::Status CheckImageSize(const char* format, uint64_t width, uint64_t height,
                            const ImageLimits& limits);

absl::StatusOr<RgbImage> DecodePng(std::string_view bytes, const ImageLimits& limits);

struct DecodedJpeg {
  RgbImage image;
  int orientation = 1;
};
absl::StatusOr<DecodedJpeg> DecodeJpeg(std::string_view bytes, const ImageLimits& limits);

}  // namespace adaptd

#endif  // ADAPTD_SERVER_ENCODERS_IMAGE_IMAGE_CODECS_H_
