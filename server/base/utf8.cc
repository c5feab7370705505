#include "server/base/utf8.h"

#include <cstdint>

namespace adaptd {

bool NextUtf8CodePoint(std::string_view text, size_t* pos, char32_t* cp) {
  const size_t i = *pos;
  const auto c = static_cast<unsigned char>(text[i]);
  if (c < 0x80) {
    *cp = c;
    *pos = i + 1;
    return true;
  }
  size_t extra;
  char32_t min;
  if ((c & 0xe0) == 0xc0) {
    extra = 1, min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    extra = 2, min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    extra = 3, min = 0x10000;
  } else {
    return false;
  }
  if (i + extra >= text.size()) return false;
  char32_t value = c & (0x3f >> extra);
  for (size_t k = 1; k <= extra; ++k) {
    const auto cc = static_cast<unsigned char>(text[i + k]);
    if ((cc & 0xc0) != 0x80) return false;
    value = (value << 6) | (cc & 0x3f);
  }
  if (value < min || value > 0x10ffff || (value >= 0xd800 && value <= 0xdfff)) return false;
  *cp = value;
  *pos = i + extra + 1;
  return true;
}

bool IsValidUtf8(std::string_view text) {
  size_t pos = 0;
  char32_t cp;
  while (pos < text.size()) {
    if (!NextUtf8CodePoint(text, &pos, &cp)) return false;
  }
  return true;
}

}  // namespace adaptd
