// PNG through libpng's sequential reader with its transforms (image_codecs.h). libpng
// reports errors by longjmp: nothing with a destructor is created between the setjmp and the
// end of decoding, and the error text is copied into a plain buffer first.
#include <png.h>

#include <csetjmp>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "server/encoders/image/image_codecs.h"

namespace adaptd {
namespace {

struct PngSource {
  const unsigned char* data;
  size_t size;
  size_t offset;
  char error[200];
};

void ReadPngBytes(png_structp png, png_bytep out, size_t n) {
  auto* source = static_cast<PngSource*>(png_get_io_ptr(png));
  if (source->size - source->offset < n) png_error(png, "truncated (the data ends early)");
  std::memcpy(out, source->data + source->offset, n);
  source->offset += n;
}

void OnPngError(png_structp png, png_const_charp message) {
  auto* source = static_cast<PngSource*>(png_get_error_ptr(png));
  std::strncpy(source->error, message, sizeof(source->error) - 1);
  png_longjmp(png, 1);
}

void OnPngWarning(png_structp, png_const_charp) {}

// Transforms every PNG colour type and depth into 8-bit RGB without alpha.
void RequestRgb8(png_structp png, png_infop info) {
  const int color_type = png_get_color_type(png, info);
  const int bit_depth = png_get_bit_depth(png, info);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (bit_depth == 16) png_set_strip_16(png);
  // A palette's transparency (its tRNS chunk) becomes an alpha channel when the palette is
  // expanded: dropped as any alpha is. Stripping is a no-op on rows that have no alpha.
  if ((color_type & PNG_COLOR_MASK_ALPHA) != 0 || png_get_valid(png, info, PNG_INFO_tRNS) != 0) {
    png_set_strip_alpha(png);
  }
  if ((color_type & PNG_COLOR_MASK_COLOR) == 0) png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
}

}  // namespace

absl::StatusOr<RgbImage> DecodePng(std::string_view bytes, const ImageLimits& limits) {
  PngSource source{reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), 0, {}};
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &source, OnPngError, OnPngWarning);
  if (png == nullptr) return absl::ResourceExhaustedError("PNG: libpng could not start");
  png_infop info = png_create_info_struct(png);
  RgbImage image;
  std::vector<png_bytep> rows;
  absl::Status refused;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return absl::InvalidArgumentError(absl::StrCat("PNG: ", source.error));
  }
  if (info == nullptr) png_error(png, "out of memory");
  png_set_read_fn(png, &source, ReadPngBytes);
  png_set_user_limits(png, PNG_UINT_31_MAX, PNG_UINT_31_MAX);
  png_read_info(png, info);
  const uint64_t width = png_get_image_width(png, info), height = png_get_image_height(png, info);
  refused = CheckImageSize("PNG", width, height, limits);
  if (refused.ok()) {
    RequestRgb8(png, info);
    if (png_get_rowbytes(png, info) != width * 3) png_error(png, "unexpected row size");
    image.width = static_cast<int64_t>(width);
    image.height = static_cast<int64_t>(height);
    image.pixels.resize(width * height * 3);
    rows.resize(height);
    for (uint64_t y = 0; y < height; ++y) rows[y] = image.pixels.data() + y * width * 3;
    png_read_image(png, rows.data());
    png_read_end(png, nullptr);
  }
  png_destroy_read_struct(&png, &info, nullptr);
  if (!refused.ok()) return refused;
  return image;
}

}  // namespace adaptd
