// JPEG through libjpeg-turbo (image_codecs.h). libjpeg reports errors by calling error_exit,
// which must not return: it longjmps back here with the message copied into a plain buffer.
// Warnings (corrupt or truncated data, which libjpeg would otherwise pad with grey) are
// refusals too.
// clang-format off
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>  // after the two above: it uses size_t and FILE without including them
// clang-format on

#include <csetjmp>

#include "absl/strings/str_cat.h"
#include "server/encoders/image/image_codecs.h"

namespace adaptd {
namespace {

struct JpegErrors {
  jpeg_error_mgr manager;  // first, so libjpeg's pointer to it is a pointer to this
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

void OnJpegError(j_common_ptr cinfo) {
  auto* errors = reinterpret_cast<JpegErrors*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, errors->message);
  longjmp(errors->jump, 1);
}

void OnJpegMessage(j_common_ptr cinfo, int level) {
  if (level < 0) OnJpegError(cinfo);  // a warning: the data is corrupt or ends early
}

// The EXIF orientation among the saved APP1 markers, 1 when there is none.
int MarkerOrientation(j_decompress_ptr cinfo) {
  for (jpeg_saved_marker_ptr m = cinfo->marker_list; m != nullptr; m = m->next) {
    if (m->marker != JPEG_APP0 + 1) continue;
    const int orientation =
        ExifOrientation(std::string_view(reinterpret_cast<const char*>(m->data), m->data_length));
    if (orientation != 1) return orientation;
  }
  return 1;
}

}  // namespace

absl::StatusOr<DecodedJpeg> DecodeJpeg(std::string_view bytes, const ImageLimits& limits) {
  jpeg_decompress_struct cinfo;
  JpegErrors errors;
  cinfo.err = jpeg_std_error(&errors.manager);
  errors.manager.error_exit = OnJpegError;
  errors.manager.emit_message = OnJpegMessage;
  DecodedJpeg out;
  absl::Status refused;
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return absl::InvalidArgumentError(absl::StrCat("JPEG: ", errors.message));
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, reinterpret_cast<const unsigned char*>(bytes.data()),
               static_cast<unsigned long>(bytes.size()));
  jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(&cinfo, TRUE);
  refused = CheckImageSize("JPEG", cinfo.image_width, cinfo.image_height, limits);
  if (refused.ok() && (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK)) {
    refused = absl::InvalidArgumentError("JPEG: CMYK images are not supported (RGB or grayscale)");
  }
  if (refused.ok()) {
    out.orientation = MarkerOrientation(&cinfo);
    cinfo.out_color_space = JCS_RGB;
    jpeg_start_decompress(&cinfo);
    RgbImage& image = out.image;
    image.width = cinfo.output_width;
    image.height = cinfo.output_height;
    image.pixels.resize(static_cast<size_t>(image.width * image.height * 3));
    while (cinfo.output_scanline < cinfo.output_height) {
      JSAMPROW row =
          image.pixels.data() + static_cast<size_t>(cinfo.output_scanline) * image.width * 3;
      jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
  }
  jpeg_destroy_decompress(&cinfo);
  if (!refused.ok()) return refused;
  return out;
}

}  // namespace adaptd
