#include "server/encoders/unicode.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

#include "server/base/utf8.h"

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
  const std::string_view view(text.data(), text.size());
  size_t pos = 0;
  char32_t cp;
  while (pos < view.size()) {
    if (!NextUtf8CodePoint(view, &pos, &cp)) return false;
    out->push_back(cp);
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
