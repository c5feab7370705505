#include "server/encoders/unicode.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

namespace adaptd {
namespace {

struct LowerRun {
  char32_t first, last;
  int32_t step, delta;
};

constexpr LowerRun kLowerRuns[] = {
#include "server/encoders/lowercase_table.inc"
};

}  // namespace

bool DecodeUtf8(absl::string_view text, std::u32string* out) {
  size_t i = 0;
  while (i < text.size()) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      out->push_back(c);
      ++i;
      continue;
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
    char32_t cp = c & (0x3f >> extra);
    for (size_t k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(text[i + k]);
      if ((cc & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    out->push_back(cp);
    i += extra + 1;
  }
  return true;
}

char32_t ToLower(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  // The last run that starts at or before c.
  const LowerRun* end = std::end(kLowerRuns);
  const LowerRun* it = std::upper_bound(std::begin(kLowerRuns), end, c,
                                        [](char32_t v, const LowerRun& r) { return v < r.first; });
  if (it == std::begin(kLowerRuns)) return c;
  const LowerRun& run = *std::prev(it);
  if (c > run.last || (c - run.first) % run.step != 0) return c;
  return static_cast<char32_t>(static_cast<int64_t>(c) + run.delta);
}

void AppendUtf8(char32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3f)));
  }
}

bool IsWordChar(char32_t c) {
  if (c < 0x80) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  }
  if ((c >= 0xa0 && c <= 0xbf) || c == 0xd7 || c == 0xf7) return false;
  if ((c >= 0x2000 && c <= 0x206f) || (c >= 0x2e00 && c <= 0x2e7f)) return false;
  if (c >= 0x3000 && c <= 0x303f) return false;
  if ((c >= 0xff01 && c <= 0xff0f) || (c >= 0xff1a && c <= 0xff20) ||
      (c >= 0xff3b && c <= 0xff40) || (c >= 0xff5b && c <= 0xff65) || c == 0xfeff) {
    return false;
  }
  return true;
}

}  // namespace adaptd
